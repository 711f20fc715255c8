"""LspClient: JSON-RPC 2.0 over a framed message peer (a server process or a fake).

Plain dicts on the wire. Every request has a timeout; when it expires (or the
caller is cancelled) ``$/cancelRequest`` is sent and the caller gets
:class:`RequestTimeout`. Every request the server sends is answered in its own
task. ``$/progress`` is tracked so a request that needs the workspace indexed
can wait for the server to go idle. When the server's output closes, every
pending request fails at once with :class:`ConnectionLost`.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from kairox_peer import MessagePeer, PeerClient, PendingRequest

from ._positions import Encoding, negotiated_encoding

__all__ = [
    "CLIENT_CAPABILITIES",
    "ConnectionLost",
    "LspClient",
    "LspError",
    "MessagePeer",
    "RequestTimeout",
    "lookup_setting",
]

logger = logging.getLogger(__name__)

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

#: only what the tools use: sync, definition, references, hover, symbols, push diagnostics, progress
CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16", "utf-32", "utf-8"]},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "symbol": {"dynamicRegistration": False},
        "didChangeConfiguration": {"dynamicRegistration": False},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False, "willSave": False},
        "definition": {"dynamicRegistration": False, "linkSupport": True},
        "references": {"dynamicRegistration": False},
        "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"dynamicRegistration": False, "hierarchicalDocumentSymbolSupport": True},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
    },
    "window": {"workDoneProgress": True, "showMessage": {}, "showDocument": {"support": False}},
}


class LspError(Exception):
    """The server answered a request with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"{message} (code {code})")


class RequestTimeout(TimeoutError):
    """A request got no answer in time (it was cancelled with ``$/cancelRequest``)."""


class ConnectionLost(ConnectionError):
    """The server's output closed (it exited or crashed) before the answer came."""


def lookup_setting(settings: Mapping[str, Any], section: str | None) -> Any:
    """The value for a ``workspace/configuration`` item: nested tables or flat dotted keys both work."""
    if not section:
        return dict(settings)
    if section in settings:
        return settings[section]
    node: Any = settings
    parts = section.split(".")
    for index, part in enumerate(parts):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            continue
        # a flat key below this level: {"python.analysis": {...}} or {"analysis.mode": 1}
        if isinstance(node, Mapping):
            rest = ".".join(parts[index:])
            if rest in node:
                return node[rest]
            prefix = rest + "."
            flat = {k[len(prefix) :]: v for k, v in node.items() if isinstance(k, str) and k.startswith(prefix)}
            if flat:
                return flat
        return None
    return node


