"""A directory with several manifests (.kairox-plugin/ + .codex-plugin/ + .claude-plugin/): every one is
read, the components are their union, metadata comes from the first, and where they disagree a warning
says so (in `plugin list`, `plugin inspect` and as an event)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_helpers import real, write_plugin

from kairox_manifests.discovery import probe, sorted_formats
from kairox_manifests.errors import Problem
from kairox_manifests.events import BundleManifestsDisagree
from kairox_manifests.formats import ClaudeFormat, CodexFormat, builtin_formats
from kairox_manifests.merge import CONFLICT, merge_manifests
from kairox_manifests.model import BundleManifest
from kairox_manifests.paths import is_inside
from kairox_philont.manifest import PhilontFormat
from kairox_testing import EventLog, KairoxHarness
from kairox_testing.strategies import MANIFEST_FILES, json_documents, json_values, manifests

BUNDLES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles"
ALL_FORMATS = sorted_formats([*builtin_formats(), PhilontFormat()])


def keys(m: BundleManifest) -> list[str]:
    return [c.key for c in m.contributions]


def conflicts(m: BundleManifest) -> list[Problem]:
    return [p for p in m.problems if p.kind == CONFLICT]


def copy_bundle(name: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(BUNDLES / name, dest)
    return dest


def test_three_manifests_load_the_union_of_their_components() -> None:
    root = BUNDLES / "multi" / "team-kit"
    m, error = probe(root, ALL_FORMATS)
    assert error is None and m is not None
    assert m.all_formats == ("kairox", "codex", "claude")
    assert (m.name, m.format, m.version) == ("team-kit", "kairox", "2.1.0")  # metadata: the first (kairox)
    assert m.permissions is not None and m.permissions.sandbox is not None  # only kairox declares them
    assert sorted(keys(m)) == sorted(
        [
            "skill/commit-message",  # skills/: kairox, codex and claude (one contribution)
            "skill/changelog",  # codex's second skills path only
            "command/review",  # commands/: kairox and claude
            "command/release:notes",
            "agent/planner",  # claude's explicit agent files and the default agents/
            "agent/reviewer",
            "mcp_server/tickets",  # .mcp.json: read by all three, one server
            "hook/session_start.conventions",  # hooks/hooks.json: codex and claude, one hook
        ]
    )
    # the codex manifest says 2.0.0: a warning naming the field and both files; the first is used
    [conflict] = conflicts(m)
    assert conflict.path == "version" and conflict.file == str(root / ".codex-plugin" / "plugin.json")
    assert "'2.0.0'" in conflict.message and "'2.1.0'" in conflict.message and ".kairox-plugin" in conflict.message
    # hook events kairox has no equivalent for: one warning each, although two formats read the file
    events = [p.kind for p in m.problems if p.kind.startswith("hook-event:")]
    assert sorted(events) == ["hook-event:Notification", "hook-event:Stop"]


def test_a_claude_and_codex_directory_is_no_longer_read_as_codex_only(tmp_path: Path) -> None:
    # the shape of real dual plugins: commands, agents and hooks are Claude's, the Codex manifest names skills
    root = write_plugin(
        tmp_path / "dual",
        {
            ".claude-plugin/plugin.json": {"name": "dual", "version": "1.0.0"},
            ".codex-plugin/plugin.json": {"name": "dual", "version": "1.0.0", "skills": "./skills/"},
            "skills/plan/SKILL.md": "---\nname: plan\ndescription: Plan\n---\nPlan it.",
            "commands/ship.md": "Ship it",
            "agents/architect.md": "---\nname: architect\ndescription: d\n---\nx",
            "hooks/hooks.json": {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "echo x"}]}]}},
        },
    )
    codex_only = CodexFormat().probe(root)
    assert codex_only is not None and keys(codex_only) == ["skill/plan", "hook/pre_tool_call.echo"]
    m, _ = probe(root, ALL_FORMATS)
    assert m is not None and m.all_formats == ("codex", "claude")
    assert keys(m) == ["skill/plan", "hook/pre_tool_call.echo", "command/ship", "agent/architect"]
    assert conflicts(m) == []  # they agree: nothing to warn about


def test_default_enabled_comes_from_the_manifest_that_declares_it(tmp_path: Path) -> None:
    # a portable Agent Plugins plugin.json (no such field) beside a Claude manifest that is off by
    # default: the Claude manifest is the only one that says anything, so the plugin is off
    portable = {"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "tools"}
    files = {"plugin.json": portable, ".claude-plugin/plugin.json": {"name": "tools", "defaultEnabled": False}}
    m, _ = probe(write_plugin(tmp_path / "a", files), ALL_FORMATS)
    assert m is not None and m.all_formats == ("agent-plugins", "claude")
    assert (m.default_enabled, conflicts(m)) == (False, [])
    # two that declare it and disagree: the first's, and a warning
    both = {".kairox-plugin/plugin.json": {"name": "tools"}, ".claude-plugin/plugin.json": {"name": "tools"}}
    both[".kairox-plugin/plugin.json"]["defaultEnabled"] = True
    both[".claude-plugin/plugin.json"]["defaultEnabled"] = False
    m, _ = probe(write_plugin(tmp_path / "b", both), ALL_FORMATS)
    assert m is not None and m.default_enabled is True
    assert [p.path for p in conflicts(m)] == ["defaultEnabled"]


def test_a_broken_manifest_fails_the_whole_directory(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "half",
        {
            ".kairox-plugin/plugin.json": {"name": "half", "hooks": [{"event": "never", "script": "./h.py"}]},
            ".claude-plugin/plugin.json": {"name": "half"},
            "commands/x.md": "x",
        },
    )
    m, error = probe(root, ALL_FORMATS)
    assert m is None and error is not None
    assert error.file == str(root / ".kairox-plugin" / "plugin.json") and error.path == "hooks[0].event"


def test_same_name_from_different_files_warns_and_hooks_are_renamed(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "clash",
        {
            ".codex-plugin/plugin.json": {
                "name": "clash",
                "skills": "./codex-skills",
                "hooks": {"hooks": {"SessionStart": [{"hooks": [{"command": "echo codex"}]}]}},
            },
            ".claude-plugin/plugin.json": {"name": "clash", "skills": "./claude-skills"},
            "codex-skills/review/SKILL.md": "---\nname: review\ndescription: codex\n---\nx",
            "claude-skills/review/SKILL.md": "---\nname: review\ndescription: claude\n---\nx",
            "hooks/hooks.json": {"hooks": {"SessionStart": [{"hooks": [{"command": "echo claude"}]}]}},
        },
    )
    m, _ = probe(root, ALL_FORMATS)
    assert m is not None
    review = m.contribution("skill/review")
    assert review is not None and review.source.parent.name == "codex-skills"
    [dropped] = [p for p in conflicts(m) if "review" in p.message]
    assert "claude-skills" in dropped.message and "codex-skills" in dropped.message
    commands = sorted(c.config.command for c in m.by_kind("hook"))
    assert commands == ["echo claude", "echo codex"]  # both hooks kept: the second renamed
    assert sorted(c.name for c in m.by_kind("hook")) == ["session_start.echo", "session_start.echo-2"]


def test_the_manifest_less_layout_joins_only_when_no_manifest_is_found(tmp_path: Path) -> None:
    root = write_plugin(
        tmp_path / "kx",
        {
            ".kairox-plugin/plugin.json": {"name": "kx", "skills": "./mine"},
            "mine/a/SKILL.md": "x",
            "skills/b/SKILL.md": "x",
        },
    )
    m, _ = probe(root, ALL_FORMATS)
    assert m is not None and m.all_formats == ("kairox",)
    assert keys(m) == ["skill/a"]  # kairox's declared paths replace skills/; no layout adds it back


def test_merge_of_one_manifest_is_that_manifest_and_round_trips() -> None:
    m = ClaudeFormat().probe(BUNDLES / "claude" / "commit-guard")
    assert m is not None and merge_manifests([m]) is m
    merged, _ = probe(BUNDLES / "multi" / "team-kit", ALL_FORMATS)
    assert merged is not None
    assert BundleManifest.from_dict(json.loads(json.dumps(merged.to_dict()))) == merged


@pytest.mark.anyio
async def test_disagreement_is_an_event(kairox_harness: KairoxHarness) -> None:
    copy_bundle("multi/team-kit", kairox_harness.home / "plugins" / "team-kit")
    async with kairox_harness.open(start=False) as rt:
        log = EventLog(rt.events)
        # the loader published it when the runtime discovered the bundles, before the log listened: look again
        from kairox_manifests.loader import loader_of

        loader = loader_of(rt)
        assert loader is not None
        await loader.discover(rt)
        [event] = log.of(BundleManifestsDisagree)
    assert (event.plugin, event.field) == ("team-kit", "version")
    assert event.file.endswith(".codex-plugin/plugin.json")


def test_disagreement_shows_in_plugin_list_and_inspect(kairox_harness: KairoxHarness) -> None:
    copy_bundle("multi/team-kit", kairox_harness.home / "plugins" / "team-kit")
    listing = kairox_harness.cli("plugin", "list")
    assert listing.exit_code == 0, listing.output
    assert "kairox+codex+claude" in listing.stdout
    assert "the manifests disagree on version" in listing.stdout
    data = json.loads(kairox_harness.cli("plugin", "list", "--json").stdout)
    [view] = data["plugins"]
    assert view["format"] == "kairox" and view["formats"] == ["kairox", "codex", "claude"]
    assert any(p.get("kind") == CONFLICT for p in view["problems"])
    inspect = kairox_harness.cli("plugin", "inspect", "team-kit")
    assert "(kairox+codex+claude, user)" in inspect.stdout and "disagree on version" in inspect.stdout


# -- properties -------------------------------------------------------------------------------------

_PROPS = settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60, deadline=None)
_VALID = {fmt: manifests(fmt) for fmt in ("kairox", "codex", "claude")}
_ANY = {fmt: json_documents(fmt) for fmt in ("kairox", "codex", "claude")}


@st.composite
def _document(draw: st.DrawFn, fmt: str) -> Any:
    if draw(st.booleans()):
        return draw(_ANY[fmt])
    doc = dict(draw(_VALID[fmt]))
    for key in draw(st.sets(st.sampled_from(sorted(doc)))) if doc else ():
        if key != "name" or draw(st.booleans()):
            doc.pop(key, None)
    doc.update(draw(st.dictionaries(st.text(min_size=1, max_size=10), json_values(), max_size=3)))
    return doc


@_PROPS
@given(data=st.data(), which=st.sets(st.sampled_from(["kairox", "codex", "claude"]), min_size=1))
def test_directories_with_several_random_manifests_never_crash(data: st.DataObject, which: set[str]) -> None:
    docs = {fmt: data.draw(_document(fmt), label=fmt) for fmt in sorted(which)}
    base = Path(tempfile.mkdtemp(prefix="kx-multi-"))
    try:
        root = write_plugin(
            base / "plugin",
            {
                **{MANIFEST_FILES[fmt]: doc for fmt, doc in docs.items()},
                "skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\nx",
                "commands/c.md": "x",
                "hooks/hooks.json": {"hooks": {"Stop": [{"hooks": [{"command": "echo x"}]}]}},
            },
        )
        files = {str(root / MANIFEST_FILES[fmt]): doc for fmt, doc in docs.items()}
        m, error = probe(root, ALL_FORMATS)
        if error is not None:
            assert m is None and error.file
            assert is_inside(real(Path(error.file)), real(root)), error.file
            doc = files.get(error.file)
            if isinstance(doc, dict) and error.path:
                top = error.path.split(".")[0].split("[")[0]
                assert top in doc or top.startswith("name"), (error.path, doc)
            return
        if m is None:
            return  # nothing recognised the directory (a Philont plugin.json without an id, say)
        assert set(m.all_formats) <= which | {"claude-layout"}
        for c in m.contributions:
            assert is_inside(real(c.source), real(root)), c
        for p in m.problems:
            assert isinstance(p.path, str) and (p.file is None or is_inside(real(Path(p.file)), real(root)))
        keys_seen = [c.key for c in m.contributions]
        assert len(keys_seen) == len(set(keys_seen))  # one contribution per name
        assert BundleManifest.from_dict(json.loads(json.dumps(m.to_dict()))) == m
    finally:
        shutil.rmtree(base, ignore_errors=True)
