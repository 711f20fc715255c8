"""What the model sees, end to end with the real plugins: skills disclosure
(user, workspace, plugin, session skills), skill activation, pre_turn context
from plugin hook scripts in Python and JavaScript, rich tool results from a
real MCP server, and `kairox context`."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kairox
from kairox import ImageContent
from kairox.ext import SkillDef, SkillError

KAIROX = str(Path(sys.executable).parent / "kairox")


def _skill(path: Path, name: str, description: str, body: str, **extra: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["---", f"name: {name}", f"description: {description}"]
    for key, value in extra.items():
        lines.append(f"{key}: {json.dumps(value)}")
    path.write_text("\n".join([*lines, "---", body, ""]))


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A user home and a workspace with skills in every scope and a user plugin."""
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    _skill(home / "skills" / "review.md", "review", "User-level review checklist", "user review body")
    _skill(home / "skills" / "standup.md", "standup", "Write a standup note from git log", "standup body")
    _skill(
        ws / ".kairox" / "skills" / "review.md",
        "review",
        "Review a pull request in this repository",
        "Review {{ pr }} carefully.",
        keywords=["pull request", "review"],
        tools=["fs.read"],
        model="big-model",
        arguments={"pr": {"type": "string", "required": True}},
    )
    plugin = home / "plugins" / "docs-helper"
    (plugin / ".kairox-plugin").mkdir(parents=True)
    (plugin / ".kairox-plugin" / "plugin.json").write_text(
        json.dumps(
            {
                "name": "docs-helper",
                "version": "1.0.0",
                "description": "grounds answers in the docs",
                "skills": "./skills",
                "hooks": [
                    {"event": "pre_turn", "script": "./hooks/context.py"},
                    {"event": "pre_turn", "script": "./hooks/context.js"},
                ],
            }
        )
    )
    (plugin / "skills" / "cite").mkdir(parents=True)
    (plugin / "skills" / "cite" / "SKILL.md").write_text(
        "---\nname: cite\ndescription: Cite the documentation page an answer comes from\n---\nCite docs.\n"
    )
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "context.py").write_text(
        "import json, sys\n"
        "payload = json.load(sys.stdin)\n"
        'print(json.dumps({"context": "python hook saw: " + payload["prompt"]}))\n'
    )
    (plugin / "hooks" / "context.js").write_text(
        "let data = '';\n"
        "process.stdin.on('data', c => data += c);\n"
        "process.stdin.on('end', () => {\n"
        "  const p = JSON.parse(data);\n"
        "  console.log(JSON.stringify({context: 'node hook saw: ' + p.prompt}));\n"
        "});\n"
    )
    (ws / "kairox.toml").write_text("")
    return home, ws


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "KAIROX_HOME": str(home)}


@pytest.mark.anyio
async def test_disclosure_covers_every_scope_with_shadowing_and_namespaces(world: tuple[Path, Path]) -> None:
    home, ws = world
    async with kairox.Runtime.open(ws, home=home, env=_env(home)) as rt, rt.session() as session:
        session.add_skill(SkillDef.create("standup", "Session standup for today", "session standup body"))
        tc = await session.turn_context("please review pull request 42")
        by_name = {s.name: s for s in tc.skills}
        assert set(by_name) == {"review", "standup", "docs-helper:cite"}
        assert by_name["review"].scope == "workspace"  # workspace shadows user
        assert by_name["review"].location == str(ws / ".kairox" / "skills" / "review.md")
        assert by_name["standup"].scope == "session"  # session shadows user
        assert by_name["docs-helper:cite"].location.endswith("skills/cite/SKILL.md")
        xml = tc.available_skills_xml()
        assert "<name>docs-helper:cite</name>" in xml
        assert "<description>Review a pull request in this repository</description>" in xml
        assert tc.matched_skills and tc.matched_skills[0].name == "review"
        assert "pull request" in tc.matched_skills[0].why
    async with kairox.Runtime.open(ws, home=home, env=_env(home)) as rt, rt.session() as session:
        tc = await session.turn_context("x")
        assert {s.name: s.scope for s in tc.skills}["standup"] == "user"  # the session skill ended with it


@pytest.mark.anyio
async def test_activate_skill_renders_checks_tools_and_pins_the_model(world: tuple[Path, Path]) -> None:
    home, ws = world
    async with kairox.Runtime.open(ws, home=home, env=_env(home)) as rt, rt.session() as session:
        events: list[kairox.Event] = []
        rt.events.subscribe(events.append, kairox.SkillActivated)
        rendered = await session.activate_skill("review", {"pr": "#42"})
        assert rendered.text.strip() == "Review #42 carefully."
        assert rendered.model == "big-model"
        assert session.activated == [rendered]
        assert [(e.skill, e.model) for e in events] == [("review", "big-model")]  # type: ignore[attr-defined]
        with pytest.raises(SkillError, match="pr"):
            await session.activate_skill("review", {})
        session.add_skill(SkillDef.create("deploy", "Deploy", "go", tools=("deploy.run", "fs.read")))
        with pytest.raises(SkillError, match=r"deploy\.run"):
            await session.activate_skill("deploy")


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("node") is None, reason="node is needed for the JavaScript hook")
async def test_pre_turn_context_from_plugin_hook_scripts(world: tuple[Path, Path]) -> None:
    home, ws = world
    async with kairox.Runtime.open(ws, home=home, env=_env(home)) as rt, rt.session() as session:
        tc = await session.turn_context("what changed?")
    texts = {p.text: p for p in tc.injected}
    assert "python hook saw: what changed?" in texts
    assert "node hook saw: what changed?" in texts
    assert texts["python hook saw: what changed?"].source == "plugin:docs-helper"
    assert not tc.problems


def test_kairox_context_cli_prints_what_the_model_gets(world: tuple[Path, Path]) -> None:
    home, ws = world
    proc = subprocess.run(
        [KAIROX, "-w", str(ws), "context", "review pull request 7", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(home),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["prompt"] == "review pull request 7"
    assert {s["name"] for s in data["skills"]} >= {"review", "docs-helper:cite"}
    assert data["matched_skills"][0]["name"] == "review"
    assert any(t["name"] == "fs_read" for t in data["tools"])
    assert "<available_skills>" in data["rendered"]
    if shutil.which("node"):
        assert any(p["text"] == "node hook saw: review pull request 7" for p in data["injected"])


@pytest.mark.anyio
async def test_an_image_from_server_everything_arrives_as_an_image(tmp_path: Path) -> None:
    from peers import everything_server_js

    js = everything_server_js()
    home = tmp_path / "home"
    home.mkdir()
    doc = {"mcp_servers": {"everything": {"command": "node", "args": [str(js), "stdio"], "capability": "read"}}}
    async with kairox.Runtime.open(tmp_path, home=home, env=_env(home), config_documents=[("test", doc)]) as rt:
        result = await rt.call_tool("everything.get-tiny-image", {})
    images = [c for c in result.content if isinstance(c, ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(b"\x89PNG")
    assert "[image image/png," in result.text  # the text fallback names it
