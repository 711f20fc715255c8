"""The audit of the gateway's tool calls: one JSON line per call, and a :class:`CallAudited` event.

The kernel's call pipeline says what happened (its ``ToolCallStarted`` and
``ToolCallFinished`` events: the call's id, outcome, detail and duration); the gateway knows
who asked (the principal), with which arguments, and whether its client was asked to approve.
:meth:`Auditor.call` opens a record around one call in the gateway's task; the kernel
publishes its events synchronously in that same task, so the auditor's subscriber finds the
record in a context variable and fills the kernel's part in. Nothing of the pipeline is
patched, and a call the gateway refuses itself (``[serve.principals]``) is recorded too.

A line holds: ``time`` (UTC, ISO 8601), ``principal`` and ``via`` (``jwt``, ``token``,
``local``), ``tool`` (canonical id) and ``name`` (exported), ``session``, ``call_id``,
``decision`` (``allow``, ``deny``, ``ask``: the client must answer first, ``invalid``: the
arguments do not fit the schema) and ``decided_by`` (``policy``, ``client``: the principal's
client answered an approval, ``session``: an earlier "allow for this session", ``hook``,
``principals``, ``limits``: ``[serve.limits]``, ``schema``), ``duration_ms``, ``outcome`` (``ok``, ``error``, ``denied``,
``failed``, ``input_required``), ``detail`` and ``arguments_sha256`` (of the arguments as
canonical JSON), or ``arguments`` themselves with ``[serve.audit] arguments = true``.

Each line is one ``write`` to a file opened with ``O_APPEND`` (lines of concurrent writers,
replicas sharing a file too, never interleave on a local file system) of at most
``max_line`` bytes: arguments that would not fit are left out (``arguments_cut``), then the
detail is cut.
"""

from __future__ import annotations

import contextvars
import datetime
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from kairox import ConfigError, Event, Runtime, ToolCallFinished, ToolCallStarted

from .config import AuditConfig

if TYPE_CHECKING:
    from kairox import Session, ToolSpec

    from .approval import ClientApprover
    from .identity import Principal

__all__ = ["AuditLog", "Auditor", "CallAudited", "arguments_digest"]

logger = logging.getLogger(__name__)

_MAX_DETAIL = 500


@attrs.frozen
class CallAudited(Event):
    """A tool call through the gateway ended (or was refused): the audit line as an event."""

    record: dict[str, Any]

    @property
    def principal(self) -> str:
        return str(self.record.get("principal", ""))


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the arguments as canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AuditLog:
    """Where audit lines go: ``config.file`` (appended) or standard output (``"-"``)."""

    def __init__(self, config: AuditConfig) -> None:
        self.config = config
        self._fd: int | None = None
        self._own = False

    def open(self) -> None:
        if self.config.file == "-":
            self._fd = 1
            return
        path = os.path.expanduser(self.config.file)
        # never through a link (one planted in a shared folder would have the lines, which
        # quote callers' text, appended to a file of the planter's choosing, a shell's rc file),
        # and never blocking (a FIFO there would hold the gateway's start)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            why = "it is a symbolic link" if os.path.islink(path) else str(exc)
            raise ConfigError(f"cannot open the audit file {path}: {why}", path="serve.audit.file") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ConfigError(f"the audit file {path} is not a regular file", path="serve.audit.file")
        os.set_blocking(fd, True)
        self._fd, self._own = fd, True

    def close(self) -> None:
        if self._own and self._fd is not None:
            os.close(self._fd)
        self._fd, self._own = None, False

    def line(self, record: dict[str, Any]) -> bytes:
        """``record`` as one JSON line of at most ``max_line`` bytes."""
        data = _dumps(record)
        if len(data) > self.config.max_line and "arguments" in record:
            record = {**record, "arguments": None, "arguments_cut": True}
            data = _dumps(record)
        if len(data) > self.config.max_line:
            record = {**record, "detail": str(record.get("detail", ""))[:100], "detail_cut": True}
            data = _dumps(record)
        return data[: self.config.max_line - 1] + b"\n" if len(data) >= self.config.max_line else data + b"\n"

    def write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        data = self.line(record)
        try:
            # one write of a small line (a few KiB at most) to an O_APPEND file: atomic, and
            # quicker than a thread hop
            written = os.write(self._fd, data)
            if written != len(data):
                logger.error("kairox serve: the audit line was written short (%d of %d bytes)", written, len(data))
        except OSError as exc:
            logger.error("kairox serve: cannot write the audit line: %s", exc)


