"""The transport contract's shared pieces: the stderr record of a server (StderrBuffer)."""

from __future__ import annotations

from kairox_mcp import Diagnostics, StderrBuffer

SECRET_URL = "https://user:hunter2@example.com/mcp?token=abcdef123456"


def test_stderr_keeps_the_head_and_a_bounded_tail_and_counts_what_it_dropped() -> None:
    buf = StderrBuffer(head=2, max_bytes=100)
    for i in range(10_000):
        buf.append(f"line {i}\n")
    lines = buf.lines()
    assert lines[:3] == ["line 0", "line 1", f"[... {buf.dropped} lines dropped ...]"]
    assert lines[-1] == "line 9999" and buf.total_lines == 10_000
    assert sum(len(line) + 1 for line in lines[3:]) <= 100  # the tail stays within max_bytes
    assert buf.dropped == 10_000 - len(lines) + 1


def test_a_long_line_is_cut_not_split_so_redaction_sees_it_whole() -> None:
    buf = StderrBuffer(max_line=200)
    buf.append("x" * 150 + f" {SECRET_URL} " + "y" * 5000)
    [line] = buf.lines()  # one line: a piece holding half the URL would escape redaction
    assert line.startswith("x" * 150) and line.endswith(" [...]")
    assert "hunter2" not in line and "abcdef123456" not in line


def test_what_is_read_back_is_redacted_every_way() -> None:
    diag = Diagnostics()
    diag.stderr.append(f"connecting to {SECRET_URL}")
    shown = [*diag.stderr.lines(), *diag.stderr.tail(1), diag.stderr.text(), diag.summary()]
    assert all("hunter2" not in s and "abcdef123456" not in s for s in shown)
    assert all("example.com" in s for s in shown)
