"""Nothing a server, bundle or file controls reaches the terminal raw: the CLI's stream guard.

Run as the real program (``kairox.cli.main`` in a subprocess), since the guard wraps the
process's stdout and stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from security_helpers import cli_env

from kairox._text import stream_safe

KAIROX = [sys.executable, "-c", "import sys; from kairox.cli import main; sys.exit(main())"]
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
