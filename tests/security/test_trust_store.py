"""``$KAIROX_HOME/trust.json``: concurrent writers lose nothing, a broken file trusts nothing.

Written as the attack on the store: many ``kairox trust`` runs at once (each a
read-modify-write), a file someone (or a crash, or a disk) left corrupt, and arbitrary
bytes or JSON in its place. The file is the user's own, so a bad one must never grant
trust, and reading it must never take a command down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from security_helpers import Attack, Clone, cli, marker_command, pending_of, server_toml, servers_of, write_bundle

from kairox.ext import Declared, TrustState, TrustStore, WorkspaceTrust
from kairox_testing import KairoxHarness

WORKERS = 8
ROUNDS = 12

#: one worker: waits for the start file, then trusts ROUNDS workspaces of its own and adds one
#: item per round to a workspace every worker shares (``kairox plugin trust``: replace=False)
WORKER = """
import os, sys, time
from pathlib import Path
from kairox.ext import Declared, TrustStore

home, base, me, rounds, go = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
while not go.exists():
    time.sleep(0.001)
for r in range(rounds):
    store = TrustStore(home)
    store.trust(base / f"ws-{me}-{r}", [Declared(f"mcp_servers.s{r}", "mcp_servers", f"s{r}", "x", f"d-{me}-{r}")])
    store.trust(base / "shared", [Declared(f"bundle:{me}-{r}", "bundle", me, "x", f"d-{me}-{r}")], replace=False)
"""

#: a reader that, while the writers run, must never see a half-written or unparsable file
READER = """
import sys, time
from pathlib import Path
from kairox.ext import TrustStore

home, go, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
store, reads, problems = TrustStore(home), 0, []
while not stop.exists():
    store.records()
    reads += 1
    if store.problem:
        problems.append(store.problem)
print(reads, len(problems), problems[:3])
"""


def item(key: str, digest: str = "d") -> Declared:
    return Declared(key, "mcp_servers", key, "kairox.toml", digest)


def test_concurrent_trust_runs_lose_no_record(tmp_path: Path) -> None:
    home, base = tmp_path / "home", tmp_path / "workspaces"
    go, stop = tmp_path / "go", tmp_path / "stop"
    argv = [sys.executable, "-c"]
    writers = [
        subprocess.Popen([*argv, WORKER, str(home), str(base), f"w{i}", str(ROUNDS), str(go)]) for i in range(WORKERS)
    ]
    reader = subprocess.Popen([*argv, READER, str(home), str(go), str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # every interpreter is up and waiting
        go.touch()
        codes = [w.wait(timeout=120) for w in writers]
    finally:
        stop.touch()
        try:
            out, _ = reader.communicate(timeout=60)
        finally:
            for p in [*writers, reader]:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    assert codes == [0] * WORKERS
    reads, problems, sample = out.split(maxsplit=2)
    assert int(reads) > 0 and problems == "0", f"a reader saw a broken file: {sample}"

    records = TrustStore(home).records()
    expected = {os.path.realpath(base / f"ws-w{i}-{r}") for i in range(WORKERS) for r in range(ROUNDS)}
    assert expected - set(records) == set(), "records were lost"
    for i in range(WORKERS):
        for r in range(ROUNDS):
            assert records[os.path.realpath(base / f"ws-w{i}-{r}")].items == {f"mcp_servers.s{r}": f"d-w{i}-{r}"}
    shared = records[os.path.realpath(base / "shared")].items
    assert shared == {f"bundle:w{i}-{r}": f"d-w{i}-{r}" for i in range(WORKERS) for r in range(ROUNDS)}
    assert not (home / "trust.json.broken").exists()


def test_trust_replaces_the_record_and_revoke_forgets_it(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    store.trust(tmp_path / "ws", [item("a"), item("b")])
    store.trust(tmp_path / "ws", [item("c")], replace=False)
    assert store.get(tmp_path / "ws").items == {"a": "d", "b": "d", "c": "d"}  # type: ignore[union-attr]
    store.trust(tmp_path / "ws", [item("b", "d2")])  # `kairox trust`: exactly what it declares now
    assert store.get(tmp_path / "ws").items == {"b": "d2"}  # type: ignore[union-attr]
    assert store.revoke(tmp_path / "ws", ["nope"]) is False
    assert store.revoke(tmp_path / "ws", ["b"]) is True and store.get(tmp_path / "ws").items == {}  # type: ignore[union-attr]
    assert store.revoke(tmp_path / "ws") is True and store.get(tmp_path / "ws") is None
    assert store.revoke(tmp_path / "ws") is False


def test_a_workspace_is_trusted_by_its_resolved_path(tmp_path: Path) -> None:
    """A symlink to a trusted workspace is the same workspace; a copy of it is not."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    TrustStore(tmp_path / "home").trust(tmp_path / "link", [item("a")])
    assert WorkspaceTrust.load(real, tmp_path / "home").check(item("a")) is TrustState.TRUSTED
    assert WorkspaceTrust.load(tmp_path / "copy", tmp_path / "home").check(item("a")) is TrustState.UNTRUSTED


