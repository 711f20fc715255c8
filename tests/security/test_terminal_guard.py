"""Nothing a server, bundle or file controls reaches the terminal raw: the CLI's stream guard.

Run as the real program (``kairox_cli.main`` in a subprocess), since the guard wraps the
process's stdout and stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from security_helpers import cli_env

from kairox.ext import terminal_safe
from kairox_cli._main import stream_safe

KAIROX = [sys.executable, "-c", "import sys; from kairox_cli import main; sys.exit(main())"]
# what must never come out raw: ESC (every sequence starts with it), BEL, C1 CSI/OSC, RLO
RAW = ("\x1b", "\x07", "\x9b", "\x9d", "\u202e")
EVIL = "a\x1b]52;c;ZXZpbA==\x07b\x1b[2Jc\x9b31m\u202ed\x1b]0;TITLE\x07"


def run(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KAIROX, "-w", str(ws), *args],
        env=cli_env(home),
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_escape_sequences_from_a_workspace_never_reach_the_terminal(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {f"srv{EVIL}": {"command": f"run{EVIL}"}}}))
    (ws / "evil.txt").write_text(f"file {EVIL}\n", encoding="utf-8")
    outputs = [
        run(ws, home, "status"),
        run(ws, home, "mcp", "list"),
        run(ws, home, "config", "show"),
        run(ws, home, "tools", "call", "fs.read", "--args", json.dumps({"path": "evil.txt", "line_numbers": False})),
        run(ws, home, "tools", "call", f"srv{EVIL}_x"),
        run(ws, home, "trust"),
    ]
    for p in outputs:
        for raw in RAW:
            assert raw not in p.stdout and raw not in p.stderr, (p.args, p.stdout, p.stderr)
    assert "\\x1b]52" in outputs[3].stdout  # shown, visibly
    status = run(ws, home, "status", "--json")
    data = json.loads(status.stdout)  # still valid JSON, meaning the same strings
    assert any(s["name"] == f"srv{EVIL}" for s in data["servers"])
    for raw in RAW:
        assert raw not in status.stdout


@given(st.text())
def test_the_guard_leaves_json_valid_and_nothing_unsafe(text: str) -> None:
    encoded = stream_safe(json.dumps({"v": text}, ensure_ascii=False))
    assert json.loads(encoded) == {"v": text}
    for ch in encoded:
        code = ord(ch)
        assert not (code < 0x20 and ch not in "\t\n\r")
        assert not (0x7F <= code <= 0x9F)
        assert not (0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069 or ch in "\u200e\u200f\u061c")


# -- kairox.ext.terminal_safe, the escaping every text output goes through --------------------------

BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}

#: C0 controls, DEL and C1 controls (category Cc) but tab, and the bidi controls
UNSAFE = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x09} | BIDI

assert {c for c in UNSAFE - BIDI} == {chr(c) for c in range(0xA0) if unicodedata.category(chr(c)) == "Cc"} - {"\t"}


outside_text = (
    st.lists(
        st.sampled_from(sorted(UNSAFE)) | st.characters() | st.sampled_from(["\t", "\\", "x", "é", "\u202f"]),
        max_size=40,
    ).map("".join)
    | st.text()
)


def each_unsafe_character(test: Any) -> Any:
    """An example per unsafe character (and mode): the random search may miss one of 76."""
    for ch in sorted(UNSAFE):
        test = example(f"a{ch}b", False)(example(f"a{ch}b", True)(test))
    return test


@given(outside_text, st.booleans())
@example("\x1b]52;c;ZXZpbA==\x07", False)
@example("ok\u202egpj.exe\nline two\r", True)
@example("a\x85b\x9bc\x7f", False)
@each_unsafe_character
def test_terminal_safe_leaves_no_control_no_bidi_and_keeps_safe_text(text: str, newlines: bool) -> None:
    out = terminal_safe(text, newlines=newlines)
    kept = {"\n"} if newlines else set()
    assert not [c for c in out if c in UNSAFE - kept], repr(out)
    if newlines:
        assert out.count("\n") == text.count("\n"), "newlines are kept"
    if not any(c in UNSAFE - kept for c in text):
        assert out == text, "text without unsafe characters is returned unchanged"