def _dumps(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8", "replace")


@attrs.define
class _Pending:
    """One call's record while it runs: the gateway's part, and the kernel's when it comes."""

    principal: Principal
    spec: ToolSpec
    arguments: dict[str, Any]
    session_id: str | None
    approved_before: bool
    started: float
    call_id: str | None = None
    kernel: ToolCallFinished | None = None


_pending: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar("kairox_serve_audit", default=None)


class Auditor:
    """The gateway's audit: lines to ``log`` (when ``[serve.audit]`` is set) and
    :class:`CallAudited` events (when someone listens)."""

    def __init__(self, runtime: Runtime, config: AuditConfig | None) -> None:
        self.rt = runtime
        self.log = AuditLog(config) if config is not None else None

    def wanted(self) -> bool:
        return self.log is not None or self.rt.events.has_listeners(CallAudited)

    @contextmanager
    def running(self) -> Iterator[Auditor]:
        if self.log is not None:
            self.log.open()
        unsubscribe = self.rt.events.subscribe(
            self._kernel_event, ToolCallStarted, ToolCallFinished, active=self.wanted
        )
        try:
            yield self
        finally:
            unsubscribe()
            if self.log is not None:
                self.log.close()

    def _kernel_event(self, event: Event) -> None:
        pending = _pending.get()
        if pending is None:
            return
        if isinstance(event, ToolCallStarted):
            if pending.call_id is None and event.tool == pending.spec.id:
                pending.call_id = event.call_id
        elif isinstance(event, ToolCallFinished) and event.call_id == pending.call_id:
            pending.kernel = event

    @contextmanager
    def call(
        self,
        principal: Principal,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        session: Session,
        approver: ClientApprover,
    ) -> Iterator[dict[str, Any]]:
        """Around one call in its session: yields a dict where the gateway may put
        ``outcome`` (``input_required``) for what the kernel's events cannot tell; the
        record is written when the call ends."""
        if not self.wanted():
            yield {}
            return
        pending = _Pending(
            principal, spec, dict(arguments), session.id, spec.id in session.approved, time.perf_counter()
        )
        token = _pending.set(pending)
        said: dict[str, Any] = {}
        try:
            yield said
        finally:
            _pending.reset(token)
            self._record(pending, approver, said)

    def refused(
        self, principal: Principal, spec: ToolSpec, arguments: Mapping[str, Any], why: str, *, by: str = "principals"
    ) -> None:
        """A call the gateway refused before the pipeline (``by``: ``principals``, ``limits``)."""
        if not self.wanted():
            return
        pending = _Pending(principal, spec, dict(arguments), None, False, time.perf_counter())
        self.emit(_record(pending, "deny", by, "denied", why, self._with_arguments()))

    def _with_arguments(self) -> bool:
        return self.log is not None and self.log.config.arguments

    def _record(self, pending: _Pending, approver: ClientApprover, said: Mapping[str, Any]) -> None:
        kernel = pending.kernel
        outcome = said.get("outcome") or (kernel.outcome if kernel is not None else "failed")
        detail = said.get("detail") or (kernel.detail if kernel is not None else "")
        asked = approver.asked is not None
        if outcome == "input_required":
            decision, by = "ask", "policy"
        elif outcome == "denied":
            decision = "deny"
            # the client was asked and said no (or answered what the form did not offer)
            by = "client" if asked and ("declined" in detail or "did not offer" in detail) else "policy"
            if detail.startswith(("blocked by a hook", "a hook")):
                by = "hook"
        elif outcome == "error" and detail.startswith("invalid arguments"):
            decision, by = "invalid", "schema"
        else:
            decision = "allow"
            by = "client" if asked else "session" if pending.approved_before else "policy"
        self.emit(_record(pending, decision, by, outcome, detail, self._with_arguments()))

    def emit(self, record: dict[str, Any]) -> None:
        if self.log is not None:
            self.log.write(record)
        if self.rt.events.has_listeners(CallAudited):
            self.rt.events.publish(CallAudited(record=record))


def _record(
    pending: _Pending, decision: str, by: str, outcome: str, detail: str, with_arguments: bool
) -> dict[str, Any]:
    kernel = pending.kernel
    duration = kernel.duration_s if kernel is not None else time.perf_counter() - pending.started
    record: dict[str, Any] = {
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
        "principal": pending.principal.name,
        "via": pending.principal.via,
        "tool": pending.spec.id,
        "name": pending.spec.exported_name,
        "session": pending.session_id,
        "call_id": pending.call_id,
        "decision": decision,
        "decided_by": by,
        "duration_ms": round(duration * 1000, 3),
        "outcome": outcome,
        "detail": detail[:_MAX_DETAIL],
        "arguments_sha256": arguments_digest(pending.arguments),
    }
    if with_arguments:
        record["arguments"] = pending.arguments
    return record
