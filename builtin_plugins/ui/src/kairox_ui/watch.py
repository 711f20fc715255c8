"""``kairox watch``: the servers' states updating in place and the event trace below them.

The terminal twin of the dashboard's status page and trace panel, for machines without a
browser. It opens the workspace's runtime as every activating command does (an untrusted
workspace's servers show as untrusted and nothing it declares runs), starts the servers,
and shows what ``rt.status()`` says of each (MCP, LSP, DAP, bundles) and every event of
``rt.events``:

- on a terminal, in place: a frame at most ``rows - 1`` lines tall, redrawn at most
  ten times a second, the trace keeping the last lines that fit;
- when stdout is not a terminal: plain lines, appended (no escape sequence);
- ``--json``: one JSON object per line, per event and per server state change;
- ``--once``: the states once the servers have started, exit 1 when something failed.

Everything a server or a config file says (names, errors, stderr tails) passes
:func:`redact_text` (the values in it redacted with :func:`kairox.ext.redact` and
:func:`kairox.ext.redact_url`, not its prose) and :func:`kairox.ext.terminal_safe`; the only
escape sequences written are the view's own cursor movements.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import time
import unicodedata
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO

import attrs
import click

from kairox import ServerState, ServerStatus
from kairox.ext import redact, redact_url, terminal_safe
from kairox.files import glob_match
from kairox_cli import config_secrets, mask_secrets, run_with_runtime, want_json

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream

    from kairox import Event, Runtime

__all__ = [
    "cell_width",
    "event_lines",
    "event_record",
    "fit",
    "redact_record",
    "redact_text",
    "render_frame",
    "server_lines",
    "status_record",
    "watch",
]

logger = logging.getLogger(__name__)

#: at most this many redraws a second on a terminal
MAX_FPS = 10
#: states are looked at again this often even when no event came (seconds)
IDLE_REFRESH = 1.0
#: trace lines kept (the terminal shows the last ones that fit)
TRACE_KEEP = 1000
#: stderr lines shown under a failed server (the trace has the event's whole tail)
TAIL_UNDER_SERVER = 3
#: stderr lines of a failure event shown in the trace
TAIL_IN_TRACE = 8
#: widest server name column
NAME_COLUMN = 28
#: (columns, rows) when the terminal reports 0 x 0, as shutil.get_terminal_size's fallback
FALLBACK_SIZE = (80, 24)
#: the SGR colour of each state's word on a terminal that shows colour
STATE_COLOURS = {
    ServerState.READY: "32",
    ServerState.STARTING: "33",
    ServerState.FAILED: "1;31",
    ServerState.UNTRUSTED: "35",
    ServerState.STOPPED: "2",
}

# a lone surrogate (JSON can carry one) cannot be encoded for the terminal
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESC = "\x1b"


# -- text that fits ---------------------------------------------------------------------


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (wide characters 2, combining marks 0)."""
    return sum(_char_width(ch) for ch in text)


def _safe(text: str) -> str:
    """``text`` with nothing that can drive or confuse a terminal: controls, bidi and
    format characters written as escapes, tabs as a space, lone surrogates replaced.
    Format characters (zero-width joiners and spaces, tags, the BOM) hide or reshape
    text and have no reliable width, so they are shown as ``\\uXXXX`` too."""
    out = terminal_safe(_SURROGATE.sub("\ufffd", text)).replace("\t", " ")
    if any(unicodedata.category(ch) in _HIDDEN for ch in out):
        out = "".join(_escaped(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in out)
    return out


#: format characters, and the line and paragraph separators (U+2028, U+2029), which some
#: terminals and every pager treat as line breaks
_HIDDEN = ("Cf", "Zl", "Zp")


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def fit(text: str, width: int | None) -> str:
    """``text`` safe to write to a terminal (:func:`kairox.ext.terminal_safe`, and tabs, format
    characters and surrogates made visible) and at most ``width`` cells wide, cut with
    ``…`` when longer; ``width=None`` only makes it safe."""
    out = _safe(text)
    if width is None or cell_width(out) <= width:
        return out
    if width <= 0:
        return ""
    room = width - 1  # the ellipsis
    used = 0
    kept: list[str] = []
    for ch in out:
        w = _char_width(ch)
        if used + w > room:
            break
        kept.append(ch)
        used += w
    return "".join(kept) + "…"


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cell_width(text))


