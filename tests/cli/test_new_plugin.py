"""``kairox new plugin NAME``: a plugin package whose own tests pass as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kairox_testing import KairoxHarness

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_it_writes_the_package(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    target = tmp_path / "kairox-notes"
    result = kairox_harness.cli("new", "plugin", "notes", "--path", str(target), "--kairox-source", str(ROOT))
    assert result.exit_code == 0, result.stderr
    written = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert written == [
        "README.md",
        "pyproject.toml",
        "src/kairox_notes/__init__.py",
        "src/kairox_notes/config.py",
        "src/kairox_notes/hooks.py",
        "src/kairox_notes/py.typed",
        "src/kairox_notes/skills/hello/SKILL.md",
        "src/kairox_notes/tools.py",
        "tests/conftest.py",
        "tests/test_notes.py",
    ]
    project = tomllib.loads((target / "pyproject.toml").read_text())
    assert project["project"]["name"] == "kairox-notes"
    assert project["project"]["entry-points"]["kairox"] == {"notes": "kairox_notes.hooks"}
    assert project["tool"]["uv"]["sources"]["kairox"] == {"path": f"{ROOT.as_posix()}/kernel", "editable": True}
    for file in target.rglob("*.py"):
        compile(file.read_text(), str(file), "exec")
    hooks = (target / "src/kairox_notes/hooks.py").read_text()
    assert 'tools("kairox_notes.tools:tools")' in hooks and 'skills("kairox_notes:skills")' in hooks


def test_it_never_writes_into_an_existing_folder(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mine.txt").write_text("keep me")
    result = kairox_harness.cli("new", "plugin", "notes", "--path", str(mine))
    assert result.exit_code == 1
    assert "exists already" in result.stderr
    assert [p.name for p in mine.iterdir()] == ["mine.txt"]


@pytest.mark.parametrize("name", ["Notes", "1notes", "no tes", "notes-", "../x", "a" * 41])
def test_a_name_that_is_no_plugin_name_is_refused(kairox_harness: KairoxHarness, tmp_path: Path, name: str) -> None:
    result = kairox_harness.cli("new", "plugin", name, "--path", str(tmp_path / "x"))
    assert result.exit_code == 2 and "a plugin name is a lowercase word" in result.stderr
    assert not (tmp_path / "x").exists()


def test_without_a_checkout_it_takes_kairox_from_the_index() -> None:
    from kairox_cli._new import plugin_files  # the templates, without a checkout to point at

    pyproject = tomllib.loads(plugin_files("my-notes")["pyproject.toml"])
    assert "uv" not in pyproject.get("tool", {})
    assert pyproject["project"]["entry-points"]["kairox"] == {"my-notes": "kairox_my_notes.hooks"}


@pytest.mark.slow
def test_its_own_tests_pass_as_written_and_it_loads_installed(kairox_harness: KairoxHarness, tmp_path: Path) -> None:
    """The package in an environment of its own (uv, kairox from this checkout, offline from
    uv's cache): its tests pass, and they fail when its tool does something else."""
    uv = shutil.which("uv")
    assert uv, "uv is needed (the README installs it)"
    target = tmp_path / "kairox-notes"
    assert (
        kairox_harness.cli("new", "plugin", "notes", "--path", str(target), "--kairox-source", str(ROOT)).exit_code == 0
    )
    # not this run's pytest options either (PYTEST_ADDOPTS=-v would change what its pytest prints)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KAIROX_", "VIRTUAL_ENV", "UV_PROJECT", "PYTEST_ADDOPTS"))
    }
    env.update(KAIROX_HOME=str(tmp_path / "home"), UV_LINK_MODE="copy")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [uv, "run", "--quiet", *args], cwd=target, env=env, capture_output=True, text=True, timeout=600
        )

    tests = run("pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert re.search(r"^5 passed", tests.stdout, re.M), tests.stdout
    plugins = run("kairox", "plugins")
    assert re.search(
        r"^notes\s+kairox-notes 0\.1\.0\s+register_config_sections, register_skill_sources", plugins.stdout, re.M
    )
    greeted = run("kairox", "tools", "call", "notes.greet", "--args", '{"who": "Ada"}')
    assert greeted.stdout.strip() == "Hello, Ada!", greeted.stderr

    tools = target / "src" / "kairox_notes" / "tools.py"
    tools.write_text(tools.read_text().replace('f"{config.greeting}, {who}!"', 'f"{who}"'))
    broken = run("pytest", "-q", "-p", "no:cacheprovider")
    assert broken.returncode == 1 and "2 failed, 3 passed" in broken.stdout, broken.stdout[-3000:]
