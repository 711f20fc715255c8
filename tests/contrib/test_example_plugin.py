"""contrib/kairox-example: its own tests pass as an author runs them, and the package works installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "contrib" / "kairox-example"


def test_the_example_tests_pass_with_only_the_kairox_pytest_plugin() -> None:
    """Run like an author would: pytest in the plugin's directory, fixtures from kairox-testing (pytest11).
    In one process (``-n 0``): it finds this repository's pyproject.toml, whose addopts start
    pytest-xdist workers."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-n", "0", "--rootdir", str(EXAMPLE)],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "skipped" not in out.stdout


@pytest.mark.slow
def test_installed_example_plugin_is_found_through_its_entry_point(example) -> None:
    (example.workspace / "notes.txt").write_text("a b c\n")
    plugins = json.loads(example.run("kairox", "plugins", "--json").stdout)
    [info] = plugins["plugins"]
    assert (info["name"], info["distribution"], info["version"]) == ("example", "kairox-example", "0.1.0")
    assert plugins["failures"] == []
    listed = json.loads(example.run("kairox", "tools", "list", "--json").stdout)
    assert {"example.wordcount", "example.checksum"} <= {t["id"] for t in listed["tools"]}
    counted = example.run("kairox", "example", "wordcount", "notes.txt", "--json")
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == {"path": "notes.txt", "lines": 1, "words": 3, "chars": 6}
    (example.workspace / ".env").write_text("TOKEN=x\n")
    blocked = example.run("kairox", "tools", "call", "example.wordcount", "--args", '{"path": ".env"}')
    assert blocked.returncode == 1 and "protected by" in blocked.stderr
    (example.workspace / "kairox.toml").write_text("[example]\nprotected = 3\n")
    status = example.run("kairox", "status")
    assert status.returncode == 1
    assert "example.protected: expected a list, got 3; a workspace's protected is added to" in status.stdout
    blocked = example.run("kairox", "tools", "call", "example.wordcount", "--args", '{"path": ".env"}')
    assert blocked.returncode == 1 and "protected by" in blocked.stderr  # the user's (default) list stays
