"""What the LSP and DAP clients share: the reader loop, loss bookkeeping and sending.

A subclass sets :attr:`PeerClient.peer_label` ("server", "debug adapter") and
:attr:`PeerClient.connection_lost` (its own exception type), implements
``_dispatch`` (one message from the peer) and may extend ``_poke`` (wake what
waits on the connection's activity).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar, Protocol

import anyio
import anyio.abc

__all__ = ["MessagePeer", "PeerClient"]

logger = logging.getLogger(__name__)


class MessagePeer(Protocol):
    """Sends and receives framed messages (a :class:`~kairox_lsp._process.StdioPeer` or a fake)."""

    async def send(self, message: Mapping[str, Any]) -> None: ...

    def messages(self) -> AsyncIterator[Any]: ...


class _HasDone(Protocol):
    done: anyio.Event


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
        self._pending: dict[int, Any] = {}
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
        """Read until the peer's output closes; ``_dispatch`` may start tasks in ``tg``."""
        try:
            async with anyio.create_task_group() as tg:
                async for message in self.peer.messages():
                    self._dispatch(message, tg)
                tg.cancel_scope.cancel()
        except Exception as exc:
            logger.debug("%s: reading failed", self.name, exc_info=True)
            self._lost = f"{self._loss_text()} ({type(exc).__name__}: {exc})"
        finally:
            self._mark_lost()

    def _dispatch(self, message: Any, tg: anyio.abc.TaskGroup) -> None:
        raise NotImplementedError

    # -- sending ------------------------------------------------------------
    async def _send(self, message: dict[str, Any]) -> None:
        if self._lost is not None:
            raise self.connection_lost(self._lost)
        try:
            await self.peer.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self.connection_lost(self._lost or f"{self._loss_text()} ({type(exc).__name__})") from None
