"""DebugSession: one program under one adapter, from launch to exit, as readable text.

The launch follows the order adapters expect (debugpy checked):
``initialize`` -> ``launch`` (sent, not awaited) -> ``initialized`` event ->
``setBreakpoints`` per file -> ``setExceptionBreakpoints`` ->
``configurationDone`` -> the ``launch`` response -> ``stopped`` or
``terminated``. Every wait is for an event, bounded by a timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from kairox.files import relative_text
from kairox_peer import line_at, read_text

from ._client import DapClient, as_dict

__all__ = ["Breakpoint", "DebugSession", "SessionEnded"]

logger = logging.getLogger(__name__)

MAX_CHILDREN = 50
MAX_VALUE = 200
MAX_LINES = 400


class SessionEnded(RuntimeError):
    """The operation needs a live (or stopped) program, and there is none."""


@attrs.frozen
class Breakpoint:
    line: int
    condition: str | None = None


def _bp_args(bps: Sequence[Breakpoint]) -> list[dict[str, Any]]:
    out = []
    for bp in bps:
        item: dict[str, Any] = {"line": bp.line}
        if bp.condition:
            item["condition"] = bp.condition
        out.append(item)
    return out


def _is_group(var: dict[str, Any]) -> bool:
    """A grouping node, not a variable: debugpy's "special variables", "function variables", ..."""
    if as_dict(var.get("presentationHint")).get("kind") == "virtual":
        return True
    name = str(var.get("name", ""))
    return name.endswith(" variables") and not var.get("type") and not var.get("value")


def _short(value: str) -> str:
    value = " ".join(value.split()) if "\n" in value else value
    return value if len(value) <= MAX_VALUE else value[: MAX_VALUE - 3] + "..."