class LspClient(PeerClient):
    """One connection to one language server."""

    peer_label = "server"
    connection_lost = ConnectionLost

    def __init__(
        self,
        peer: MessagePeer,
        *,
        name: str = "lsp",
        root: Path | None = None,
        settings: Mapping[str, Any] | None = None,
        request_timeout: float = 30.0,
        describe_loss: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(peer, name=name, request_timeout=request_timeout, describe_loss=describe_loss)
        self.root = root
        self.settings: Mapping[str, Any] = settings or {}
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.encoding: Encoding = "utf-16"
        self.registrations: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        # progress: token -> title of what is running
        self.progress: dict[str | int, str] = {}
        self._activity = anyio.Event()
        # diagnostics: uri -> (version, diagnostics); fresh = published since the last change we sent
        self.diagnostics: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self._fresh: set[str] = set()
        self._diag_changed = anyio.Event()
        self._ready_at: float | None = None

    def _poke(self) -> None:
        self._activity.set()
        self._activity = anyio.Event()
        self._diag_changed.set()
        self._diag_changed = anyio.Event()

    # -- reading ------------------------------------------------------------
    def _dispatch(self, message: dict[str, Any], tg: anyio.abc.TaskGroup) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            rid = message.get("id")
            pending = self._pending.get(rid) if isinstance(rid, int) else None
            if pending is None:
                logger.debug("%s: answer to an unknown request %r", self.name, message.get("id"))
                return
            pending.response = message
            pending.done.set()
            return
        if "id" in message:
            tg.start_soon(self._answer, message)
        else:
            self._notification(method, message.get("params"))

    # -- requests we send ------------------------------------------------------
    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and return its ``result``.

        Raises :class:`LspError`, :class:`RequestTimeout` (after sending
        ``$/cancelRequest``) or :class:`ConnectionLost`.
        """
        rid = next(self._ids)
        pending = PendingRequest(method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        limit = self.request_timeout if timeout is None else timeout
        self._pending[rid] = pending
        try:
            await self._send(message)
            with anyio.fail_after(limit):
                await pending.done.wait()
        except TimeoutError:
            await self._cancel(rid)
            raise RequestTimeout(f"{method}: no answer from {self.name} within {limit:g} s") from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(rid)
            raise
        finally:
            self._pending.pop(rid, None)
        response = pending.response
        if response is None:
            raise ConnectionLost(self._lost or self._loss_text())
        error = response.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise LspError(INTERNAL_ERROR, f"malformed error {error!r}")
            raise LspError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
        return response.get("result")

    async def _cancel(self, rid: int) -> None:
        if self._lost is not None:
            return
        with anyio.move_on_after(1.0):
            try:
                await self.notify("$/cancelRequest", {"id": rid})
            except ConnectionLost:
                pass

    # -- requests the server sends ---------------------------------------------
    async def _answer(self, message: dict[str, Any]) -> None:
        method = message["method"]
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = self._handle_request(method, message.get("params"))
        except _NotHandled:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"kairox does not handle {method}"}
        except Exception as exc:
            logger.debug("%s: answering %s failed", self.name, method, exc_info=True)
            reply["error"] = {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}
        try:
            await self._send(reply)
        except ConnectionLost:
            pass

    def workspace_folders(self) -> list[dict[str, str]] | None:
        if self.root is None:
            return None
        return [{"uri": self.root.as_uri(), "name": self.root.name or str(self.root)}]

    def _handle_request(self, method: str, params: Any) -> Any:
        params = params if isinstance(params, dict) else {}
        if method == "workspace/configuration":
            items = params.get("items") or []
            return [lookup_setting(self.settings, (i or {}).get("section")) for i in items]
        if method == "window/workDoneProgress/create":
            token = params.get("token")
            if isinstance(token, (str, int)):
                self.progress.setdefault(token, "")
            return None
        if method == "client/registerCapability":
            for reg in params.get("registrations") or []:
                if isinstance(reg, dict) and "id" in reg:
                    self.registrations[str(reg["id"])] = reg
            return None
        if method == "client/unregisterCapability":
            for reg in params.get("unregisterations") or params.get("unregistrations") or []:
                if isinstance(reg, dict):
                    self.registrations.pop(str(reg.get("id")), None)
            return None
        if method == "workspace/workspaceFolders":
            return self.workspace_folders()
        if method == "window/showMessageRequest":
            logger.info("%s: %s", self.name, params.get("message", ""))
            return None
        if method == "window/showDocument":
            return {"success": False}
        if method == "workspace/applyEdit":
            return {"applied": False, "failureReason": "kairox does not apply edits from language servers"}
        if method.startswith("workspace/") and method.endswith("/refresh"):
            return None
        raise _NotHandled(method)

    # -- notifications --------------------------------------------------------
    def _notification(self, method: str, params: Any) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "$/progress":
            self._on_progress(params)
        elif method == "textDocument/publishDiagnostics":
            uri = params.get("uri")
            if isinstance(uri, str):
                version = params.get("version")
                diags = [d for d in params.get("diagnostics") or [] if isinstance(d, dict)]
                self.diagnostics[uri] = (version if isinstance(version, int) else None, diags)
                self._fresh.add(uri)
                self._diag_changed.set()
                self._diag_changed = anyio.Event()
        elif method in ("window/logMessage", "window/showMessage"):
            logger.debug("%s: %s", self.name, params.get("message", ""))

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params.get("token")
        value = params.get("value")
        if not isinstance(token, (str, int)) or not isinstance(value, dict):
            return
        kind = value.get("kind")
        if kind == "begin":
            self.progress[token] = str(value.get("title") or "")
        elif kind == "end":
            self.progress.pop(token, None)
        self._activity.set()
        self._activity = anyio.Event()

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no work-done progress is running (indexing, analysis); False on timeout."""
        with anyio.move_on_after(timeout):
            while self.progress and self._lost is None:
                await self._activity.wait()
            return True
        return False

    # -- diagnostics ------------------------------------------------------------
    def mark_changed(self, uri: str) -> None:
        """A document was opened or changed: its diagnostics are stale until republished."""
        self._fresh.discard(uri)

    async def wait_diagnostics(self, uri: str, timeout: float) -> bool:
        """Wait until diagnostics for ``uri`` were published since its last change; False on timeout."""
        with anyio.move_on_after(timeout):
            while uri not in self._fresh and self._lost is None:
                await self._diag_changed.wait()
            return uri in self._fresh
        return False

    # -- lifecycle --------------------------------------------------------------
    async def initialize(self, *, initialization_options: Any = None, timeout: float | None = None) -> dict[str, Any]:
        """``initialize`` + ``initialized`` (+ ``workspace/didChangeConfiguration`` when there are settings)."""
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": "kairox"},
            "locale": "en",
            "rootUri": self.root.as_uri() if self.root else None,
            "rootPath": str(self.root) if self.root else None,
            "workspaceFolders": self.workspace_folders(),
            "capabilities": CLIENT_CAPABILITIES,
        }
        if initialization_options is not None:
            params["initializationOptions"] = initialization_options
        result = await self.request("initialize", params, timeout=timeout)
        result = result if isinstance(result, dict) else {}
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        self.encoding = negotiated_encoding(self.server_capabilities)
        self._ready_at = anyio.current_time()
        await self.notify("initialized", {})
        if self.settings:
            await self.notify("workspace/didChangeConfiguration", {"settings": dict(self.settings)})
        return self.server_capabilities

    async def shutdown(self, timeout: float) -> None:
        """``shutdown`` then ``exit``; never raises (the process is killed after this anyway)."""
        if self._lost is not None:
            return
        with anyio.move_on_after(timeout):
            try:
                await self.request("shutdown", None, timeout=timeout)
            except (LspError, RequestTimeout, ConnectionLost):
                pass
            try:
                await self.notify("exit")
            except ConnectionLost:
                pass

    def age(self) -> float:
        """Seconds since ``initialize`` was answered (0 before)."""
        return anyio.current_time() - self._ready_at if self._ready_at is not None else 0.0

    def supports(self, capability: str) -> bool:
        """Does the server offer ``capability`` (``definitionProvider``, ...), statically or by registration?"""
        value = self.server_capabilities.get(capability)
        if value not in (None, False):
            return True
        method = {
            "definitionProvider": "textDocument/definition",
            "referencesProvider": "textDocument/references",
            "hoverProvider": "textDocument/hover",
            "documentSymbolProvider": "textDocument/documentSymbol",
            "workspaceSymbolProvider": "workspace/symbol",
        }.get(capability)
        return method is not None and any(r.get("method") == method for r in self.registrations.values())


class _NotHandled(Exception):
    pass
