"""The ``kairox`` command line with the built-in tools, in a temp workspace.

``KAIROX_HOME`` points at an empty directory so the user's own config is never
read; ``KAIROX_LOAD_PLUGINS=tools`` keeps other plugins out of these tests. The
commands run in process (``KairoxHarness.cli``); ``tools list`` and the prompts on
a pseudo-terminal run as a real process, the workspace found from its directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from shared_helpers import converse_on_pty, on_pty

from kairox_testing import KairoxHarness

KAIROX = [sys.executable, "-c", "import sys; from kairox_cli import main; sys.exit(main())"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pty")


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update({"KAIROX_HOME": str(home), "KAIROX_LOAD_PLUGINS": "tools"})
    return env


@attrs.frozen
class Run:
    returncode: int
    stdout: str
    stderr: str


def kairox(ws: Path, home: Path, *args: str) -> Run:
    """``kairox --workspace WS *args`` in process, stdin not a terminal."""
    result = KairoxHarness(ws, home, env=cli_env(home)).cli(*args, load_entrypoints=True)
    return Run(result.exit_code, result.stdout, result.stderr)


def kairox_program(ws: Path, home: Path, *args: str) -> Run:
    """The real program in ``ws`` (the workspace is its working directory), stdin not a terminal."""
    out = subprocess.run(
        [*KAIROX, *args],
        cwd=ws,
        env=cli_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Run(out.returncode, out.stdout, out.stderr)


def test_tools_list_shows_each_builtin_tool_with_its_decision(ws: Path, home: Path) -> None:
    p = kairox_program(ws, home, "tools", "list")
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split(maxsplit=4) for line in p.stdout.splitlines()}
    assert rows["fs.read"][1:] == ["builtin-tools", "local", "read", "allow"]
    assert rows["fs.list"][1:] == ["builtin-tools", "local", "read", "allow"]
    assert rows["search.grep"][1:] == ["builtin-tools", "local", "read", "allow"]
    # a write's decision depends on where it lands: both are shown
    assert rows["fs.write"][1:] == ["builtin-tools", "local", "write", "allow inside the writable roots, ask outside"]
    assert rows["shell.exec"][1:] == ["builtin-tools", "system", "execute", "ask"]
    js = kairox_program(ws, home, "--json", "tools", "list")
    write = next(t for t in json.loads(js.stdout)["tools"] if t["id"] == "fs.write")
    assert write["decisions"]["inside"]["decision"] == "allow"
    assert write["decisions"]["outside"]["decision"] == "ask"
    assert "outside the writable roots" in write["decisions"]["outside"]["reason"]


def test_tools_list_follows_the_policy_in_kairox_toml(ws: Path, home: Path) -> None:
    # the user's own file: a workspace's `approval = "never"` would not apply (it only narrows)
    home.mkdir(parents=True, exist_ok=True)
    (home / "kairox.toml").write_text(
        '[policy]\napproval = "never"\nsandbox = "read_only"\n\n[policy.rules]\n"fs.list" = "deny"\n', encoding="utf-8"
    )
    p = kairox(ws, home, "--json", "tools", "list")
    assert p.returncode == 0, p.stderr
    tools = {t["id"]: t for t in json.loads(p.stdout)["tools"]}
    assert {tid: tools[tid]["decision"] for tid in ("fs.read", "fs.list", "fs.write", "shell.exec", "search.grep")} == {
        "fs.read": "allow",
        "fs.list": "deny",
        "fs.write": "deny",
        "shell.exec": "deny",
        "search.grep": "allow",
    }
    assert "read_only" in tools["fs.write"]["reason"]


def test_a_write_outside_is_denied_non_interactively_and_inside_goes_through(ws: Path, home: Path) -> None:
    p = kairox(ws, home, "tools", "call", "fs.write", "--args", '{"path": "/etc/kairox-test-x", "content": "no"}')
    assert p.returncode == 1
    assert "writes outside the writable roots" in p.stderr and "no approver is available" in p.stderr
    assert not Path("/etc/kairox-test-x").exists()
    ok = kairox(ws, home, "tools", "call", "fs.write", "--args", '{"path": "docs/a.md", "content": "yes"}')
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "wrote 3 bytes to docs/a.md (new file)"
    assert (ws / "docs" / "a.md").read_text() == "yes"
    read = kairox(ws, home, "--json", "tools", "call", "fs.read", "--args", '{"path": "docs/a.md"}')
    assert json.loads(read.stdout)["structured"]["total_lines"] == 1


def test_yes_approves_an_ask_but_never_a_deny(ws: Path, home: Path, tmp_path: Path) -> None:
    (ws / "kairox.toml").write_text('[policy]\ninclude_temp_dir = false\n\n[policy.rules]\n"shell.*" = "deny"\n')
    outside = tmp_path / "outside.txt"
    args = json.dumps({"path": str(outside), "content": "approved"})
    p = kairox(ws, home, "tools", "call", "fs.write", "--yes", "--args", args)
    assert p.returncode == 0, p.stderr
    assert outside.read_text() == "approved"
    denied = kairox(ws, home, "tools", "call", "shell.exec", "--yes", "--args", '{"command": "touch ran"}')
    assert denied.returncode == 1 and "denied by a rule in [policy.rules]" in denied.stderr
    assert not (ws / "ran").exists()


def test_shell_exec_from_the_cli(ws: Path, home: Path) -> None:
    p = kairox(ws, home, "tools", "call", "shell.exec", "--yes", "--args", '{"command": "echo hello; exit 2"}')
    assert p.returncode == 1  # the tool reported an error (non-zero exit)
    assert "exit code 2" in p.stdout and "hello" in p.stdout
    no = kairox(ws, home, "tools", "call", "shell.exec", "--args", '{"command": "echo hello"}')
    assert no.returncode == 1 and "needs approval" in no.stderr


def _run_on_a_tty(ws: Path, home: Path, args: list[str], answer: bytes) -> tuple[int, str, str]:
    """Run the CLI with stdin/stderr on a pseudo-terminal, answer its prompt, return (code, stdout, tty text)."""
    with on_pty([*KAIROX, *args], cwd=ws, env=cli_env(home)) as (proc, master):
        seen, _ = converse_on_pty(master, proc, b"[d]eny?", answer, timeout=60, poll=0.2)
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=30)
    return code, out, seen.decode(errors="replace")


def test_on_a_tty_the_user_is_asked_and_can_allow_once(ws: Path, home: Path, tmp_path: Path) -> None:
    (ws / "kairox.toml").write_text("[policy]\ninclude_temp_dir = false\n")
    target = tmp_path / "tty.txt"
    args = ["tools", "call", "fs.write", "--args", json.dumps({"path": str(target), "content": "via tty"})]
    code, out, tty = _run_on_a_tty(ws, home, args, b"o\n")
    assert "fs.write asks for approval: writes outside the writable roots" in tty
    assert str(target) in tty  # the arguments are shown
    assert code == 0, (out, tty)
    assert target.read_text() == "via tty"


def test_on_a_tty_the_user_can_deny(ws: Path, home: Path, tmp_path: Path) -> None:
    (ws / "kairox.toml").write_text("[policy]\ninclude_temp_dir = false\n")
    target = tmp_path / "never.txt"
    args = ["tools", "call", "fs.write", "--args", json.dumps({"path": str(target), "content": "x"})]
    code, _out, tty = _run_on_a_tty(ws, home, args, b"d\n")
    assert code == 1
    assert "the user declined" in tty
    assert not target.exists()