#: the start of ``${NAME}`` / ``${NAME:-default}``: how a config file names a variable (the
#: kernel's hints say "write ${NAME:-default} for a fallback"); a name, not a value. A
#: default runs to the next ``}`` (the reference) or blank (no reference).
_VAR_HEAD = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-)?")
_DEFAULT_END = re.compile(r"[}\s]")


def _var_references(text: str) -> Iterator[tuple[int, int, str, str | None]]:
    r"""``(start, end, name, default)`` of each variable reference in ``text``, in order.

    Linear time: each ``${`` is tried once, and the end of a default is searched for once
    per ``}`` or blank (a later default that starts before the one found ends there too).
    A pattern with the default in it, ``[^}\s]*\}``, read every unclosed ``${A:-`` up to
    the next blank again: quadratic."""
    pos, stop = 0, -1
    while (m := _VAR_HEAD.search(text, pos)) is not None:
        end = m.end()
        if m.group(2):
            if stop < end:
                found = _DEFAULT_END.search(text, end)
                stop = found.start() if found else len(text)
            end = stop
        if text.startswith("}", end):
            default = text[m.end() : end] if m.group(2) else None
            yield m.start(), end + 1, m.group(1), default
            pos = end + 1
        else:
            pos = m.start() + 1


def redact_text(text: str) -> str:
    """Free text from outside (a server's detail, a stderr line, a config error) with the
    secrets in it hidden: URLs (:func:`kairox.ext.redact_url`), ``--token X``, ``key=value``
    and ``Bearer X`` (:func:`kairox.ext.redact`); the prose itself is left alone, and so are
    variable references such as ``${API_TOKEN:-default}`` (a hint names the variable; a
    default other than the word ``default`` is a config value: hidden, a URL's secrets
    hidden)."""
    out: list[str] = []
    last = 0
    for start, end, name, default in _var_references(text):
        out.append(str(redact(text[last:start])))
        if default is None or default in ("", "default"):
            out.append(text[start:end])
        else:
            shown = redact_url(default) if "://" in default else str(redact(default, "secret"))
            out.append(f"${{{name}:-{shown}}}")
        last = end
    out.append(str(redact(text[last:])))
    return "".join(out)


def redact_record(value: Any, key: str = "", parent: str = "") -> Any:
    """A record (an event's fields) safe to print: values under secret-looking keys and
    in env/headers tables hidden, argument lists as :func:`kairox.ext.redact` shows them, and
    every other string as :func:`redact_text` does (its prose left alone)."""
    if isinstance(value, dict):
        return {k: redact_record(v, str(k), key) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            # ["--token", "X"]: the value after a secret flag hidden (kairox.ext.redact); the rest as text
            shown = redact(list(value), key, parent)
            return [redact_text(v) if s == redact(v) else s for v, s in zip(value, shown, strict=True)]
        return [redact_record(v, key, parent) for v in value]
    if not isinstance(value, str) or redact("plain", key, parent) != "plain":  # a secret's key: hidden whole
        return redact(value, key, parent)
    return redact_text(value)


def _clean(value: Any) -> str:
    """A value from outside as one safe line, secrets hidden."""
    return _safe(redact_text(str(value)))


# -- servers -----------------------------------------------------------------------------


def _mark(state: ServerState) -> str:
    return {ServerState.FAILED: "!", ServerState.UNTRUSTED: "?", ServerState.STARTING: "~"}.get(state, " ")


def server_lines(server: ServerStatus, name_width: int = 0, *, tail: int = TAIL_UNDER_SERVER) -> list[str]:
    """A server's state line (mark, name, kind, state, tool count, detail) and, when it
    failed, the last ``tail`` lines of its stderr; safe, not yet fitted to a width."""
    name = fit(server.name, NAME_COLUMN)
    tools = f"{server.tools} tools" if server.state is ServerState.READY else ""
    line = f" {_mark(server.state)} {_pad(name, name_width)}  {_pad(_clean(server.kind), 6)} {server.state.value:<9} "
    line += f"{tools:>9}"
    if server.detail:
        line += f"  {_clean(server.detail)}"
    out = [line.rstrip()]
    if server.state is ServerState.FAILED and tail > 0:
        out += [f"      | {_clean(text)}" for text in server.log_tail[-tail:]]
    return out


def _name_width(servers: Sequence[ServerStatus]) -> int:
    return max((cell_width(fit(s.name, NAME_COLUMN)) for s in servers), default=0)


def _summary(servers: Sequence[ServerStatus]) -> str:
    counts: dict[str, int] = {}
    for s in servers:
        counts[s.state.value] = counts.get(s.state.value, 0) + 1
    order = [st.value for st in (ServerState.READY, ServerState.STARTING, ServerState.FAILED)]
    order += [st.value for st in ServerState if st.value not in order]
    parts = [f"{counts[k]} {k}" for k in order if k in counts]
    n = len(servers)
    return f"{n} server{'s' if n != 1 else ''}" + (f": {', '.join(parts)}" if parts else "")


def status_record(server: ServerStatus) -> dict[str, Any]:
    """A server's state as a JSON object (``kind`` ``ServerStatus``), secrets hidden."""
    return {
        "kind": "ServerStatus",
        "server": server.name,
        "server_kind": server.kind,
        "state": server.state.value,
        "tools": server.tools,
        "detail": redact_text(server.detail),
        "source": redact_text(server.source),
        "log_tail": [redact_text(line) for line in server.log_tail],
    }


def _signature(server: ServerStatus) -> tuple[Any, ...]:
    return (server.state, server.tools, server.detail, server.log_tail)


# -- events ------------------------------------------------------------------------------


def event_record(event: Event) -> dict[str, Any]:
    """An event as a JSON-ready dict (``kind`` and its fields), secrets hidden."""
    data = redact_record(event.to_dict())
    return data if isinstance(data, dict) else {"kind": event.kind}


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False, default=str)
    text = str(value)
    if not text or any(ch.isspace() for ch in text) or '"' in text:
        text = json.dumps(text, ensure_ascii=False)
    return _safe(text)


