"""Two processes writing one OAuth token file keep each other's field.

Written as the attack: in each round one real process stores new tokens (a refresh)
while another stores the client registration, both started by the same go file. Each
write is a read-modify-write of ``$KAIROX_HOME/mcp-oauth/<server>.json``; without the
file's lock both read the same old file and the second write drops the first one's
field (59 of 60 rounds lost one when this was written).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 30
URL = "http://127.0.0.1:1/mcp"

WORKER = r"""
import sys, time, anyio
from pathlib import Path
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from kairox_mcp.auth import FileTokenStorage

path, role, rounds, sync, url = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
for r in range(rounds):
    while not (sync / f"go-{r}").exists():
        time.sleep(0.0005)
    storage = FileTokenStorage(path, url)
    if role == "tokens":
        anyio.run(storage.set_tokens, OAuthToken(access_token=f"t{r}", token_type="Bearer"))
    else:
        info = OAuthClientInformationFull(client_id=f"c{r}", redirect_uris=["http://127.0.0.1/cb"])
        anyio.run(storage.set_client_info, info)
    (sync / f"done-{role}-{r}").touch()
"""


def test_a_token_refresh_and_a_registration_at_once_keep_both(tmp_path: Path) -> None:
    path = tmp_path / "home" / "mcp-oauth" / "server.json"
    sync = tmp_path / "sync"
    sync.mkdir()
    roles = ("tokens", "client")
    argv = [sys.executable, "-c", WORKER, str(path)]
    procs = [subprocess.Popen([*argv, role, str(ROUNDS), str(sync), URL]) for role in roles]
    lost: list[int] = []
    try:
        for r in range(ROUNDS):
            path.unlink(missing_ok=True)
            (sync / f"go-{r}").touch()
            deadline = time.monotonic() + 60
            while not all((sync / f"done-{role}-{r}").exists() for role in roles):
                assert time.monotonic() < deadline, f"round {r} did not finish"
                assert all(p.poll() is None for p in procs), "a writer died"
                time.sleep(0.001)
            data = json.loads(path.read_text())
            tokens, client = data.get("tokens") or {}, data.get("client_info") or {}
            if tokens.get("access_token") != f"t{r}" or client.get("client_id") != f"c{r}":
                lost.append(r)
    finally:
        for proc in procs:
            proc.kill() if proc.poll() is None else None
            proc.wait()
    assert lost == [], f"{len(lost)} of {ROUNDS} rounds lost a field"
