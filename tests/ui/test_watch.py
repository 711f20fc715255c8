"""``kairox watch``: the terminal live view, run as the real CLI against real stdio MCP servers.

The workspaces live under ``tmp_path`` with their own ``KAIROX_HOME`` that trusts them
(``kairox_testing.trust_workspace``), except where the test is about an untrusted one. The
in-place view runs on a pseudo-terminal; :class:`Screen` replays what it wrote with the
few sequences the view may use and fails on any other escape sequence.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from peers import KAIROX_TEST_GRACES, default_signals, fixture_server
from shared_helpers import on_pty, read_pty

from kairox import ServerState, ServerStatus
from kairox_testing import KairoxHarness, trust_workspace
from kairox_ui.watch import (
    _var_references,
    cell_width,
    event_lines,
    fit,
    redact_record,
    redact_text,
    render_frame,
    server_lines,
    status_record,
)

#: a server name that would set the terminal's title and clear the screen if written raw
EVIL = "ev\x1b]0;pwned\x07il\x1b[2J"
EVIL_SHOWN = "ev\\x1b]0;pwned\\x07il\\x1b[2J"
COLS, ROWS = 110, 30


# -- helpers ------------------------------------------------------------------------------


def _cli() -> list[str]:
    """The kairox CLI as a process (the stdio transport's test-sized graces)."""
    return list(KAIROX_TEST_GRACES)


def _workspace(
    tmp_path: Path, servers: dict[str, list[str]], *, trusted: bool = True, extra: str = ""
) -> tuple[Path, dict[str, str]]:
    """A workspace declaring ``servers`` (name -> argv) and the environment of a CLI whose
    home (``KAIROX_HOME``) trusts it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    lines = []
    for name, argv in servers.items():
        lines += [f"[mcp_servers.{json.dumps(name)}]", f"command = {json.dumps(argv[0])}"]
        lines += [f"args = {json.dumps(argv[1:])}", ""]
    (ws / "kairox.toml").write_text("\n".join(lines) + extra)
    env = {"PATH": "/usr/bin:/bin", "KAIROX_HOME": str(home), "HOME": str(home), "TERM": "xterm"}
    if trusted:
        trust_workspace(ws, home, env=env)
    return ws, env


def _run(ws: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_cli(), "-w", str(ws), "watch", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _in_process(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``kairox -w ws watch ARGS`` in process (``KairoxHarness.cli``: stdout and stdin no
    terminal, as :func:`_run`'s); :func:`_run` runs the program."""
    result = KairoxHarness(ws, Path(env["KAIROX_HOME"]), env=env).cli("watch", *args, load_entrypoints=True)
    return subprocess.CompletedProcess(["kairox", "watch", *args], result.exit_code, result.stdout, result.stderr)


def _no_controls(text: str) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def _read_until(stream: Any, pattern: str, timeout: float) -> str:
    """Lines of ``stream`` (a text pipe) until one matches ``pattern``; all of them."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    fd = stream.fileno()
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        for raw in done:
            line = raw.decode()
            seen.append(line)
            if re.search(pattern, line):
                return "\n".join(seen)
    raise AssertionError(f"no line matching {pattern!r} within {timeout} s; got:\n" + "\n".join(seen))


@contextlib.contextmanager
def _live(ws: Path, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [*_cli(), "-w", str(ws), "watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        preexec_fn=default_signals,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


class Screen:
    """A terminal of ``rows`` x ``cols`` replaying the view's output; only the sequences the
    view writes are known (cursor up, erase line, erase below, home, clear, cursor shown or
    hidden, the states' colours and reset): any other escape sequence fails the test.
    ``frames`` holds the screen after each frame (each ends with erase-below), as text."""

    TOKEN = re.compile(
        r"\x1b\[(\d*)([AKJH])|\x1b\[2J|\x1b\[\?25[lh]|\x1b\[(?:0|2|32|33|35|1;31)m|\x1b|[\r\n]|[^\x1b\r\n]+"
    )

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.lines: list[str] = [""]
        self.row = self.col = 0
        self.top = 0  # the first line of the frame being drawn
        self.frames: list[list[str]] = []

    def feed(self, text: str) -> None:
        for m in self.TOKEN.finditer(text):
            tok = m.group(0)
            if tok == "\x1b":
                raise AssertionError(f"unexpected escape sequence at {text[m.start() : m.start() + 12]!r}")
            if tok.startswith("\x1b[?25") or tok.endswith("m"):
                continue
            if tok == "\x1b[2J":
                self.lines = [""] * (self.row + 1)
                continue
            if m.group(2):
                self._csi(int(m.group(1) or 1), m.group(2))
            elif tok == "\r":
                self.col = 0
            elif tok == "\n":
                self.row += 1
                if self.row >= len(self.lines):
                    self.lines.append("")
            else:
                line = self.lines[self.row].ljust(self.col)
                self.lines[self.row] = line[: self.col] + tok + line[self.col + len(tok) :]
                self.col += len(tok)

    def _csi(self, n: int, op: str) -> None:
        if op == "A":
            self.row = self.top = max(0, self.row - n)
        elif op == "K":
            self.lines[self.row] = self.lines[self.row][: self.col]
        elif op == "J":
            self.lines[self.row] = self.lines[self.row][: self.col]
            del self.lines[self.row + 1 :]
            self.frames.append(self.lines[self.top : self.row])
        elif op == "H":
            self.row = self.col = self.top = 0


Step = tuple[Callable[[list[str]], bool], Callable[[subprocess.Popen[bytes], int], None]]


def _ctrl_c(proc: subprocess.Popen[bytes], master: int) -> None:
    proc.send_signal(signal.SIGINT)


def _press_q(proc: subprocess.Popen[bytes], master: int) -> None:
    os.write(master, b"q")  # a key typed on the terminal, no Enter (seen at once: cbreak mode)


def _shows(pattern: str) -> Callable[[list[str]], bool]:
    return lambda frame: any(re.search(pattern, line) for line in frame)


def _pty_watch(
    ws: Path, env: dict[str, str], *steps: Step, timeout: float = 90, size: tuple[int, int] = (ROWS, COLS)
) -> tuple[str, int, Screen]:
    """Run ``kairox watch`` on a pseudo-terminal of ROWS x COLS; each time the last frame
    drawn satisfies the next step's condition, do its action (the last one: Ctrl-C, which
    is SIGINT). Returns what it wrote, its exit code and the replayed screen."""
    todo = list(steps)
    argv = [*_cli(), "-w", str(ws), "watch"]
    with on_pty(argv, stdout_too=True, size=size, env=env, preexec_fn=default_signals, start_new_session=True) as (
        proc,
        master,
    ):

        def next_steps(raw: bytes) -> None:
            frames = screen_of(raw, partial=True).frames
            while todo and frames and todo[0][0](frames[-1]):
                todo.pop(0)[1](proc, master)

        raw = read_pty(master, proc, timeout=timeout, on_output=next_steps)
        last = screen_of(raw).frames[-1:] or [[]]
        assert not todo, f"{len(todo)} steps never came; the last frame:\n" + "\n".join(last[0])
        code = proc.wait(timeout=30)
    return raw.decode("utf-8", "replace"), code, screen_of(raw)


#: an escape sequence the read stopped in the middle of (the rest is still on its way)
_CUT_SEQUENCE = re.compile(r"\x1b(\[[\d?]*)?\Z")


def screen_of(raw: bytes, *, partial: bool = False) -> Screen:
    """The screen ``raw`` draws; with ``partial`` (output still coming), an escape sequence
    cut at the end of what was read so far waits for the next read instead of failing."""
    text = raw.decode("utf-8", "replace")
    screen = Screen(ROWS, COLS)
    screen.feed(_CUT_SEQUENCE.sub("", text) if partial else text)
    return screen


# -- the in-place view ---------------------------------------------------------------------


@pytest.mark.integration
def test_on_a_terminal_a_server_goes_from_starting_to_ready_in_place(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(
        tmp_path,
        {"slow": [*fixture_server("slow_start"), "--delay", "2"], EVIL: fixture_server("well_behaved")},
    )
    text, code, screen = _pty_watch(ws, env, (_shows(r"^\s+slow\s+mcp\s+ready\s+2 tools"), _ctrl_c))
    assert code == 130, text
    frames = screen.frames
    starting = [n for n, f in enumerate(frames) if any(re.search(r"~ slow\s+mcp\s+starting", line) for line in f)]
    ready = [n for n, f in enumerate(frames) if any(re.search(r"  slow\s+mcp\s+ready\s+2 tools", line) for line in f)]
    assert starting and ready and starting[0] < ready[0], "\n".join(frames[-1])
    # redrawn in place: every frame starts at the same line, and none is taller than the terminal
    assert all(len(f) <= ROWS for f in frames)
    assert all(cell_width(line) < COLS for f in frames for line in f)
    last = frames[-1]
    assert last[0].startswith("kairox watch ")
    assert sum(1 for line in last if re.search(r"\bslow\s+mcp\s", line)) == 1  # one state line, updated
    assert any("McpServerReady server=slow tools=2" in line for line in last)  # the trace below
    # the hostile name is shown escaped; its sequences never reach the terminal
    assert any(EVIL_SHOWN in line for line in last)
    assert "\x1b]" not in text and "\x07" not in text and "il\x1b[2J" not in text
    assert text.rstrip().endswith("every server was shut down")
    assert "\x1b[?25h" in text  # the cursor is shown again


@pytest.mark.integration
def test_q_quits_and_stops_every_server(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved")})
    text, code, screen = _pty_watch(ws, env, (_shows(r"^\s+good\s+mcp\s+ready"), _press_q))
    assert code == 0, text
    assert screen.frames[-1][0].startswith("kairox watch")
    assert "\x1b[?25h" in text  # the cursor is shown again


@pytest.mark.integration
def test_states_are_coloured_on_a_terminal_unless_no_color(tmp_path: Path, no_leftovers: None) -> None:
    servers = {"good": fixture_server("well_behaved"), "bad": fixture_server("crash_on_start")}
    ws, env = _workspace(tmp_path, servers)

    def both(frame: list[str]) -> bool:
        return _shows(r"good\s+mcp\s+ready")(frame) and _shows(r"bad\s+mcp\s+failed")(frame)

    text, code, _ = _pty_watch(ws, env, (both, _ctrl_c))
    assert code == 130, text
    assert re.search(r"good\s+mcp\s+\x1b\[32mready\x1b\[0m", text)
    assert re.search(r"bad\s+mcp\s+\x1b\[1;31mfailed\x1b\[0m", text)
    text, code, _ = _pty_watch(ws, {**env, "NO_COLOR": "1"}, (both, _ctrl_c))
    assert code == 130, text
    assert not re.search(r"\x1b\[[\d;]*m", text)


@pytest.mark.integration
def test_the_trace_keeps_only_what_fits_the_terminal(tmp_path: Path, no_leftovers: None) -> None:
    servers = {f"s{n:02d}": fixture_server("well_behaved") for n in range(12)}
    ws, env = _workspace(tmp_path, servers)
    text, code, screen = _pty_watch(ws, env, (_shows(r"ProviderReady provider=mcp"), _ctrl_c))
    assert code == 130, text
    last = screen.frames[-1]
    assert len(last) <= ROWS - 1
    assert any(line.startswith("--- trace ") for line in last)
    # 12 servers x (starting, ready, tools changed) and more: the first events scrolled away
    assert not any("ProviderStarting provider=mcp" in line for line in last), "\n".join(last)


@pytest.mark.integration
def test_a_terminal_that_reports_no_size_gets_80_by_24(tmp_path: Path, no_leftovers: None) -> None:
    """A pty nobody set a window size on says 0 x 0: the view falls back to 80 x 24 (as
    shutil.get_terminal_size does) instead of drawing frames of nothing."""
    ws, env = _workspace(tmp_path, {f"server-{n}": fixture_server("well_behaved") for n in range(2)})
    assert "COLUMNS" not in env and "LINES" not in env

    def both_ready(frame: list[str]) -> bool:
        return all(any(re.search(rf"server-{n}\s+mcp\s+ready", line) for line in frame) for n in range(2))

    text, code, screen = _pty_watch(ws, env, (both_ready, _ctrl_c), size=(0, 0))
    assert code == 130, text
    last = screen.frames[-1]
    assert last[0].startswith("kairox watch")
    assert any(re.search(r"server-0\s+mcp\s+ready", line) for line in last)
    assert all(len(f) <= 23 for f in screen.frames) and max(cell_width(line) for line in last) <= 79
    assert any(cell_width(line) > 40 for line in last)  # the width used is 80, not 1


@pytest.mark.integration
def test_a_resized_terminal_gets_a_frame_that_fits_it(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {f"server-{n}": fixture_server("well_behaved") for n in range(3)})

    def shrink(proc: subprocess.Popen[bytes], master: int) -> None:
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 8, 40, 0, 0))
        proc.send_signal(signal.SIGWINCH)  # what the terminal sends its foreground processes

    def small(frame: list[str]) -> bool:
        return len(frame) <= 7 and all(cell_width(line) <= 39 for line in frame)

    text, code, screen = _pty_watch(ws, env, (_shows(r"ProviderReady provider=mcp"), shrink), (small, _ctrl_c))
    assert code == 130, text
    assert "\x1b[H\x1b[2J" in text  # redrawn from the top: the old frame wrapped anew
    last = screen.frames[-1]
    assert last[0].startswith("kairox watch")
    assert any(re.search(r"server-0\s+mcp\s+ready", line) for line in last)


# -- plain lines and JSON lines --------------------------------------------------------------


@pytest.mark.integration
def test_piped_it_appends_plain_lines_and_sigint_stops_every_server(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved"), EVIL: fixture_server("crash_on_start")})
    with _live(ws, env) as proc:
        # every MCP server has settled (ready or failed) once their provider is ready
        seen = _read_until(proc.stdout, r"ProviderReady provider=mcp$", timeout=60)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    everything = seen + out.decode()
    assert "\x1b" not in everything
    assert re.search(r"^\S+\s+good\s+mcp\s+ready\s+\d+ tools", everything, re.M)
    assert re.search(r"McpServerStarting server=good transport=stdio", everything)
    assert f"McpServerFailed server={EVIL_SHOWN}" in everything
    assert "| crash_on_start: fatal: cannot open /nonexistent/config.toml" in everything
    assert "every server was shut down" in err.decode()


@pytest.mark.integration
def test_a_reader_that_goes_away_ends_the_watch_cleanly(tmp_path: Path, no_leftovers: None) -> None:
    # the server is ready 2 s after it starts: the watch writes again after the reader left
    ws, env = _workspace(tmp_path, {"slow": [*fixture_server("slow_start"), "--delay", "2"]})
    with _live(ws, env) as proc:
        assert proc.stdout is not None
        _read_until(proc.stdout, r"McpServerStarting server=slow", timeout=60)
        proc.stdout.close()  # `kairox watch | head -1`
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err


@pytest.mark.integration
def test_json_writes_one_object_per_event_per_line(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved"), "bad": fixture_server("crash_on_start")})
    with _live(ws, env, "--json") as proc:
        seen = _read_until(proc.stdout, r'"provider": "mcp", "kind": "ProviderReady"', timeout=60)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    records = [json.loads(line) for line in (seen + "\n" + out.decode()).splitlines() if line.strip()]
    kinds = [r["kind"] for r in records]
    assert "McpServerStarting" in kinds and "McpServerReady" in kinds
    failed = next(r for r in records if r["kind"] == "McpServerFailed")
    assert failed["server"] == "bad" and failed["exit_code"] == 3
    assert "crash_on_start: fatal: cannot open /nonexistent/config.toml" in failed["stderr_tail"]
    states = [(r["server"], r["state"]) for r in records if r["kind"] == "ServerStatus"]
    assert ("good", "ready") in states and ("bad", "failed") in states
    assert all("time" in r for r in records)


@pytest.mark.integration
def test_filter_and_server_narrow_the_trace(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved"), "other": fixture_server("well_behaved")})
    with _live(ws, env, "--json", "--filter", "mcpserver*", "--server", "good") as proc:
        seen = _read_until(proc.stdout, r'"kind": "McpServerReady"', timeout=60)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    records = [json.loads(line) for line in (seen + "\n" + out.decode()).splitlines() if line.strip()]
    assert records and all(r["server"] == "good" for r in records)
    assert {r["kind"] for r in records} <= {"ServerStatus", "McpServerStarting", "McpServerReady", "McpServerStopped"}


# -- --once -------------------------------------------------------------------------------


@pytest.mark.integration
def test_once_prints_the_states_and_exits_1_when_a_server_failed(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved"), EVIL: fixture_server("crash_on_start")})
    result = _run(ws, env, "--once")
    assert result.returncode == 1, result.stderr
    assert "\x1b" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].endswith("2 servers: 1 ready, 1 failed")
    assert re.search(r"^\s+good\s+mcp\s+ready\s+\d+ tools", result.stdout, re.M)
    assert re.search(rf"^ ! {re.escape(EVIL_SHOWN)}\s+mcp\s+failed\s+.*exit code 3", result.stdout, re.M)
    assert "      | crash_on_start: fatal: cannot open /nonexistent/config.toml" in lines


@pytest.mark.integration
def test_once_json_and_exit_0_when_all_is_well(tmp_path: Path, no_leftovers: None) -> None:
    ws, env = _workspace(tmp_path, {"good": fixture_server("well_behaved")})
    result = _in_process(ws, env, "--once", "--json")
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    data = json.loads(line)
    assert data["ok"] is True
    (server,) = data["servers"]
    assert (server["server"], server["server_kind"], server["state"]) == ("good", "mcp", "ready")
    assert server["tools"] > 0


@pytest.mark.integration
def test_an_untrusted_workspace_runs_nothing_and_shows_untrusted(tmp_path: Path, no_leftovers: None) -> None:
    marker = tmp_path / "ran"
    attack = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    ws, env = _workspace(tmp_path, {"sneaky": attack}, trusted=False)
    result = _in_process(ws, env, "--once")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^ \? sneaky\s+mcp\s+untrusted", result.stdout, re.M)
    assert "does not run" in result.stderr  # as every activating command says
    assert not marker.exists()


@pytest.mark.integration
def test_secrets_in_the_config_are_never_printed(tmp_path: Path, no_leftovers: None) -> None:
    extra = (
        '[mcp_servers.remote]\ntype = "streamable_http"\n'
        'url = "http://alice:hunter2-secret@127.0.0.1:9/mcp?api_key=sk-live-123456"\n'
        'headers = { Authorization = "Bearer tok-abcdef123456" }\nstartup_timeout_sec = 5\n'
        # a secret's value in a field that is not secret: its error quoted it (in the server's
        # line and the "config problem" warning), which pattern redaction cannot know
        '\n[mcp_servers.other]\ncommand = "true"\nenv = { SERVICE_KEY = "svc-key-7f3e9a21" }\n'
        'tool_timeout = "svc-key-7f3e9a21"\n'
    )
    ws, env = _workspace(tmp_path, {}, extra=extra)
    for args in (("--once",), ("--once", "--json")):
        result = _run(ws, env, *args)
        both = result.stdout + result.stderr
        assert "remote" in result.stdout
        assert "expected a number, got '<redacted>'" in result.stdout
        for secret in ("hunter2-secret", "sk-live-123456", "tok-abcdef123456", "svc-key-7f3e9a21"):
            assert secret not in both


def test_the_command_is_registered() -> None:
    result = subprocess.run([*_cli(), "watch", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "--once" in result.stdout and "--filter" in result.stdout


# -- formatting outside text (property tests) -------------------------------------------------

outside_text = st.text(
    st.characters(codec=None, exclude_categories=()) | st.sampled_from(["\x1b", "\x07", "\u202e", "\u200d", "\t"])
)


@given(outside_text, st.integers(min_value=1, max_value=200))
def test_fit_never_exceeds_the_width_nor_emits_controls(text: str, width: int) -> None:
    out = fit(text, width)
    assert cell_width(out) <= width
    assert _no_controls(out)
    out.encode("utf-8")  # no lone surrogate left


@given(outside_text)
def test_fit_keeps_text_that_fits_whole(text: str) -> None:
    safe = fit(text, None)
    assert _no_controls(safe)
    assert fit(text, cell_width(safe)) == safe


@st.composite
def statuses(draw: Any) -> ServerStatus:
    return ServerStatus(
        name=draw(outside_text),
        kind=draw(st.sampled_from(["mcp", "lsp", "dap", "plugin"]) | outside_text),
        state=draw(st.sampled_from(list(ServerState))),
        detail=draw(outside_text),
        tools=draw(st.integers(0, 10_000)),
        source=draw(outside_text),
        log_tail=tuple(draw(st.lists(outside_text, max_size=8))),
    )


@given(statuses(), st.integers(0, 40))
def test_server_lines_are_safe_single_lines(server: ServerStatus, name_width: int) -> None:
    lines = server_lines(server, name_width)
    assert lines and all(_no_controls(line) for line in lines)
    tail = min(3, len(server.log_tail)) if server.state is ServerState.FAILED else 0
    assert len(lines) == 1 + tail
    assert server.state.value in lines[0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | outside_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(outside_text, inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(outside_text, json_values, max_size=6), outside_text)
def test_event_lines_are_safe_single_lines(fields: dict[str, Any], kind: str) -> None:
    record = {**fields, "kind": kind}
    lines = event_lines(record, at=0.0)
    assert lines and all(_no_controls(line) for line in lines)


@given(
    outside_text,
    st.lists(statuses(), max_size=12),
    st.lists(outside_text, max_size=50),
    st.integers(1, 200),
    st.integers(1, 60),
)
def test_a_frame_fits_the_terminal(
    header: str, servers: Sequence[ServerStatus], trace: list[str], width: int, height: int
) -> None:
    frame = render_frame(header, servers, trace, width, height)
    assert 1 <= len(frame) <= height
    assert all(cell_width(line) <= width and _no_controls(line) for line in frame)


@given(st.lists(statuses(), max_size=8), st.integers(1, 120), st.integers(1, 30))
def test_colour_only_adds_sgr_around_state_words(servers: Sequence[ServerStatus], width: int, height: int) -> None:
    plain = render_frame("head", servers, ["trace line"], width, height)
    coloured = render_frame("head", servers, ["trace line"], width, height, colour=True)
    assert [re.sub(r"\x1b\[[\d;]*m", "", line) for line in coloured] == plain
    for line in coloured:
        for m in re.finditer(r"\x1b\[([\d;]*)m([^\x1b]*)\x1b\[0m", line):
            assert m.group(2) in {s.value for s in ServerState}


def test_a_frame_keeps_the_last_trace_lines() -> None:
    good = ServerStatus("good", "mcp", ServerState.READY, "", 3)
    trace = [f"line {n}" for n in range(100)]
    frame = render_frame("head", [good], trace, 80, 10)
    assert len(frame) == 10
    assert frame[-1] == "line 99" and frame[3] == "line 93"
    assert re.match(r"^\s+good\s+mcp\s+ready\s+3 tools$", frame[1])


def test_filter_matches_kinds_by_pattern_in_any_case_and_servers_by_name() -> None:
    from kairox_ui.watch import _Filter

    filt = _Filter(["mcpserver*", "ToolsChanged"], ["good"])
    assert filt.event({"kind": "McpServerReady", "server": "good"})
    assert filt.event({"kind": "ToolsChanged", "provider": "mcp:good"})
    assert not filt.event({"kind": "McpServerReady", "server": "other"})
    assert not filt.event({"kind": "ProviderReady", "provider": "mcp"})
    assert not filt.event({"kind": "LspServerRunning", "server": "good"})
    assert _Filter([], []).event({"kind": "Anything"})


def test_secrets_from_outside_are_hidden_in_lines_and_records() -> None:
    failed = ServerStatus(
        "remote",
        "mcp",
        ServerState.FAILED,
        "cannot reach https://bob:pa55word@example.com/mcp?token=abc123xyz",
        log_tail=("Authorization: Bearer sk-abcdef123456",),
    )
    shown = "\n".join(server_lines(failed)) + json.dumps(status_record(failed))
    for secret in ("pa55word", "abc123xyz", "sk-abcdef123456"):
        assert secret not in shown
    lines = event_lines({"kind": "McpServerFailed", "server": "remote", "error": "--api-key s3cr3tvalue"})
    assert "s3cr3tvalue" not in "\n".join(lines)


HINT = "environment variable API_TOKEN is not set (write ${API_TOKEN:-default} for a fallback)"


def test_a_hint_in_prose_is_shown_as_written() -> None:
    """Prose is not a config value: redacting it whole turned the kernel's hint into
    ``${API_TOKEN:<redacted>}``."""
    failed = ServerStatus("remote", "mcp", ServerState.FAILED, HINT, log_tail=(HINT,))
    assert HINT in server_lines(failed)[0] and f"| {HINT}" in server_lines(failed)[1]
    assert status_record(failed)["detail"] == HINT and status_record(failed)["log_tail"] == [HINT]
    lines = event_lines({"kind": "McpServerFailed", "server": "remote", "error": HINT, "stderr_tail": [HINT]})
    assert "${API_TOKEN:-default}" in lines[0] and "<redacted>" not in "\n".join(lines)
    assert redact_text(f"--token s3cr3tvalue {HINT} https://u:pw1234@h/x?api_key=k3y") == (
        f"--token <redacted> {HINT} https://u:<redacted>@h/x?api_key=<redacted>"
    )
    # a default that is a value (not the word "default") is a config value: hidden
    assert redact_text("password=${PW:-hunter2secret}") == "password=${PW:-<redacted>}"
    assert redact_text("${URL:-https://u:pw1234@h/}") == "${URL:-https://u:<redacted>@h/}"
    record = redact_record({"error": HINT, "env": {"A": "v4lue"}, "api_key": "k3y", "argv": ["--token", "s3"]})
    assert record == {
        "error": HINT,
        "env": {"A": "<redacted>"},
        "api_key": "<redacted>",
        "argv": ["--token", "<redacted>"],
    }


_SECRET = st.from_regex(r"[A-Za-z0-9]{8,20}", fullmatch=True)
_WORDS = ["cannot", "reach", "server", "(write", "for", "a", "fallback)", "exit", "code", "3", ":", "é", "—", "${HOME}"]
_PROSE = st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join)
_FORMS = ["--token {}", "--api-key={}", "password={}", "Bearer {}", "https://u:{}@h/", "${{PW:-{}}}"]


@given(_PROSE, _SECRET, st.sampled_from(_FORMS), _PROSE)
def test_redact_text_hides_secrets_and_keeps_the_prose(before: str, secret: str, form: str, after: str) -> None:
    shown = redact_text(f"{before} {form.format(secret)} {HINT} {after}")
    assert secret not in shown
    assert shown.startswith(before) and shown.endswith(f"{HINT} {after}")


@given(st.text(max_size=60))
def test_redact_text_never_raises(text: str) -> None:
    shown = redact_text(text)
    assert isinstance(shown, str)
    if not any(c in text for c in ":=/$-") and "bearer" not in text.lower() and "basic" not in text.lower():
        assert shown == text  # nothing that could hold a value: the text as it is


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("ls\u2028x", "ls\\u2028x"),  # line separator: a line break to some terminals and pagers
        ("a\u2029b", "a\\u2029b"),  # paragraph separator
        ("a\U000e0041b", "a\\U000e0041b"),  # a tag character above U+FFFF: eight digits, unambiguous
        ("z\u200bw", "z\\u200bw"),  # zero-width space
    ],
)
def test_separators_and_astral_format_characters_are_shown_unambiguously(raw: str, shown: str) -> None:
    assert fit(raw, None) == shown


# -- variable references in outside text: found where the old pattern found them, in linear time

_OLD_VAR_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}\s]*))?\}")


@settings(max_examples=1000)
@given(st.lists(st.sampled_from([*"${}:-A_1 x", "${", "${A:-", "${A}"]), max_size=12).map("".join))
def test_variable_references_are_found_where_the_old_pattern_found_them(text: str) -> None:
    old = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _OLD_VAR_REFERENCE.finditer(text)]
    assert list(_var_references(text)) == old


@pytest.mark.timeout(10)
def test_unclosed_variable_references_are_read_in_linear_time() -> None:
    # each unclosed `${A:-` was read to the next blank again: ~1 s at 20 KB, hours at 1 MB
    text = "${A:-" * 200_000 + " done"
    assert not list(_var_references(text))
    assert redact_text(text) == text
    assert list(_var_references(text[:-5] + "}")) == [(0, len(text) - 4, "A", text[5:-5])]