def _tail_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def event_lines(record: Mapping[str, Any], at: float | None = None, *, tail: int = TAIL_IN_TRACE) -> list[str]:
    """An event record (:func:`event_record`) as trace lines: ``HH:MM:SS Kind key=value ...``
    and, for a stderr tail, its last ``tail`` lines below; safe, not yet fitted."""
    stamp = time.strftime("%H:%M:%S", time.localtime(at if at is not None else time.time()))
    record = redact_record(dict(record))  # a no-op for event_record's, which are redacted already
    kind = _safe(str(record.get("kind", "Event")))
    fields: list[str] = []
    tails: list[str] = []
    for key, value in record.items():
        if key == "kind" or value is None or value == "" or value == () or value == []:
            continue
        if key in ("stderr_tail", "log_tail"):
            tails = _tail_of(value)
            continue
        fields.append(f"{_safe(str(key))}={_value(value)}")
    out = [" ".join([stamp, kind, *fields])]
    out += [f"         | {_safe(line)}" for line in tails[-tail:]] if tail > 0 else []
    return out


def _server_of(record: Mapping[str, Any]) -> str | None:
    server = record.get("server")
    if isinstance(server, str):
        return server
    provider = record.get("provider")
    if isinstance(provider, str) and ":" in provider:
        return provider.split(":", 1)[1]  # "mcp:NAME", the provider of one server's tools
    return None


class _Filter:
    """``--filter KIND`` (fnmatch patterns, any case) and ``--server NAME``."""

    def __init__(self, kinds: Iterable[str], servers: Iterable[str]) -> None:
        self.kinds = [k.lower() for k in kinds]
        self.servers = set(servers)

    def server(self, status: ServerStatus) -> bool:
        return not self.servers or status.name in self.servers

    def event(self, record: Mapping[str, Any]) -> bool:
        kind = str(record.get("kind", "")).lower()
        if self.kinds and not any(glob_match(kind, k) for k in self.kinds):
            return False
        return not self.servers or _server_of(record) in self.servers


# -- the frame ---------------------------------------------------------------------------


