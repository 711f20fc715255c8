"""What the LSP and DAP clients share: the reader loop, loss bookkeeping and sending.

A subclass sets :attr:`PeerClient.peer_label` ("server", "debug adapter") and
:attr:`PeerClient.connection_lost` (its own exception type), implements
``_dispatch`` (one message from the peer) and may extend ``_poke`` (wake what
waits on the connection's activity). Requests waiting for their answer are
:class:`PendingRequest` entries of ``_pending`` (by id): when the connection is
lost, every one of them is woken at once.

``LspClient`` (kairox-lsp) and ``DapClient`` (kairox-dap) are its subclasses.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar, Protocol

import anyio
import anyio.abc
import attrs

__all__ = ["MessagePeer", "PeerClient", "PendingRequest"]

logger = logging.getLogger(__name__)


class MessagePeer(Protocol):
    """Sends and receives framed messages (a :class:`~kairox_peer.StdioPeer` or a fake)."""

    async def send(self, message: Mapping[str, Any]) -> None: ...

    def messages(self) -> AsyncIterator[Any]: ...


@attrs.define
class PendingRequest:
    """A request sent and not answered yet: ``done`` is set when its ``response`` came
    (or the connection was lost, with ``response`` still ``None``)."""

    name: str  # the LSP method, the DAP command
    done: anyio.Event = attrs.field(factory=anyio.Event)
    response: dict[str, Any] | None = None


class PeerClient:
    """One connection to one peer; ``run()`` reads until the peer's output closes."""

    peer_label: ClassVar[str] = "server"
    connection_lost: ClassVar[type[Exception]] = ConnectionError

    def __init__(
        self,
        peer: MessagePeer,
        *,
        name: str,
        request_timeout: float,
        describe_loss: Callable[[], str] | None,
    ) -> None:
        self.peer = peer
        self.name = name
        self.request_timeout = request_timeout
        self.describe_loss = describe_loss
        self._pending: dict[int, PendingRequest] = {}
        self._lost: str | None = None
        self._closed = anyio.Event()

    # -- state --------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._lost is not None

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def _loss_text(self) -> str:
        detail = ""
        if self.describe_loss is not None:
            try:
                detail = self.describe_loss()
            except Exception:  # pragma: no cover - a description must never break failing
                logger.debug("describe_loss failed", exc_info=True)
        return f"{self.peer_label} {self.name} closed the connection" + (f": {detail}" if detail else "")

    def _mark_lost(self) -> None:
        if self._lost is None:
            self._lost = self._loss_text()
        for pending in self._pending.values():
            pending.done.set()
        self._closed.set()
        self._poke()

    def _poke(self) -> None:
        """Wake whatever waits on activity (subclasses keep their own events)."""

    # -- reading ------------------------------------------------------------
    async def run(self) -> None:
        """Read until the peer's output closes; ``_dispatch`` gets each object and may start tasks in ``tg``."""
        try:
            async with anyio.create_task_group() as tg:
                async for message in self.peer.messages():
                    if isinstance(message, dict):
                        self._dispatch(message, tg)
                    else:
                        logger.warning("%s: ignoring a message that is not an object", self.name)
                tg.cancel_scope.cancel()
        except Exception as exc:
            logger.debug("%s: reading failed", self.name, exc_info=True)
            self._lost = f"{self._loss_text()} ({type(exc).__name__}: {exc})"
        finally:
            self._mark_lost()

    def _dispatch(self, message: dict[str, Any], tg: anyio.abc.TaskGroup) -> None:
        """One message from the peer (an object; anything else was logged and dropped)."""
        raise NotImplementedError

    # -- sending ------------------------------------------------------------
    async def _send(self, message: dict[str, Any]) -> None:
        if self._lost is not None:
            raise self.connection_lost(self._lost)
        try:
            await self.peer.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self.connection_lost(self._lost or f"{self._loss_text()} ({type(exc).__name__})") from None
