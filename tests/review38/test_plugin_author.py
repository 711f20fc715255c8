"""A plugin written as docs/writing-a-plugin.md says, in a project of its own (a path source
to this checkout), run through ``uv run --project PLUGIN kairox ...``.

It has a guard (``pre_tool_call``) that raises on ``hello.boom``, an advisory observer that
raises on ``hello.head``, a guard answering with values the docs do not list, and a tool
``hello.head`` with a strict input schema that reads through ``runtime.workspace_root``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from review38_lab import PRIVATE, WORKTREE, Lab

PYPROJECT = f"""\
[project]
name = "kairox-hello"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["kairox>=0.1,<0.2", "kairox-tools"]

[project.entry-points.kairox]
hello = "kairox_hello.hooks"
hello-audit = "kairox_hello.audit"
hello-odd = "kairox_hello.odd"
hello-broken = "kairox_hello.broken"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/kairox_hello"]

[tool.uv.sources]
kairox = {{ path = "{WORKTREE}/kernel", editable = true }}
kairox-tools = {{ path = "{WORKTREE}/builtin_plugins/tools", editable = true }}
"""

HOOKS = """\
from kairox import hookimpl
from kairox.declare import adds

kairox_register_tool_providers = adds("kairox_hello.tools:HelloProvider")


@hookimpl
def kairox_pre_tool_call(call):
    if call.tool.id == "hello.boom":
        raise RuntimeError("guard bug: cannot decide")
    return None
"""

AUDIT = """\
import kairox


@kairox.hookimpl
@kairox.advisory
def kairox_pre_tool_call(call):
    if call.tool.id == "hello.head":
        raise ValueError("audit log unavailable")
    return None
"""

ODD = '''\
import kairox


@kairox.hookimpl
def kairox_pre_tool_call(call):
    """Answers the docs do not list: False, a string, an exception it did not raise."""
    answers = {"false.txt": False, "str.txt": "deny: secrets", "exc.txt": PermissionError("no")}
    return answers.get(call.arguments.get("path", ""))
'''

BROKEN = """\
import kairox

raise RuntimeError("the guard's dependency is missing")


@kairox.hookimpl
def kairox_pre_tool_call(call):
    return kairox.Block("nothing passes this guard")
"""

TOOLS = """\
from kairox import FunctionTool, ToolResult, ToolSpec


class HelloProvider:
    name = "hello"

    async def start(self, runtime):
        self.runtime = runtime
        head = ToolSpec(
            "hello.head",
            "The first lines of a workspace file.",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
                "required": ["path"],
                "additionalProperties": False,
            },
            domain="local",
            capability="read",
        )
        boom = ToolSpec("hello.boom", "Does nothing.", input_schema={"type": "object"}, domain="local", capability="read")
        runtime.tools.replace_provider(self.name, [FunctionTool(head, self.head), FunctionTool(boom, lambda: "boom ran")])

    def head(self, path: str, lines: int = 1):
        try:
            text = self.runtime.workspace_root.read_text(path)
        except OSError as exc:
            return ToolResult.from_text(str(exc), is_error=True)
        return "\\n".join(text.splitlines()[:lines])

    async def stop(self):
        pass

    def status(self):
        return ()
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin") / "kairox-hello"
    package = root / "src" / "kairox_hello"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    for name, text in {
        "__init__": "",
        "hooks": HOOKS,
        "audit": AUDIT,
        "odd": ODD,
        "broken": BROKEN,
        "tools": TOOLS,
    }.items():
        (package / f"{name}.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROX_", "VIRTUAL_ENV"))}
    subprocess.run(["uv", "sync", "--quiet"], cwd=root, env=env, check=True, timeout=600)
    return root


def _call(lab: Lab, plugin: Path, tool: str, args: dict[str, object]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in lab.env.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(
        ["uv", "run", "--quiet", "--project", str(plugin), "kairox", "tools", "call", tool, "--args", json.dumps(args)],
        cwd=lab.ws,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_guard_that_raises_blocks_naming_itself(lab: Lab, plugin: Path) -> None:
    """Held: the call is refused, the message names the plugin and the error."""
    result = _call(lab, plugin, "hello.boom", {})
    assert result.returncode == 1
    assert "the guard of hello failed (RuntimeError: guard bug: cannot decide)" in result.stderr
    assert "boom ran" not in result.stdout


def test_an_advisory_hook_that_raises_lets_the_call_go_on(lab: Lab, plugin: Path) -> None:
    """Held: ``@kairox.advisory`` (under ``@kairox.hookimpl``, as documented)."""
    lab.write("notes.txt", "first line\nsecond\n")
    result = _call(lab, plugin, "hello.head", {"path": "notes.txt"})
    assert result.stdout.strip() == "first line", result.stderr


@pytest.mark.parametrize(
    "args", [{"path": "notes.txt", "lines": "2"}, {"path": "notes.txt", "extra": 1}, {"lines": 1}, {"path": 3}]
)
def test_the_input_schema_is_enforced(lab: Lab, plugin: Path, args: dict[str, object]) -> None:
    """Held: each is refused before the tool (or any guard) runs."""
    lab.write("notes.txt", "first line\n")
    result = _call(lab, plugin, "hello.head", args)
    assert result.returncode == 1 and "invalid arguments for hello.head" in result.stdout + result.stderr


def test_workspace_root_reads_inside_and_refuses_a_link_out(lab: Lab, plugin: Path) -> None:
    """Held: ``runtime.workspace_root.read_text`` refuses a planted link and a FIFO."""
    lab.link("link.txt", lab.private)
    os.mkfifo(lab.ws / "fifo.txt")
    for path in ("link.txt", "fifo.txt", str(lab.private), "../home/.ssh/id_ed25519"):
        result = _call(lab, plugin, "hello.head", {"path": path})
        assert result.returncode == 1 and PRIVATE not in result.stdout, (path, result.stdout)
        assert "not read" in result.stdout + result.stderr, (path, result.stdout, result.stderr)


def test_a_guard_plugin_that_fails_to_import_is_not_silently_absent(lab: Lab, plugin: Path) -> None:
    """[medium] ``hello-broken`` (a guard that blocks everything) raises on import: every
    call runs unguarded, and ``tools call`` exits 0 without naming the failed plugin
    (only ``kairox plugins`` and ``kairox status`` do)."""
    lab.write("notes.txt", "first line\n")
    result = _call(lab, plugin, "hello.head", {"path": "notes.txt"})
    assert result.returncode == 1 or "hello-broken" in result.stderr, (result.stdout, result.stderr)