def render_frame(
    header: str,
    servers: Sequence[ServerStatus],
    trace: Sequence[str],
    width: int,
    height: int,
    *,
    trace_title: str = "trace",
    colour: bool = False,
) -> list[str]:
    """The in-place view: a header, a line per server (and a failed one's stderr tail), a
    rule and the last trace lines that fit. At most ``height`` lines, each at most
    ``width`` cells, nothing in them that can drive the terminal; with ``colour`` each
    server's state word is coloured (SGR only, added after the line is fitted)."""
    if height <= 0 or width <= 0:
        return []
    lines = [header]
    room = height - 1
    if room <= 0:
        return [fit(line, width) for line in lines[:height]]
    name_width = _name_width(servers)
    block: list[str] = []
    painted: dict[int, ServerStatus] = {}  # line of the frame -> the server it states
    for s in servers:
        painted[1 + len(block)] = s
        block += server_lines(s, name_width)
    if not servers:
        block = ["   (no servers declared)"]
    # the trace keeps a few lines when there is room for it
    keep_for_trace = 4 if room >= 10 else 0
    fits = room - keep_for_trace
    if len(block) > fits:
        shown = max(fits - 1, 0)
        hidden = len(block) - shown
        block = block[:shown] + ([f"   ... {hidden} more lines (make the terminal taller)"] if fits > 0 else [])
    lines += block
    room = height - len(lines)
    if room >= 2:
        lines.append(f"--- {trace_title} " + "-" * max(0, width - len(trace_title) - 5))
        lines += list(trace[-(room - 1) :]) if room > 1 else []
    out = [fit(line, width) for line in lines[:height]]
    if colour:
        for n, server in painted.items():
            if n < len(out):
                out[n] = _paint(out[n], server, name_width)
    return out


def _paint(line: str, server: ServerStatus, name_width: int) -> str:
    """``line`` (a server's fitted state line) with its state word in the state's colour;
    as it was when the fitting cut the word."""
    head = f" {_mark(server.state)} {_pad(fit(server.name, NAME_COLUMN), name_width)}  {_pad(_clean(server.kind), 6)} "
    word = server.state.value
    code = STATE_COLOURS.get(server.state)
    rest = line[len(head) :]
    if code is None or not line.startswith(head) or not rest.startswith(word):
        return line
    return f"{head}{_ESC}[{code}m{word}{_ESC}[0m{rest[len(word) :]}"


class _Screen:
    """Draws frames in place: cursor up over the last frame, each line cleared to its end."""

    def __init__(self, out: BinaryIO, encoding: str) -> None:
        self.out = out
        self.encoding = encoding
        self.drawn = 0
        self.clear = False
        self.last: list[str] = []

    def write(self, text: str) -> None:
        self.out.write(text.encode(self.encoding, "replace"))
        self.out.flush()

    def begin(self) -> None:
        self.write(f"{_ESC}[?25l")  # hide the cursor

    def draw(self, lines: Sequence[str]) -> None:
        if not self.clear and list(lines) == self.last:
            return  # nothing changed: write nothing
        self.last = list(lines)
        parts: list[str] = []
        if self.clear:  # resized: what was drawn wrapped anew, start over at the top
            parts.append(f"{_ESC}[H{_ESC}[2J")
            self.clear = False
        elif self.drawn:
            parts.append(f"\r{_ESC}[{self.drawn}A")
        for line in lines:
            parts.append(f"{line}{_ESC}[K\n")
        parts.append(f"{_ESC}[J")
        self.write("".join(parts))
        self.drawn = len(lines)

    def end(self) -> None:
        self.write(f"{_ESC}[J{_ESC}[?25h")  # show the cursor again


def _terminal_size() -> tuple[int, int]:
    """(columns, rows) of the terminal stdout writes to; a size the terminal reports as 0
    (a pty nobody set a window size on) falls back as :func:`shutil.get_terminal_size`
    does ($COLUMNS / $LINES, else 80 x 24)."""
    import os
    import shutil

    try:
        size = os.get_terminal_size(sys.stdout.fileno())
        cols, rows = size.columns, size.lines
    except (OSError, ValueError, AttributeError):
        cols = rows = 0
    if cols <= 0 or rows <= 0:
        fallback = shutil.get_terminal_size(FALLBACK_SIZE)
        cols = cols if cols > 0 else fallback.columns if fallback.columns > 0 else FALLBACK_SIZE[0]
        rows = rows if rows > 0 else fallback.lines if fallback.lines > 0 else FALLBACK_SIZE[1]
    return max(cols, 1), max(rows, 1)


def _in_place_possible() -> bool:
    import os

    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") != "dumb" and hasattr(sys.stdout, "buffer")


# -- the watch ---------------------------------------------------------------------------
def _masked(server: ServerStatus, secrets: list[str]) -> ServerStatus:
    """``server`` with the config's secret values masked in what it says (an error about a
    non-secret field quotes its value, which may be a secret's too)."""
    if not secrets:
        return server
    return attrs.evolve(
        server,
        detail=mask_secrets(server.detail, secrets),
        source=mask_secrets(server.source, secrets),
        log_tail=tuple(mask_secrets(list(server.log_tail), secrets)),
    )


