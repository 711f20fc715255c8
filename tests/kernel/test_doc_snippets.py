"""Every code snippet in the README and docs works as written (issue 18, item 7).

- Every ``python``, ``toml`` and ``json`` block of README.md, docs/*.md and each package's
  README parses; a ``python`` block compiles as a script, unless it is marked
  ``<!-- snippet: fragment -->`` right above (code shown inside an async function: it
  compiles with top-level ``await``); a block a test below runs as a whole is marked
  ``<!-- snippet: tested by ... -->``.
- The complete programs (the README's, docs/index.md's and the kernel README's examples) run,
  in a fresh workspace.
- Every ``kairox ...`` command line in an ``sh`` block names commands that exist.
- The own-directory plugin recipe of docs/writing-a-plugin.md builds and installs as written:
  ``uv run kairox plugins`` in that directory lists it, ``uv run kairox hello`` runs it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kairox_cli import build_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    {
        ROOT / "README.md",
        ROOT / "kernel" / "README.md",
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("builtin_plugins/*/README.md"),
        *ROOT.glob("contrib/*/README.md"),
    }
)
BLOCK = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
FRAGMENT = "<!-- snippet: fragment -->"
#: a block another test here runs as it stands (the plugin recipe's commands are its own CLI's)
ELSEWHERE = "<!-- snippet: tested by tests/kernel/test_doc_snippets.py -->"


def blocks(lang: str, *, fragments: bool = False) -> list[tuple[str, str]]:
    """The blocks of ``lang`` as (file:line, text); marked ones only with ``fragments=True``
    (then only the fragments)."""
    found = []
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            if m.group("lang") != lang:
                continue
            before = text[: m.start()].rstrip().rsplit("\n", 1)[-1]
            marked = before.strip() in (FRAGMENT, ELSEWHERE)
            if marked != fragments or (fragments and before.strip() != FRAGMENT):
                continue
            body = "\n".join(line[len(m.group("indent")) :] for line in m.group("body").splitlines())
            found.append((f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}", body))
    return found


def _script(text: str) -> object:
    return compile(text, "<snippet>", "exec", dont_inherit=True)


PARSERS = {"python": _script, "toml": tomllib.loads, "json": json.loads}


@pytest.mark.parametrize("lang", sorted(PARSERS))
def test_every_block_parses(lang: str) -> None:
    problems = []
    for where, body in blocks(lang):
        try:
            PARSERS[lang](body)
        except Exception as exc:
            problems.append(f"{where}: {type(exc).__name__}: {exc}")
    assert problems == []
    assert blocks(lang), f"no {lang} block found: the pattern is wrong"


def test_fragments_compile_as_the_body_of_an_async_function() -> None:
    problems = []
    for where, body in blocks("python", fragments=True):
        try:
            compile(body, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except SyntaxError as exc:
            problems.append(f"{where}: {exc}")
    assert problems == []
    assert blocks("python", fragments=True)


def program(path: str, marker: str) -> str:
    for where, body in blocks("python"):
        if where.startswith(path + ":") and marker in body:
            return body
    raise AssertionError(f"{path}: no python block with {marker!r}")


@pytest.mark.parametrize(
    ("path", "marker"),
    [("README.md", "anyio.run(main)"), ("docs/index.md", "anyio.run(main)"), ("kernel/README.md", "anyio.run(main)")],
)
def test_the_complete_programs_run(path: str, marker: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# A workspace\n\nfor the docs' own examples\n")
    script = tmp_path / "example.py"
    script.write_text(program(path, marker))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env.update(KAIROX_HOME=str(tmp_path / "home"), HOME=str(tmp_path))
    out = subprocess.run([sys.executable, str(script)], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr


def _command_words(line: str) -> list[str] | None:
    line = line.split(" #", 1)[0].strip()
    if line.startswith("$ "):
        line = line[2:]
    for prefix in ("uv run kairox ", "kairox "):
        if line.startswith(prefix):
            try:
                return shlex.split(line[len(prefix) :])
            except ValueError:
                return None
    return None


TAKES_VALUE = {"-w", "--workspace"}


def _resolve(group: click.Group, words: list[str]) -> str | None:
    """None when the words name existing commands, else what is wrong."""
    ctx = click.Context(group)
    words = list(words)
    while words and words[0].startswith("-"):  # global options before the command
        option = words.pop(0)
        if option in TAKES_VALUE and words:
            words.pop(0)
    if not words:
        return None
    command: click.Command = group
    path = []
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        word = words.pop(0)
        found = command.get_command(ctx, word)
        if found is None:
            return f"`kairox {' '.join([*path, word])}`: no such command"
        path.append(word)
        command = found
    return None


def test_every_kairox_command_line_names_commands_that_exist() -> None:
    cli = build_cli()
    problems = []
    for lang in ("sh", "console", "bash"):
        for where, body in blocks(lang):
            for line in body.splitlines():
                words = _command_words(line)
                if words is None:
                    continue
                problem = _resolve(cli, words)
                if problem:
                    problems.append(f"{where}: {problem}")
    assert problems == []


def test_the_comparison_notices_a_command_that_does_not_exist() -> None:
    cli = build_cli()
    assert _resolve(cli, ["tools", "list"]) is None
    assert _resolve(cli, ["-w", "x", "--json", "status"]) is None
    assert _resolve(cli, ["tools", "lisst"]) == "`kairox tools lisst`: no such command"
    assert _resolve(cli, ["nonesuch"]) == "`kairox nonesuch`: no such command"


@pytest.mark.slow
def test_the_own_directory_plugin_recipe_installs_as_written(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv, "uv is needed (the README installs it)"
    project = tmp_path / "kairox-hello"
    files = {}
    for _where, body in [*blocks("toml"), *blocks("python")]:
        first = body.splitlines()[0] if body else ""
        m = re.match(r"# /path/to/kairox-hello/(\S+)$", first)
        if m:
            files[m.group(1)] = body.replace("/path/to/kairox", str(ROOT))
    assert sorted(files) == ["pyproject.toml", "src/kairox_hello/cli.py", "src/kairox_hello/hooks.py"]
    for name, body in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(body)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROX_", "VIRTUAL_ENV", "UV_PROJECT"))}
    env.update(KAIROX_HOME=str(tmp_path / "home"), UV_LINK_MODE="copy")
    plugins = subprocess.run(
        [uv, "run", "--quiet", "kairox", "plugins"], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert plugins.returncode == 0, plugins.stderr
    assert re.search(r"^hello\s+kairox-hello 0\.1\.0\s+register_commands$", plugins.stdout, re.M), plugins.stdout
    hello = subprocess.run(
        [uv, "run", "--quiet", "kairox", "hello"], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.strip() == "hello from kairox-hello"
