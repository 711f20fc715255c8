"""The lsp.* tools through ``kairox tools call``, against real servers.

Each call is a fresh ``kairox -w <workspace> tools call ...``: it starts the
server declared in the workspace's kairox.toml, asks it, prints the result and
stops it. No server process may outlive the command. The calls run in process
(``KairoxHarness.cli``, the same command line); one test runs the real program
(the console script in a subprocess) for the whole path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import psutil
import pytest

from kairox_testing import KairoxHarness, trust_workspace

from .helpers import server_command

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_leftovers")]

REPO = Path(__file__).resolve().parents[2]
KAIROX = str(Path(sys.executable).parent / "kairox")

SERVERS = {
    "basedpyright": ("basedpyright-langserver", ["--stdio"]),
    "pylsp": ("pylsp", []),
}


def _write_config(workspace: Path, server: str) -> None:
    command, args = SERVERS[server]
    text = (
        f"[lsp_servers.{server}]\n"
        f"command = {json.dumps(server_command(command))}\n"
        f"args = {json.dumps(args)}\n"
        'languages = ["python"]\n'
        # test-sized: pylsp takes about a second to exit once its stdin is closed
        "shutdown_timeout = 0.5\n"
    )
    if server == "basedpyright":
        # answered through workspace/configuration: without it basedpyright's default
        # ("recommended") also warns about the unannotated attribute in shapes.py
        text += 'settings = { basedpyright = { analysis = { typeCheckingMode = "standard" } } }\n'
    (workspace / "kairox.toml").write_text(text)


@attrs.frozen
class Run:
    returncode: int
    stdout: str
    stderr: str


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "KAIROX_HOME": str(home), "KAIROX_LOAD_PLUGINS": "lsp"}


def kairox(workspace: Path, home: Path, *args: str) -> Run:
    """``kairox -w workspace *args`` in process, with the installed lsp plugin only."""
    trust_workspace(workspace, home)  # the test's own workspace: its language server may run
    result = KairoxHarness(workspace, home, env=_env(home)).cli(*args, load_entrypoints=True)
    return Run(result.exit_code, result.stdout, result.stderr)


def kairox_program(workspace: Path, home: Path, *args: str) -> Run:
    """The same, as the real program: the venv's ``kairox`` console script in a subprocess."""
    trust_workspace(workspace, home)
    out = subprocess.run(
        [KAIROX, "-w", str(workspace), *args], cwd=REPO, env=_env(home), capture_output=True, text=True, timeout=180
    )
    return Run(out.returncode, out.stdout, out.stderr)


def _servers_running_in(workspace: Path) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cwd", "status"]):
        try:
            if proc.info["cwd"] == str(workspace) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


@pytest.fixture(params=sorted(SERVERS))
def workspace(request: pytest.FixtureRequest, project: Path) -> tuple[str, Path]:
    _write_config(project, request.param)
    return request.param, project


def call(ws: tuple[str, Path], home: Path, tool: str, args: dict[str, object], *, program: bool = False) -> Run:
    run = kairox_program if program else kairox
    result = run(ws[1], home, "tools", "call", tool, "--args", json.dumps(args))
    assert _servers_running_in(ws[1]) == [], "a server outlived the CLI"
    return result


def test_definition_across_astral_characters(workspace: tuple[str, Path], tmp_path: Path) -> None:
    """The real program: ``kairox tools call`` in a process of its own."""
    # line 6 is `PAIR = ("😀😀", Circle(3.0))`: column 15 in characters is UTF-16 column 17
    out = call(workspace, tmp_path, "lsp.definition", {"path": "pkg/main.py", "line": 6, "column": 15}, program=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "definition of `Circle` at pkg/main.py:6:15:",
        "pkg/shapes.py:8:7: class Circle:",
    ]