class DebugSession:
    """The state of one debuggee, kept from the adapter's events."""

    def __init__(self, client: DapClient, *, program: Path, workspace: Path) -> None:
        self.client = client
        self.program = program
        self.workspace = workspace
        self.state = "starting"  # starting | running | stopped | terminated
        self.stop_body: dict[str, Any] = {}
        self.exit_code: int | None = None
        self.pid: int | None = None
        self._run_cursor = 0  # event index when the program was last set running
        self._sources: dict[Path, str | None] = {}
        client.listeners.append(self._on_event)

    # -- events -----------------------------------------------------------------
    def _on_event(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        body = as_dict(event.get("body"))
        if name == "stopped":
            self.state = "stopped"
            self.stop_body = dict(body)
        elif name == "continued" and self.state != "terminated":
            self.state = "running"
            self.stop_body = {}
        elif name == "exited" and isinstance(body.get("exitCode"), int):
            self.exit_code = body["exitCode"]
        elif name == "terminated":
            self.state = "terminated"
        elif name == "process" and isinstance(body.get("systemProcessId"), int):
            self.pid = body["systemProcessId"]

    @property
    def ended(self) -> bool:
        return self.state == "terminated" or self.client.closed

    def require_live(self) -> None:
        if self.ended:
            raise SessionEnded(f"the program has ended{self._exit_note()}; start it again with dap.launch")

    def require_stopped(self) -> None:
        self.require_live()
        if self.state != "stopped":
            raise SessionEnded(f"the program is {self.state}, not stopped; set a breakpoint or wait for it to stop")

    def _exit_note(self) -> str:
        return f" (exit code {self.exit_code})" if self.exit_code is not None else ""

    # -- launching ----------------------------------------------------------------
    async def launch(
        self,
        arguments: dict[str, Any],
        breakpoints: Mapping[Path, Sequence[Breakpoint]],
        *,
        wait: float,
    ) -> str:
        client = self.client
        start = self._run_cursor = client.cursor()
        launch_seq = await client.send_request("launch", arguments)
        # the launch response normally comes after configurationDone; an early one is a failure
        found = await client.wait_event(
            {"initialized", "terminated"},
            after=start,
            timeout=client.request_timeout,
            unless=lambda: client.answered(launch_seq),
        )
        launched = False
        if found is None:
            if client.answered(launch_seq):
                await client.response(launch_seq)  # raises DapError when the launch failed
                launched = True
            else:
                raise TimeoutError(f"the adapter sent no `initialized` event within {client.request_timeout:g} s")
        notes = []
        if found is not None and found[1].get("event") == "initialized":
            for path, bps in breakpoints.items():
                notes.append(self._breakpoint_note(path, bps, await self._send_breakpoints(path, bps)))
            await client.request("setExceptionBreakpoints", {"filters": []})
            if client.capabilities.get("supportsConfigurationDoneRequest", True):
                await client.request("configurationDone", {})
        if not launched:
            await client.response(launch_seq)
        self.state = "running" if self.state == "starting" else self.state
        status = await self.wait_until_paused(start, wait)
        head = f"launched {self._display(self.program)}" + (f" (pid {self.pid})" if self.pid else "")
        return "\n".join([head, *notes, status])

    async def _send_breakpoints(self, path: Path, bps: Sequence[Breakpoint]) -> list[dict[str, Any]]:
        body = await self.client.request(
            "setBreakpoints", {"source": {"path": str(path)}, "breakpoints": _bp_args(bps), "sourceModified": False}
        )
        result = body.get("breakpoints") if isinstance(body, dict) else None
        return [b for b in result or [] if isinstance(b, dict)]

    async def set_breakpoints(self, path: Path, bps: Sequence[Breakpoint]) -> str:
        return self._breakpoint_note(path, bps, await self._send_breakpoints(path, bps))

    def _breakpoint_note(self, path: Path, bps: Sequence[Breakpoint], result: list[dict[str, Any]]) -> str:
        shown = self._display(path)
        if not bps:
            return f"breakpoints in {shown}: none"
        parts = []
        for index, bp in enumerate(bps):
            info = result[index] if index < len(result) else {}
            line = info.get("line", bp.line)
            state = "verified" if info.get("verified") else "not verified"
            reason = f" ({info['message']})" if isinstance(info.get("message"), str) and info.get("message") else ""
            cond = f" if {bp.condition}" if bp.condition else ""
            parts.append(f"line {line}{cond}: {state}{reason}")
        return f"breakpoints in {shown}: " + "; ".join(parts)

    # -- running ------------------------------------------------------------------
    async def wait_until_paused(self, after: int, wait: float) -> str:
        """Wait for the program to stop or end (events at index >= ``after``) and describe where it is."""
        found = await self.client.wait_event({"stopped", "terminated"}, after=after, timeout=wait)
        if found is None:
            return f"running (did not stop within {wait:g} s)" + self._new_output()
        if found[1].get("event") == "terminated":
            self.state = "terminated"
            return f"the program ended{self._exit_note()}" + self._new_output()
        if self.state != "terminated":
            self.state = "stopped"
            self.stop_body = as_dict(found[1].get("body"))
        return await self.describe_stop() + self._new_output()

    async def resume(self, command: str, thread: int | None, wait: float) -> str:
        """``continue``, ``next``, ``stepIn`` or ``stepOut``, then wait for the next stop.

        ``continue`` while the program runs (an earlier wait ran out) only waits again.
        """
        if command == "continue" and self.state == "running" and not self.ended:
            return await self.wait_until_paused(self._run_cursor, wait)
        self.require_stopped()
        thread_id = thread if thread is not None else await self._thread()
        start = self._run_cursor = self.client.cursor()
        self.state = "running"  # before the request: its `stopped` event may come before its response
        self.stop_body = {}
        await self.client.request(command, {"threadId": thread_id})
        return await self.wait_until_paused(start, wait)

    def _new_output(self) -> str:
        text = self.client.output.read_new()
        return f"\noutput:\n{text.rstrip()}" if text.strip() else ""

    async def _thread(self) -> int:
        thread = self.stop_body.get("threadId")
        if isinstance(thread, int):
            return thread
        body = await self.client.request("threads")
        threads = body.get("threads") if isinstance(body, dict) else None
        for t in threads or []:
            if isinstance(t, dict) and isinstance(t.get("id"), int):
                return int(t["id"])
        raise SessionEnded("the program has no threads")

    # -- inspecting ------------------------------------------------------------------
    async def frames(self, thread: int | None = None, levels: int = 20) -> list[dict[str, Any]]:
        self.require_stopped()
        thread_id = thread if thread is not None else await self._thread()
        body = await self.client.request("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": levels})
        frames = body.get("stackFrames") if isinstance(body, dict) else None
        return [f for f in frames or [] if isinstance(f, dict)]

    async def describe_stop(self) -> str:
        reason = self.stop_body.get("reason", "paused")
        description = self.stop_body.get("text") or self.stop_body.get("description")
        extra = f": {description}" if isinstance(description, str) and description and description != reason else ""
        frames = await self.frames(levels=1)
        where = self.frame_line(0, frames[0]) if frames else "(no frame)"
        return f"stopped ({reason}{extra}) at {where}"

    def frame_line(self, index: int, frame: dict[str, Any]) -> str:
        name = frame.get("name", "?")
        source = as_dict(frame.get("source"))
        path = source.get("path")
        line = frame.get("line", 0)
        column = frame.get("column", 0)
        if not isinstance(path, str) or not path:
            return f"#{index} {name}  {source.get('name', '<unknown source>')}:{line}"
        code = self._source_line(Path(path), line)
        loc = f"{self._display(Path(path))}:{line}:{column}"
        return f"#{index} {name}  {loc}: {code}" if code else f"#{index} {name}  {loc}"

    async def stack_trace(self, thread: int | None, levels: int) -> str:
        frames = await self.frames(thread, levels)
        if not frames:
            return "no stack frames"
        return "\n".join(self.frame_line(i, f) for i, f in enumerate(frames))

    async def _frame_id(self, frame: int) -> tuple[int, dict[str, Any]]:
        frames = await self.frames(levels=frame + 1)
        if frame >= len(frames):
            raise IndexError(f"frame {frame} does not exist (the stack has {len(frames)} frames)")
        return int(frames[frame]["id"]), frames[frame]

    async def variables(self, frame: int, scope: str | None, depth: int) -> str:
        frame_id, info = await self._frame_id(frame)
        body = await self.client.request("scopes", {"frameId": frame_id})
        scopes = [s for s in (body.get("scopes") if isinstance(body, dict) else None) or [] if isinstance(s, dict)]
        if scope is None:
            chosen = [s for s in scopes if not s.get("expensive")][:1]
        elif scope.lower() == "all":
            chosen = [s for s in scopes if not s.get("expensive")]
        else:
            chosen = [s for s in scopes if str(s.get("name", "")).lower() == scope.lower()]
            if not chosen:
                names = ", ".join(str(s.get("name")) for s in scopes)
                raise ValueError(f"no scope {scope!r} in frame {frame} (scopes: {names})")
        lines = [self.frame_line(frame, info)]
        for s in chosen:
            lines.append(f"{s.get('name')}:")
            await self._expand(int(s.get("variablesReference", 0)), depth, 1, lines)
        if len(lines) >= MAX_LINES:
            lines = [*lines[:MAX_LINES], "... (output cut; ask for a smaller depth or one scope)"]
        return "\n".join(lines)

    async def _expand(self, reference: int, depth: int, indent: int, lines: list[str]) -> None:
        if reference <= 0 or depth <= 0 or len(lines) >= MAX_LINES:
            return
        body = await self.client.request("variables", {"variablesReference": reference})
        variables = [
            v for v in (body.get("variables") if isinstance(body, dict) else None) or [] if isinstance(v, dict)
        ]
        variables = [v for v in variables if not _is_group(v)]
        for var in variables[:MAX_CHILDREN]:
            kind = f": {var['type']}" if var.get("type") else ""
            lines.append(f"{'  ' * indent}{var.get('name')}{kind} = {_short(str(var.get('value', '')))}")
            await self._expand(int(var.get("variablesReference", 0) or 0), depth - 1, indent + 1, lines)
        if len(variables) > MAX_CHILDREN:
            lines.append(f"{'  ' * indent}... and {len(variables) - MAX_CHILDREN} more")

    async def evaluate(self, expression: str, frame: int, context: str) -> str:
        self.require_stopped()
        frame_id, _info = await self._frame_id(frame)
        body = await self.client.request(
            "evaluate", {"expression": expression, "frameId": frame_id, "context": context}
        )
        body = body if isinstance(body, dict) else {}
        kind = f" ({body['type']})" if body.get("type") else ""
        return f"{body.get('result', '')}{kind}"

    async def disconnect(self, terminate: bool) -> str:
        """Say goodbye to the adapter; the caller stops the process afterwards."""
        was_live = not self.ended
        if not self.client.closed:
            try:
                await self.client.request("disconnect", {"terminateDebuggee": terminate}, timeout=5)
            except Exception as exc:  # the adapter is closed right after either way
                logger.debug("disconnect failed: %s", exc)
        if was_live:
            return f"disconnected; the program was terminated{self._exit_note()}"
        return f"disconnected; the program had ended{self._exit_note()}"

    # -- helpers --------------------------------------------------------------------
    def _display(self, path: Path) -> str:
        rel = relative_text(path, self.workspace)
        return str(path) if rel is None else rel

    def _source_line(self, path: Path, line: int) -> str:
        if path not in self._sources:
            try:
                self._sources[path] = read_text(path)
            except OSError:
                self._sources[path] = None
        text = self._sources[path]
        found = line_at(text, line - 1) if text is not None and line >= 1 else None
        return (found or "").strip()