def test_kairox_trust_list_and_revoke(attack: Attack, harness: KairoxHarness) -> None:
    empty = cli(harness, "trust", "--list")
    assert (empty.exit_code, empty.stdout) == (0, "(no trusted workspaces)\n")
    other = attack.workspace.parent / "other"
    other.mkdir()
    assert cli(harness, "trust").exit_code == 0
    assert cli(harness, "trust", str(other)).stdout.startswith(f"trusting {other}")

    listed = cli(harness, "trust", "--list")
    n = len(TrustStore(attack.home).get(attack.workspace).items)  # type: ignore[union-attr]
    assert n >= 9 and listed.stdout.splitlines() == sorted([f"{attack.workspace}  ({n} items)", f"{other}  (0 items)"])
    data = json.loads(cli(harness, "trust", "--list", "--json").stdout)
    assert {w["path"] for w in data["workspaces"]} == {str(attack.workspace), str(other)}
    assert "mcp_servers.evil" in next(w for w in data["workspaces"] if w["path"] == str(attack.workspace))["items"]

    revoked = cli(harness, "trust", "--revoke")
    assert revoked.stdout == f"no longer trusting {attack.workspace}\n"
    assert cli(harness, "trust", "--revoke").stdout == f"was not trusted: {attack.workspace}\n"
    assert [r.path for r in TrustStore(attack.home).records().values()] == [str(other)]
    status = json.loads(cli(harness, "status", "--json").stdout)
    assert status["trust"]["trusted"] is False and {s["state"] for s in status["servers"]} == {"untrusted"}
    assert attack.ran() == {}


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"workspaces": ',
        b"\xff\xfe\x00garbage",
        b"[]",
        b'{"workspaces": []}',
        b'{"workspaces": {"WS": {"items": ["mcp_servers.evil"]}}}',
        b'{"workspaces": {"WS": {"items": {"mcp_servers.evil": 1}}}}',
        b'{"workspaces": {"WS": "everything"}}',
    ],
    ids=["truncated-object", "truncated", "not-utf8", "a-list", "workspaces-list", "items-list", "digest-int", "str"],
)
def test_a_corrupt_trust_file_trusts_nothing_and_the_next_write_keeps_a_broken_copy(
    attack: Attack, harness: KairoxHarness, no_leftovers: None, content: bytes
) -> None:
    content = content.replace(b"WS", str(attack.workspace).encode())
    trust_file = attack.home / "trust.json"
    trust_file.write_bytes(content)

    probe = TrustStore(attack.home)
    probe.records()
    unreadable = bool(probe.problem)

    status = json.loads(cli(harness, "status", "--json").stdout)
    assert status["trust"]["pending"], status["trust"]
    assert {s["state"] for s in status["servers"] if s["name"] in ("evil", "jsonevil", "evil-bundle")} == {"untrusted"}
    assert attack.ran() == {} and attack.listener.connections == 0
    listed = cli(harness, "trust", "--list")
    assert str(attack.workspace) not in listed.stdout or "(0 items)" in listed.stdout

    assert cli(harness, "trust").exit_code == 0
    store = TrustStore(attack.home)
    assert store.get(attack.workspace) is not None and store.problem == ""
    broken = attack.home / "trust.json.broken"
    if unreadable:
        assert broken.read_bytes() == content, "the unreadable file must be kept, not silently replaced"
    else:  # a well-formed file that trusted nothing is built on, not moved away
        assert not broken.exists()
    cli(harness, "status")
    assert {"toml-mcp", "json-mcp"} <= set(attack.ran())


def test_an_unparsable_trust_file_is_reported_by_status(attack: Attack, harness: KairoxHarness) -> None:
    (attack.home / "trust.json").write_text("{oops")
    status = cli(harness, "status")
    assert (
        "trust:     ! " in status.stdout and "not valid JSON" in status.stdout and "trusting nothing" in status.stdout
    )
    assert "not valid JSON" in json.loads(cli(harness, "status", "--json").stdout)["trust"]["problem"]
    assert "not valid JSON" in cli(harness, "trust", "--list").stderr


# -- arbitrary content ---------------------------------------------------------------------------

WS = "/work/the-workspace"
KEY = "mcp_servers.git"
DIGEST = "a" * 64

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
#: values shaped almost like a trust file, with our workspace and key in them
near_miss = st.fixed_dictionaries(
    {
        "workspaces": st.dictionaries(
            st.sampled_from([WS, WS + "/", "/work", ""]) | st.text(max_size=8),
            json_values
            | st.fixed_dictionaries(
                {
                    "items": json_values
                    | st.dictionaries(
                        st.sampled_from([KEY, KEY.upper(), KEY + " ", "bundle:x"]) | st.text(max_size=8),
                        json_values | st.sampled_from([DIGEST, DIGEST.upper(), DIGEST[:-1], ""]),
                        max_size=4,
                    )
                },
                optional={"trusted_at": json_values},
            ),
            max_size=4,
        )
    },
    optional={"version": json_values},
)


