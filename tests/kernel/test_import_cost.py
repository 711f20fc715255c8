"""Start-up stays cheap: the kernel and every installed plugin's hooks never import heavy libraries.

Checked in a fresh interpreter (this one has imported everything already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("mcp", "httpx", "httpx2", "pydantic", "starlette")

PROBE = """
import json, sys
HEAVY = {heavy!r}
def heavy():
    return sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
{body}
print(json.dumps(heavy()))
"""


def probe(body: str, tmp_path: Path, **env: str) -> list[str]:
    code = PROBE.format(heavy=HEAVY, body=body)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    full_env.update(KAIROX_HOME=str(tmp_path / "home"), **env)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_kairox_is_light(tmp_path: Path) -> None:
    assert probe("import kairox", tmp_path) == []


def test_building_the_plugin_host_with_every_installed_plugin_is_light(tmp_path: Path) -> None:
    body = "import kairox.ext\nhost = kairox.ext.build_plugin_host()\nassert host.pm is not None"
    assert probe(body, tmp_path) == []


def test_kairox_plugins_command_is_light(tmp_path: Path) -> None:
    body = """
from kairox_cli import main
try:
    main(["--workspace", ".", "plugins", "--json"])
except SystemExit as exc:
    assert not exc.code, exc.code
"""
    assert probe(body, tmp_path) == []


@pytest.mark.parametrize("module", ["kairox_testing", "kairox_cli"])
def test_other_entry_modules_are_light(tmp_path: Path, module: str) -> None:
    assert probe(f"import {module}", tmp_path) == []


def test_kairox_plugins_in_a_bare_workspace_builds_only_defaults(tmp_path: Path) -> None:
    """No file sets a section, so every section is its default: nothing is structured (no
    cattrs), no event stream opened (anyio's memory streams) and no session started."""
    code = """
import json, sys
from kairox_cli import main
try:
    main(["--workspace", ".", "plugins", "--json"])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(m for m in ("cattrs", "anyio.streams.memory", "kairox._session") if m in sys.modules)))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAIROX_")}
    env["KAIROX_HOME"] = str(tmp_path / "home")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
