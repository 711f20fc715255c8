"""Parallel writers of one ``kairox.toml`` lose nothing (issue "Trust by construction", item 7).

Written as the attack: N real ``kairox`` processes started together, each adding a
different table to the same file (``kairox catalog install``, ``kairox mcp import``).
Every run reports success, so every table must be in the file afterwards. Each
read-modify-write of the file is slow enough to overlap with the others' (the file
already holds many servers, as a long-lived workspace's does), so an editor that
does not hold the file's lock drops tables in every run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from security_helpers import KAIROX, cli_env

from kairox._compat import tomllib

#: processes started together
WRITERS = 8
#: servers the file holds before the writers start: parsing and writing it back takes a while
EXISTING = 600


def _existing_servers() -> str:
    return "".join(
        f'# server {i}, kept as it is\n[mcp_servers.old{i}]\ncommand = "true"\nargs = ["{i}"]\n\n'
        for i in range(EXISTING)
    )


def _start(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    out = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out.append((proc.returncode, stdout + stderr))
    return out


def _servers(path: Path) -> set[str]:
    return set(tomllib.loads(path.read_text(encoding="utf-8")).get("mcp_servers", {}))


def test_parallel_catalog_installs_keep_every_table(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    catalog = tmp_path / "catalog.json"
    entries = [
        {"name": f"new{i}", "launch": {"command": sys.executable, "args": ["-c", "pass"]}} for i in range(WRITERS)
    ]
    catalog.write_text(json.dumps({"entries": entries}))
    # the source is the user's (a workspace's sources need trust, and each install changes the workspace)
    (home / "kairox.toml").write_text(
        f'[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = "mine"\nurl = {json.dumps(str(catalog))}\n'
    )
    target = ws / "kairox.toml"
    target.write_text(_existing_servers())
    env = cli_env(home)
    argv = [KAIROX, "--workspace", str(ws), "catalog", "install", "--no-prepare", "--no-verify", "--yes"]
    results = _finish([_start([*argv, f"new{i}"], env, ws) for i in range(WRITERS)])
    for code, output in results:
        assert code == 0, output[-2000:]
    written = _servers(target)
    missing = sorted({f"new{i}" for i in range(WRITERS)} - written)
    assert missing == [], f"{len(missing)} of {WRITERS} installed tables are gone: {missing}"
    assert {f"old{i}" for i in range(EXISTING)} <= written
    assert target.read_text().startswith("# server 0, kept as it is\n[mcp_servers.old0]\n")


def test_parallel_mcp_imports_keep_every_table(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "kairox.toml"
    target.write_text(_existing_servers())
    procs = []
    for i in range(WRITERS):
        # each writer's own home holds one Cursor server of its own to import into the shared workspace file
        home = tmp_path / f"home{i}"
        (home / ".cursor").mkdir(parents=True)
        server = {"command": sys.executable, "args": ["-c", "pass", str(i)]}
        (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {f"new{i}": server}}))
        env = cli_env(home)
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        argv = [KAIROX, "--workspace", str(ws), "mcp", "import", "--from", "cursor", "--yes"]
        procs.append(_start(argv, env, ws))
    for code, output in _finish(procs):
        assert code == 0, output[-2000:]
    written = _servers(target)
    missing = sorted({f"new{i}" for i in range(WRITERS)} - written)
    assert missing == [], f"{len(missing)} of {WRITERS} imported tables are gone: {missing}"
    assert {f"old{i}" for i in range(EXISTING)} <= written