class _Watch:
    def __init__(self, rt: Runtime, filt: _Filter, *, mode: str) -> None:
        self.rt = rt
        self.filt = filt
        self.mode = mode  # "screen" | "plain" | "json"
        self.trace: deque[str] = deque(maxlen=TRACE_KEEP)
        self.known: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.started = False
        self.screen: _Screen | None = None
        self.colour = False
        self.keys: int | None = None  # the terminal's fd whose `q` ends the watch
        self.secrets = config_secrets(rt)

    def servers(self) -> list[ServerStatus]:
        return [_masked(s, self.secrets) for s in self.rt.status().servers if self.filt.server(s)]

    def header(self, servers: Sequence[ServerStatus]) -> str:
        where = _clean(self.rt.workspace)
        phase = "" if self.started else " (starting)"
        return f"kairox watch  {where}  {_summary(servers)}{phase}  - q or Ctrl-C stops"

    # every event of the bus, in order
    def event(self, event: Event) -> None:
        record = mask_secrets(event_record(event), self.secrets)
        if not self.filt.event(record):
            return
        now = time.time()
        if self.mode == "json":
            record["time"] = datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="milliseconds")
            click.echo(json.dumps(record, ensure_ascii=True, default=str))
            return
        lines = event_lines(record, now)
        if self.mode == "plain":
            for line in lines:
                click.echo(line)
        else:
            self.trace.extend(lines)

    # the servers' states, after events (or a quiet second)
    def refresh(self) -> None:
        servers = self.servers()
        if self.mode == "screen":
            self.draw(servers)
            return
        width = _name_width(servers)
        for s in servers:
            key = (s.kind, s.name)
            sig = _signature(s)
            if self.known.get(key) == sig:
                continue
            self.known[key] = sig
            if self.mode == "json":
                record = status_record(s)
                record["time"] = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
                click.echo(json.dumps(record, ensure_ascii=True, default=str))
            else:
                stamp = time.strftime("%H:%M:%S", time.localtime(time.time()))
                for line in server_lines(s, width, tail=TAIL_IN_TRACE):
                    click.echo(f"{stamp} {line}" if not line.startswith("      |") else f"         {line}")

    def draw(self, servers: Sequence[ServerStatus]) -> None:
        assert self.screen is not None
        cols, rows = _terminal_size()
        what = "trace" + (f" ({', '.join(_safe(k) for k in self.filt.kinds)})" if self.filt.kinds else "")
        # one column and one row spare: no line reaches the last column (no pending wrap)
        # and the frame never scrolls the terminal, so cursor-up lands on its first line
        frame = render_frame(
            self.header(servers), servers, list(self.trace), cols - 1, rows - 1, trace_title=what, colour=self.colour
        )
        self.screen.draw(frame)

    async def run(self) -> None:
        import anyio

        stream_cm = self.rt.events.stream()
        async with stream_cm as events, anyio.create_task_group() as tg:

            async def start() -> None:
                await self.rt.start_providers()
                self.started = True

            async def resized() -> None:
                if sys.platform == "win32" or self.screen is None:
                    return
                with anyio.open_signal_receiver(signal.SIGWINCH) as signals:
                    async for _ in signals:
                        self.screen.clear = True

            async def keys(fd: int) -> None:
                while True:
                    await anyio.wait_readable(fd)
                    data = os.read(fd, 64)
                    if not data or b"q" in data.lower():  # q, or the terminal went away
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(start)
            tg.start_soon(resized)
            if self.keys is not None:
                tg.start_soon(keys, self.keys)
            try:
                await self._loop(events)
            except BrokenPipeError:  # `kairox watch | head`: the reader is gone, so is the watch
                _silence_stdout()
            tg.cancel_scope.cancel()

    async def _loop(self, events: MemoryObjectReceiveStream[Event]) -> None:
        import anyio

        pause = 1.0 / MAX_FPS
        while True:
            with anyio.move_on_after(IDLE_REFRESH):
                self.event(await events.receive())
            while True:
                try:
                    self.event(events.receive_nowait())
                except anyio.WouldBlock:
                    break
            self.refresh()
            if self.mode == "screen":
                await anyio.sleep(pause)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class _TraceLogHandler(logging.Handler):
    """While the view owns the terminal, log records go to its trace, not over the frame."""

    def __init__(self, trace: deque[str], level: int) -> None:
        super().__init__(level)
        self.trace = trace

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"{record.levelname}: {record.name}: {record.getMessage()}"
        except Exception:  # a record whose message does not format
            text = f"{record.levelname}: {record.name}: {record.msg!r}"
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        self.trace.append(f"{stamp} log {_clean(text)}")


