"""``kairox_serve.audit.AuditLog``: the audit lines as written to a real file."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox import ConfigError
from kairox_serve.audit import AuditLog, arguments_digest
from kairox_serve.config import AuditConfig


def _record(**extra: object) -> dict[str, object]:
    return {"time": "t", "principal": "alice", "tool": "wb.echo", "outcome": "ok", "detail": "", **extra}


@settings(max_examples=60, deadline=None)
@given(
    arguments=st.dictionaries(st.text(max_size=20), st.text(max_size=3000), max_size=8),
    detail=st.text(max_size=5000),
    max_line=st.integers(1024, 8192),
)
def test_a_line_is_bounded_json(arguments: dict[str, str], detail: str, max_line: int) -> None:
    log = AuditLog(AuditConfig(file="-", arguments=True, max_line=max_line))
    line = log.line(_record(detail=detail, arguments=arguments, arguments_sha256=arguments_digest(arguments)))
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and len(line) <= max_line
    record = json.loads(line)  # never cut mid-JSON: fields are dropped or shortened first
    assert record["principal"] == "alice" and record["arguments_sha256"] == arguments_digest(arguments)
    assert record["arguments"] in (arguments, None)


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    logs = [AuditLog(AuditConfig(file=str(path))) for _ in range(4)]
    for log in logs:
        log.open()

    def write(n: int) -> None:
        for i in range(200):
            logs[n].write(_record(detail=f"{n}-{i}-" + "x" * 2000))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for log in logs:
        log.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 800
    assert sorted(json.loads(line)["detail"].split("-x")[0] for line in lines) == sorted(
        f"{n}-{i}" for n in range(4) for i in range(200)
    )
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_link_or_a_fifo_at_the_audit_path_is_refused(tmp_path: Path) -> None:
    # the attack: a link planted at the audit path (a shared folder) to a shell's rc file;
    # the lines quote callers' text, so appending them there would run it at the next login
    rc = tmp_path / "bashrc"
    rc.write_text("# mine\n")
    link = tmp_path / "audit.jsonl"
    link.symlink_to(rc)
    log = AuditLog(AuditConfig(file=str(link)))
    with pytest.raises(ConfigError, match="symbolic link") as caught:
        log.open()
    assert caught.value.path == "serve.audit.file"
    log.write({"principal": "$(touch /tmp/pwned)"})
    log.close()
    assert rc.read_text() == "# mine\n"
    # a FIFO would block the gateway's start until something reads it
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"fifo\.jsonl") as caught:  # no reader: ENXIO, at once
        AuditLog(AuditConfig(file=str(fifo))).open()
    assert caught.value.path == "serve.audit.file"
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(ConfigError, match=r"folder\.jsonl"):
        AuditLog(AuditConfig(file=str(folder))).open()
    # a regular file is appended to, as before
    good = AuditLog(AuditConfig(file=str(tmp_path / "ok.jsonl")))
    good.open()
    good.write({"principal": "alice"})
    good.close()
    assert json.loads((tmp_path / "ok.jsonl").read_text())["principal"] == "alice"