def test_definition_by_symbol_name(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.definition", {"path": "pkg/main.py", "line": 11, "symbol": "total_area"})
    assert out.returncode == 0, out.stderr
    assert "pkg/shapes.py:19:5: def total_area(circles: list[Circle]) -> float:" in out.stdout


def test_references(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.references", {"path": "pkg/shapes.py", "symbol": "Circle"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "9 references to `Circle` at pkg/shapes.py:8:7:"
    assert "pkg/broken.py:8:12: return Circle(undefined_name)" in lines
    assert "pkg/main.py:5:23: SIZES = [Circle(1.0), Circle(2.5)]" in lines
    assert "pkg/shapes.py:19:30: def total_area(circles: list[Circle]) -> float:" in lines


def test_hover(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.hover", {"path": "pkg/main.py", "line": 11, "column": 12})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("`total_area` at pkg/main.py:11:12:\n")
    assert "total_area(circles: list[Circle]) -> float" in out.stdout
    assert "The summed area of" in out.stdout


def test_document_symbols(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.document_symbols", {"path": "pkg/shapes.py"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    if "class Circle  pkg/shapes.py:8:7" not in text:
        # seen twice in CI on Python 3.10, at the start of a loaded run: pylsp answered no
        # symbols at all. Still a failure; the message says whether a second ask answers
        try:
            again = call(workspace, tmp_path, "lsp.document_symbols", {"path": "pkg/shapes.py"})
            second = f"exit {again.returncode}, {again.stdout[:300]!r} (stderr {again.stderr[-1000:]!r})"
        except AssertionError as exc:  # a server outlived the second ask
            second = f"failed: {exc}"
        pytest.fail(f"first answer: {text!r} (stderr {out.stderr[-2000:]!r}); asked again: {second}")
    assert "area  pkg/shapes.py:14:9" in text  # `method area` or `method Circle.area`
    assert "function total_area  pkg/shapes.py:19:5" in text


def test_workspace_symbols(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.workspace_symbols", {"query": "total_area"})
    if workspace[0] == "pylsp":  # pylsp has no workspace/symbol: the tool is not registered
        assert out.returncode == 1
        assert "no tool named 'lsp.workspace_symbols'" in out.stderr
        return
    assert out.returncode == 0, out.stderr
    assert "function total_area  pkg/shapes.py:19:5: def total_area(circles: list[Circle]) -> float:" in out.stdout


def test_diagnostics(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.diagnostics", {"path": "pkg/broken.py"})
    assert out.returncode == 0, out.stderr
    assert "may be stale" not in out.stdout  # the server published for the text we sent
    if workspace[0] == "basedpyright":
        assert 'pkg/broken.py:8:19: error: "undefined_name" is not defined [basedpyright reportUndefinedVariable]' in (
            out.stdout
        )
    else:
        try:
            import pyflakes  # noqa: F401
        except ImportError:  # pylsp without linters publishes an empty list
            assert out.stdout.strip() == "no problems reported in pkg/broken.py"
        else:  # pragma: no cover - depends on the environment
            assert "undefined name 'undefined_name'" in out.stdout


def test_clean_file_has_no_problems(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.diagnostics", {"path": "pkg/shapes.py"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "no problems reported in pkg/shapes.py"


def test_bad_arguments_are_error_results(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = call(workspace, tmp_path, "lsp.definition", {"path": "pkg/main.py", "line": 99, "column": 1})
    assert out.returncode == 1
    assert "line 99 is past the end of pkg/main.py (12 lines)" in out.stdout
    out = call(workspace, tmp_path, "lsp.hover", {"path": "pkg/nope.py", "line": 1, "column": 1})
    assert out.returncode == 1 and "no such file: pkg/nope.py" in out.stdout


def test_status_and_tools_list(workspace: tuple[str, Path], tmp_path: Path) -> None:
    out = kairox(workspace[1], tmp_path, "--json", "status")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    [server] = [s for s in data["servers"] if s["kind"] == "lsp"]
    assert server["name"] == workspace[0] and server["state"] == "ready"
    assert server["source"].endswith("kairox.toml")
    listed = kairox(workspace[1], tmp_path, "--json", "tools", "list")
    tools = {t["id"]: t for t in json.loads(listed.stdout)["tools"]}
    assert {"lsp.definition", "lsp.references", "lsp.hover", "lsp.document_symbols", "lsp.diagnostics"} <= set(tools)
    assert all(
        t["domain"] == "local" and t["capability"] == "read" and t["decision"] == "allow" for t in tools.values()
    )
    assert _servers_running_in(workspace[1]) == []