async def _watch_live(rt: Runtime, filt: _Filter, mode: str) -> int:
    view = _Watch(rt, filt, mode=mode)
    if filt.servers:
        names = {s.name for s in rt.status().servers}
        for missing in sorted(filt.servers - names):
            click.echo(f"kairox: watch: no server named {_clean(missing)} is declared (yet)", err=True)
    if mode != "screen":
        view.refresh()
        await view.run()
        return 0
    sys.stdout.flush()
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    view.screen = _Screen(sys.stdout.buffer, encoding)
    view.colour = _colour_possible()
    keys = _KeyReader.open()
    view.keys = keys.fd if keys is not None else None
    root = logging.getLogger()
    handler = _TraceLogHandler(view.trace, root.level)
    muted = [
        (h, h.level)
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    for h, _ in muted:
        h.setLevel(logging.CRITICAL + 1)
    root.addHandler(handler)
    view.screen.begin()
    try:
        view.refresh()
        await view.run()
    finally:
        if keys is not None:
            keys.close()
        root.removeHandler(handler)
        for h, level in muted:
            h.setLevel(level)
        view.screen.end()
    return 0


def _colour_possible() -> bool:
    """Colour on a terminal (the in-place view's), unless ``NO_COLOR`` is set (no-color.org)."""
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM", "") != "dumb"


class _KeyReader:
    """stdin, when it is a terminal, read a key at a time (no echo, no line buffering) while
    the view runs, so ``q`` is seen at once; its settings are restored on close."""

    def __init__(self, fd: int, saved: list[Any]) -> None:
        self.fd = fd
        self.saved = saved

    @classmethod
    def open(cls) -> _KeyReader | None:
        if sys.platform == "win32":
            return None
        import termios
        import tty

        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd):
                return None
            saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (OSError, ValueError, AttributeError, termios.error):
            return None
        return cls(fd, saved)

    def close(self) -> None:
        import termios

        try:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        except (OSError, termios.error):
            pass


async def _watch_once(rt: Runtime, filt: _Filter, as_json: bool) -> int:
    status = rt.status()
    secrets = config_secrets(rt)
    servers = [_masked(s, secrets) for s in status.servers if filt.server(s)]
    if as_json:
        click.echo(
            json.dumps(
                {"ok": status.ok, "servers": [status_record(s) for s in servers]}, ensure_ascii=True, default=str
            )
        )
    else:
        click.echo(f"{_clean(rt.workspace)}: {_summary(servers)}")
        width = _name_width(servers)
        for s in servers:
            for line in server_lines(s, width, tail=5):
                click.echo(line)
    return 0 if status.ok else 1


@click.command()
@click.option("--once", is_flag=True, help="Start the servers, print their states once and exit (1 if one failed).")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per line: each event and each server state change."
)
@click.option(
    "--filter",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only events of this kind in the trace (McpServerFailed, or a pattern such as 'Mcp*', any case); "
    "the server states always show. Repeatable.",
)
@click.option("--server", "servers", multiple=True, metavar="NAME", help="Only this server; repeatable.")
@click.pass_context
def watch(ctx: click.Context, once: bool, as_json: bool, kinds: tuple[str, ...], servers: tuple[str, ...]) -> None:
    """Start the workspace's servers and watch them: states in place, the event trace below.

    On a terminal the view redraws in place; piped, it appends plain lines; --json
    writes one JSON object per line. q (on a terminal) or Ctrl-C stops every server and exits.
    """
    as_json = want_json(ctx, as_json)
    filt = _Filter(kinds, servers)
    if once:
        code = run_with_runtime(ctx, lambda rt: _watch_once(rt, filt, as_json))
        ctx.exit(code)
    mode = "json" if as_json else "screen" if _in_place_possible() else "plain"
    try:
        # "lazy" opens the runtime as an activating command does (the trust question on a
        # terminal, the untrusted items said on stderr) and starts what has no lazy start;
        # the view starts the rest itself, so their starting shows
        run_with_runtime(ctx, lambda rt: _watch_live(rt, filt, mode), start="lazy")
    except KeyboardInterrupt:
        click.echo("kairox: stopped by SIGINT; every server was shut down", err=True)
        ctx.exit(130)