def _records(content: bytes) -> tuple[TrustStore, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as home:
        Path(home, "trust.json").write_bytes(content)
        store = TrustStore(home)
        return store, store.records()


@given(st.binary(max_size=300))
@example(b"")
@example(b"\x00")
@example(b"null")
@example(b'{"workspaces": null}')
def test_arbitrary_bytes_never_raise_and_trust_nothing_unexpected(content: bytes) -> None:
    store, records = _records(content)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        assert records == {} and "cannot read" in store.problem
        return
    if not text.strip():  # an empty file is no file
        assert records == {} and store.problem == ""
        return
    try:
        data = json.loads(text)
    except ValueError:
        assert records == {} and "trusting nothing" in store.problem
        return
    _check_against(data, records)


@given(json_values | near_miss)
@example({"workspaces": {WS: {"items": {KEY: DIGEST}, "trusted_at": 1.5}}})
@example({"workspaces": {WS: {"items": {KEY: DIGEST}, "trusted_at": "yesterday"}}})
@example({"workspaces": {WS: {"items": {KEY: DIGEST + " "}}}})
@example({"workspaces": {WS: {"items": {KEY: [DIGEST]}}}})
def test_arbitrary_json_never_raises_and_trusts_exactly_what_it_records(data: Any) -> None:
    _store, records = _records(json.dumps(data).encode())
    _check_against(data, records)


def _check_against(data: Any, records: dict[str, Any]) -> None:
    """A record only for a workspace entry with an ``items`` object; an item trusted only by its exact digest."""
    workspaces = data.get("workspaces", {}) if isinstance(data, dict) else None
    if not isinstance(workspaces, dict):
        assert records == {}
        return
    for path, record in records.items():
        entry = workspaces[path]
        assert isinstance(entry, dict) and isinstance(entry["items"], dict)
        assert record.items == {k: v for k, v in entry["items"].items() if isinstance(v, str)}
    expected_paths = {p for p, e in workspaces.items() if isinstance(e, dict) and isinstance(e.get("items"), dict)}
    assert set(records) == expected_paths
    record = records.get(WS)
    trust = WorkspaceTrust(WS, record)
    state = trust.check(Declared(KEY, "mcp_servers", "git", "kairox.toml", DIGEST))
    wanted = TrustState.TRUSTED if record is not None and record.items.get(KEY) == DIGEST else None
    if wanted is None:
        assert not state.allowed, f"{KEY} trusted by {data!r}"
    else:
        assert state is wanted


# -- bugs found while writing these tests (each test failed before its fix) ---------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"workspaces": {"/x": {"items": {}, "trusted_at": 1' + "0" * 5000 + "}}}",
        '{"workspaces": {"/x": {"items": {}, "trusted_at": 1' + "0" * 400 + "}}}",
    ],
    ids=["deeply-nested", "too-many-digits", "huge-trusted-at"],
)
def test_pathological_json_in_the_trust_file_never_raises(tmp_path: Path, text: str) -> None:
    (tmp_path / "trust.json").write_text(text)
    store = TrustStore(tmp_path)
    assert store.get("/x") is None or store.get("/x").items == {}  # type: ignore[union-attr]
    store.trust(tmp_path / "ws", [item("a")])
    assert store.get(tmp_path / "ws") is not None


# -- `kairox plugin trust ONE` records that one only -------------------------------------------


def test_trusting_one_bundle_leaves_the_rest_untrusted_and_revoking_it_forgets_the_workspace(
    clone: Clone, no_leftovers: None
) -> None:
    clone.write("kairox.toml", server_toml("evil", marker_command(clone.markers, "evil")))
    for name in ("one", "two"):
        write_bundle(
            clone.workspace / ".kairox" / "plugins" / name,
            name,
            clone.markers,
            hook_marker=f"{name}-hook",
            server_marker=f"{name}-mcp",
        )

    assert cli(clone.harness, "plugin", "trust", "one").exit_code == 0
    status = clone.status()
    assert status["trust"]["trusted"] is False
    assert pending_of(status) == {"mcp_servers.evil": "untrusted", "bundle:.kairox/plugins/two": "untrusted"}
    servers = servers_of(status)
    assert servers["one"]["state"] == "ready"
    for name in ("evil", "two", "two:helper"):
        assert servers[name]["state"] == "untrusted", servers[name]
        assert "changed since trusted" not in servers[name]["detail"], servers[name]
    assert clone.ran() <= {"one-mcp"}, "only the trusted bundle may run"

    assert cli(clone.harness, "plugin", "trust", "--revoke", "one").exit_code == 0
    assert TrustStore(clone.home).get(clone.workspace) is None, "nothing of it is trusted: no record"
    status = clone.status()
    assert servers_of(status)["one"]["state"] == "untrusted"
    assert set(pending_of(status).values()) == {"untrusted"}
