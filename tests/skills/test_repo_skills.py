"""The repository's own skills (.kairox/skills/) load cleanly and work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kairox_skills.hooks
from kairox_testing import KairoxHarness

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / ".kairox" / "skills" / "plugin-conventions" / "scripts" / "check_plugin.py"


@pytest.fixture
def repo(kairox_home: Path, kairox_env: dict[str, str]) -> KairoxHarness:
    return KairoxHarness(REPO, kairox_home, kairox_env, [kairox_skills.hooks])


def test_skills_list_shows_the_repository_skills(repo: KairoxHarness) -> None:
    # every installed plugin: the repository's kairox.toml has sections of kairox-mcp,
    # kairox-lsp and kairox-dap, and a section nobody provides is a config problem
    result = repo.cli("skills", "list", load_entrypoints=True)
    assert result.exit_code == 0
    assert [line.split()[:4] for line in result.stdout.splitlines()] == [
        ["plugin-conventions", "workspace", "kairox", "on"],
        ["pr-review", "workspace", "kairox", "on"],
    ]
    assert result.stderr == ""  # no errors, no warnings
    status = repo.cli("status")
    assert "skills:    2" in status.stdout


@pytest.mark.anyio
async def test_the_skills_are_complete(repo: KairoxHarness) -> None:
    async with repo.open(start=False) as rt:
        review = rt.skills.get("pr-review")
        conventions = rt.skills.get("plugin-conventions")
        assert review is not None and conventions is not None
        assert conventions.kind == "folder"
        assert conventions.resources() == {
            "references": ["references/conventions.md"],
            "scripts": ["scripts/check_plugin.py"],
        }
        text = rt.skills.prepare("pr-review", {"base": "origin/main"}, tools=None).text
        assert "`git diff --stat origin/main`" in text and "{{" not in text
        assert rt.skills.match("review my pull request")[0].skill.name == "pr-review"
        assert rt.skills.match("is my new plugin's hookimpl module right?")[0].skill.name == "plugin-conventions"


def _check(*dirs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), *map(str, dirs)],
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )


def test_the_conventions_checker_passes_on_this_plugin() -> None:
    proc = _check(REPO / "builtin_plugins" / "skills")
    assert (proc.returncode, proc.stdout) == (0, f"ok: {REPO / 'builtin_plugins' / 'skills'}\n")


def test_the_conventions_checker_finds_broken_rules(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "kairox_bad"
    pkg.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "kairox-bad"\n[project.entry-points.kairox]\nbad = "x"\n'
    )
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks.py").write_text(
        "import json\n\nfrom kairox_cli import command\nCACHE = {}\n\n\ndef helper():\n    return json\n\n\n"
        "kairox_register_commands = command('bad', 'kairox_bad.cli:main', 'help')\nkairox_thing = dict()\n"
    )
    proc = _check(tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"error: {tmp_path / 'pyproject.toml'}: entry point bad = 'x', expected kairox_bad.hooks",
        f"error: {pkg / 'py.typed'}: missing",
        f"error: {pkg / 'hooks.py'}:4: CACHE is not a @hookimpl kairox_* function (or a kairox.declare one)",
        f"error: {pkg / 'hooks.py'}:7: helper is not a @hookimpl kairox_* function (or a kairox.declare one)",
        f"error: {pkg / 'hooks.py'}:12: kairox_thing is not a @hookimpl kairox_* function (or a kairox.declare one)",
        f"error: {pkg / 'hooks.py'}: no `from __future__ import annotations`",
    ]
