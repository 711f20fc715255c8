"""The ``lsp.*`` tools: what they take, what they ask the server, what they print.

Positions are a path plus a 1-based ``line`` and ``column`` (characters), or a
``symbol`` name: looked up in the file's symbols (or, without ``line``,
anywhere in the file; with ``line``, on that line), or without a ``path``
through ``workspace/symbol``. Results are ``path:line:col: source line``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from kairox import Capability, ToolResult
from kairox_peer import PeerErrors, PeerTool, ToolInputError, object_schema

from ._client import ConnectionLost, LspClient, LspError, RequestTimeout
from ._documents import OpenDocument, SourceCache, uri_to_path
from ._format import Location, Renderer, hover_text, kind_name, locations_of, severity_name
from ._lifecycle import LspServerLifecycle, ServerUnavailable
from ._positions import Encoding, from_server_character, to_server_character

if TYPE_CHECKING:
    from ._provider import LspToolProvider

__all__ = ["LSP_ERRORS", "TOOL_CAPABILITIES", "LspOperations", "build_tools"]

logger = logging.getLogger(__name__)

#: seconds after start during which an empty workspace answer is not trusted
WARMUP = 10.0


_PATH = {"type": "string", "description": "File path, relative to the workspace or absolute."}
_LINE = {"type": "integer", "minimum": 1, "description": "1-based line."}
_COLUMN = {"type": "integer", "minimum": 1, "description": "1-based column, in characters."}
_SYMBOL = {
    "type": "string",
    "description": "A symbol name (e.g. `Circle` or `Circle.area`), instead of line/column; "
    "with `path` it is looked up in that file (on `line` when given), without it in the workspace.",
}
_SERVER = {"type": "string", "description": "Language server to ask (default: the one whose file patterns match)."}


_POSITIONAL = {"path": _PATH, "line": _LINE, "column": _COLUMN, "symbol": _SYMBOL, "server": _SERVER}

#: tool -> (description, input schema, server capability it needs or None)
TOOL_CAPABILITIES: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "lsp.definition": (
        "Go to the definition of the symbol at a position (or of a named symbol). "
        "Returns path:line:col with the source line of each definition.",
        object_schema(_POSITIONAL),
        "definitionProvider",
    ),
    "lsp.references": (
        "Find every reference to the symbol at a position (or a named symbol) across the workspace.",
        object_schema(
            {
                **_POSITIONAL,
                "include_declaration": {"type": "boolean", "default": True},
                "limit": {"type": "integer", "minimum": 1, "default": 200},
            }
        ),
        "referencesProvider",
    ),
    "lsp.hover": (
        "Type information and documentation of the symbol at a position (or a named symbol).",
        object_schema(_POSITIONAL),
        "hoverProvider",
    ),
    "lsp.document_symbols": (
        "The classes, functions, variables ... defined in one file, as an indented outline.",
        object_schema({"path": _PATH, "server": _SERVER}, ["path"]),
        "documentSymbolProvider",
    ),
    "lsp.workspace_symbols": (
        "Search symbols by name across the workspace.",
        object_schema(
            {
                "query": {"type": "string", "description": "Name or part of a name."},
                "server": _SERVER,
                "limit": {"type": "integer", "minimum": 1, "default": 50},
            },
            ["query"],
        ),
        "workspaceSymbolProvider",
    ),
    "lsp.diagnostics": (
        "Errors and warnings the language server reports for a file (or every open file when no path is given).",
        object_schema({"path": _PATH, "server": _SERVER}),
        None,
    ),
}


@attrs.frozen
class _Target:
    server: LspServerLifecycle
    client: LspClient
    doc: OpenDocument
    line: int  # 0-based
    column: int  # 0-based characters
    word: str

    @property
    def position(self) -> dict[str, int]:
        lines = self.doc.lines
        text = lines[self.line] if self.line < len(lines) else ""
        return {"line": self.line, "character": to_server_character(text, self.column, self.client.encoding)}

    @property
    def text_document(self) -> dict[str, str]:
        return {"uri": self.doc.uri}


_WORD = re.compile(r"\w+")


def _word_at(line_text: str, column: int) -> str:
    for m in _WORD.finditer(line_text):
        if m.start() <= column <= m.end():
            return m.group(0)
    return ""


def _find_word(line_text: str, name: str) -> int | None:
    m = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", line_text)
    return m.start() if m else None


def _int_arg(args: dict[str, Any], name: str, default: int | None = None) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolInputError(f"`{name}` must be a positive integer, got {value!r}")
    return value


def _str_arg(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"`{name}` must be a non-empty string")
    return value.strip()


def _symbol_order(sym: dict[str, Any]) -> tuple[str, int, int]:
    locs = locations_of({"uri": "", "range": sym.get("selectionRange")}) or locations_of(sym.get("location"))
    return (locs[0].uri, locs[0].line, locs[0].character) if locs else ("", 0, 0)


def _flatten_symbols(result: Any, prefix: str = "", depth: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
    """(depth, qualified name, symbol) for DocumentSymbol trees and SymbolInformation lists."""
    out: list[tuple[int, str, dict[str, Any]]] = []
    symbols = [s for s in result if isinstance(s, dict)] if isinstance(result, list) else []
    for sym in sorted(symbols, key=_symbol_order):
        if not isinstance(sym.get("name"), str):
            continue
        qualified = f"{prefix}.{sym['name']}" if prefix else sym["name"]
        if "location" in sym and not prefix:
            container = sym.get("containerName")
            qualified = f"{container}.{sym['name']}" if isinstance(container, str) and container else sym["name"]
        out.append((depth, qualified, sym))
        out.extend(_flatten_symbols(sym.get("children"), qualified, depth + 1))
    return out


def _symbol_start(sym: dict[str, Any]) -> tuple[str | None, int, int] | None:
    """(uri or None for the same document, 0-based line, server character) of a symbol's name."""
    if "selectionRange" in sym:
        locs = locations_of({"uri": "", "range": sym["selectionRange"]})
        return (None, locs[0].line, locs[0].character) if locs else None
    locs = locations_of(sym.get("location"))
    return (locs[0].uri, locs[0].line, locs[0].character) if locs else None


async def _workspace_symbol(client: LspClient, query: str) -> Any:
    """``workspace/symbol``; an empty answer from a server that started moments ago is asked again.

    Servers load the workspace after ``initialize`` and some (pyright) report
    no progress for it: their first answers are empty until it is loaded.
    """
    delay = 0.05
    while True:
        result = await client.request("workspace/symbol", {"query": query})
        if result or client.age() >= WARMUP:
            return result
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.5)


def _name_start(sym: dict[str, Any], lines: list[str], encoding: Encoding) -> tuple[int, int] | None:
    """(0-based line, 0-based character column) of a symbol's name in its document.

    ``DocumentSymbol.selectionRange`` points at the name; a ``SymbolInformation``
    range often starts at its statement (``def``, ``class``), so the name is
    searched for on that line.
    """
    start = _symbol_start(sym)
    if start is None or not 0 <= start[1] < len(lines):
        return None
    text = lines[start[1]]
    col = from_server_character(text, start[2], encoding)
    found = _find_word(text[col:], str(sym.get("name", "")).rsplit(".", 1)[-1])
    return start[1], col + (found or 0)


class LspOperations:
    """The implementations behind the tools (one per provider)."""

    def __init__(self, provider: LspToolProvider) -> None:
        self.provider = provider
        self.sources = SourceCache(provider.workspace)
        self._paths: dict[str, Path] = {}

    @property
    def workspace(self) -> Path:
        return self.provider.workspace

    # -- resolving arguments ---------------------------------------------------
    def _path(self, value: str) -> Path:
        """The path an argument names (relative to the workspace); :meth:`_open` finds out whether it exists."""
        path = self._paths.get(value)
        if path is None:
            expanded = os.path.expanduser(value)
            path = Path(os.path.normpath(os.path.join(self.workspace, expanded)))
            if len(self._paths) > 4096:
                self._paths.clear()
            self._paths[value] = path
        return path

    def _server(self, path: Path | None, name: str | None) -> LspServerLifecycle:
        return self.provider.server_for(path, name)

    async def _open(self, path: Path, server_name: str | None) -> tuple[LspServerLifecycle, LspClient, OpenDocument]:
        """Route ``path`` to its server and open it there (``ensure`` stats it: no separate existence check)."""
        server = self._server(path, server_name)
        client = await server.ready_client()
        try:
            doc = await server.documents.ensure(client, path)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolInputError(f"no such file: {self._display(path)}") from None
        except IsADirectoryError:
            raise ToolInputError(f"{self._display(path)} is a directory, not a file") from None
        return server, client, doc

    async def _target(self, args: dict[str, Any]) -> _Target:
        path_arg = _str_arg(args, "path")
        symbol = _str_arg(args, "symbol")
        line = _int_arg(args, "line")
        column = _int_arg(args, "column")
        server_name = _str_arg(args, "server")
        if path_arg is None:
            if symbol is None:
                raise ToolInputError("give `path` with `line` and `column`, or a `symbol`")
            return await self._workspace_target(symbol, server_name)
        server, client, doc = await self._open(self._path(path_arg), server_name)
        lines = doc.lines
        shown = self._display(doc.path)
        if line is not None:
            if line > len(lines):
                raise ToolInputError(f"line {line} is past the end of {shown} ({len(lines)} lines)")
            text = lines[line - 1]
            if column is None:
                if symbol is None:
                    raise ToolInputError("give `column` (or a `symbol` on that line)")
                found = _find_word(text, symbol.rsplit(".", 1)[-1])
                if found is None:
                    raise ToolInputError(f"`{symbol}` does not occur on {shown}:{line}: {text.strip()}")
                column = found + 1
            if column > len(text) + 1:
                raise ToolInputError(f"column {column} is past the end of {shown}:{line} ({len(text)} characters)")
            return _Target(server, client, doc, line - 1, column - 1, _word_at(text, column - 1))
        if symbol is None:
            raise ToolInputError("give `line` and `column`, or a `symbol`")
        line0, col0 = await self._symbol_in_document(client, doc, symbol)
        return _Target(server, client, doc, line0, col0, _word_at(lines[line0], col0))

    async def _symbol_in_document(self, client: LspClient, doc: OpenDocument, symbol: str) -> tuple[int, int]:
        lines = doc.lines
        short = symbol.rsplit(".", 1)[-1]
        if client.supports("documentSymbolProvider"):
            result = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": doc.uri}})
            flat = _flatten_symbols(result)
            exact = [entry for entry in flat if entry[1] == symbol]
            by_name = [entry for entry in flat if entry[1].rsplit(".", 1)[-1] == short]
            for _depth, _qualified, sym in exact + by_name:
                pos = _name_start(sym, lines, client.encoding)
                if pos is not None:
                    return pos
        for index, text in enumerate(lines):
            found = _find_word(text, short)
            if found is not None:
                return index, found
        raise ToolInputError(f"`{symbol}` does not occur in {self._display(doc.path)}")

    async def _workspace_target(self, symbol: str, server_name: str | None) -> _Target:
        short = symbol.rsplit(".", 1)[-1]
        servers = self.provider.servers_supporting("workspaceSymbolProvider", server_name)
        if not servers:
            raise ToolInputError(
                f"to find `{symbol}` without a `path`, a running server must support workspace symbols; "
                "give `path` (the file it is used or defined in)"
            )
        for server in servers:
            client = await server.ready_client()
            result = await _workspace_symbol(client, short)
            candidates = [s for s in result or [] if isinstance(s, dict) and s.get("name") == short]
            container = symbol.rsplit(".", 1)[0] if "." in symbol else None
            if container:
                candidates.sort(key=lambda s: s.get("containerName") != container)
            for sym in candidates:
                locs = locations_of(sym.get("location"))
                path = uri_to_path(locs[0].uri) if locs else None
                if path is None or not path.is_file():
                    continue
                doc = await server.documents.ensure(client, path)
                lines = doc.lines
                if not 0 <= locs[0].line < len(lines):
                    continue
                text = lines[locs[0].line]
                col = from_server_character(text, locs[0].character, client.encoding)
                found = _find_word(text[col:], short)
                col += found or 0
                return _Target(server, client, doc, locs[0].line, col, short)
        raise ToolInputError(f"no symbol named `{symbol}` in the workspace")

    def _display(self, path: Path) -> str:
        return self.sources.display(path)

    def _renderer(self, server: LspServerLifecycle, client: LspClient) -> Renderer:
        return Renderer(self.workspace, client.encoding, server.documents.lines_of, self.sources)

    def _where(self, target: _Target) -> str:
        what = f"`{target.word}` " if target.word else ""
        return f"{what}at {self._display(target.doc.path)}:{target.line + 1}:{target.column + 1}"

    @staticmethod
    def _require(target: _Target, capability: str, what: str) -> None:
        if not target.client.supports(capability):
            raise ToolInputError(f"language server {target.server.name} does not support {what}")

    def _listing(self, header: str, renderer: Renderer, locs: list[Location], limit: int | None = None) -> ToolResult:
        shown = [renderer.position(loc) for loc in (locs[:limit] if limit else locs)]
        lines = [header, *(renderer.line_text(pos) for pos in shown)]
        if limit and len(locs) > limit:
            lines.append(f"... and {len(locs) - limit} more (raise `limit` to see them)")
        located = [{"path": p, "line": n, "column": c, "text": t} for p, n, c, t in shown]
        structured = {"locations": located, "total": len(locs)}
        return ToolResult.from_text("\n".join(lines), structured=structured)

    # -- the tools ----------------------------------------------------------------
    async def _ask_at(
        self, args: dict[str, Any], need: tuple[str, str], method: str, extra: Any = None, *, idle: bool = False
    ) -> tuple[_Target, Any]:
        """The target of ``args`` and the server's answer to ``method`` there.

        ``need`` is the capability and what it is called; ``extra`` params are added;
        ``idle``: first wait for the server's indexing to end (its answer counts only then)."""
        target = await self._target(args)
        self._require(target, *need)
        if idle:
            await target.client.wait_idle(target.server.config.request_timeout)
        params = {"textDocument": target.text_document, "position": target.position, **(extra or {})}
        return target, await target.client.request(method, params)

    async def definition(self, args: dict[str, Any]) -> ToolResult:
        target, result = await self._ask_at(args, ("definitionProvider", "go to definition"), "textDocument/definition")
        locs = locations_of(result)
        if not locs:
            return ToolResult.from_text(f"no definition found for {self._where(target)}")
        noun = "definition" if len(locs) == 1 else f"{len(locs)} definitions"
        return self._listing(f"{noun} of {self._where(target)}:", self._renderer(target.server, target.client), locs)

    async def references(self, args: dict[str, Any]) -> ToolResult:
        include = args.get("include_declaration", True)
        if not isinstance(include, bool):
            raise ToolInputError("`include_declaration` must be true or false")
        limit = _int_arg(args, "limit", 200)
        target, result = await self._ask_at(
            args,
            ("referencesProvider", "find references"),
            "textDocument/references",
            {"context": {"includeDeclaration": include}},
            idle=True,
        )
        locs = sorted(locations_of(result), key=lambda loc: (loc.uri, loc.line, loc.character))
        if not locs:
            return ToolResult.from_text(f"no references found for {self._where(target)}")
        noun = "1 reference" if len(locs) == 1 else f"{len(locs)} references"
        return self._listing(
            f"{noun} to {self._where(target)}:", self._renderer(target.server, target.client), locs, limit
        )

    async def hover(self, args: dict[str, Any]) -> ToolResult:
        target, result = await self._ask_at(args, ("hoverProvider", "hover"), "textDocument/hover")
        text = hover_text(result)
        if not text:
            return ToolResult.from_text(f"no hover information for {self._where(target)}")
        return ToolResult.from_text(
            f"{self._where(target)}:\n{text}",
            structured={"hover": text, "path": self._display(target.doc.path), "line": target.line + 1},
        )

    async def document_symbols(self, args: dict[str, Any]) -> ToolResult:
        path_arg = _str_arg(args, "path")
        if path_arg is None:
            raise ToolInputError("`path` is required")
        server, client, doc = await self._open(self._path(path_arg), _str_arg(args, "server"))
        if not client.supports("documentSymbolProvider"):
            raise ToolInputError(f"language server {server.name} does not support document symbols")
        result = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": doc.uri}})
        shown = self._display(doc.path)
        doc_lines = doc.lines
        flat = _flatten_symbols(result)
        if not flat:
            return ToolResult.from_text(f"no symbols in {shown}")
        lines = [f"{len(flat)} symbols in {shown}:"]
        items = []
        for depth, qualified, sym in flat:
            pos = _name_start(sym, doc_lines, client.encoding)
            if pos is None:
                continue
            line, column = pos[0] + 1, pos[1] + 1
            name = sym["name"] if "selectionRange" in sym else qualified
            detail = sym.get("detail")
            extra = f"  {detail}" if isinstance(detail, str) and detail and len(detail) < 80 else ""
            lines.append(f"{'  ' * depth}{kind_name(sym.get('kind'))} {name}  {shown}:{line}:{column}{extra}")
            items.append({"name": qualified, "kind": kind_name(sym.get("kind")), "line": line, "column": column})
        return ToolResult.from_text("\n".join(lines), structured={"symbols": items})

    async def workspace_symbols(self, args: dict[str, Any]) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str):
            raise ToolInputError("`query` must be a string")
        limit = _int_arg(args, "limit", 50) or 50
        servers = self.provider.servers_supporting("workspaceSymbolProvider", _str_arg(args, "server"))
        if not servers:
            raise ToolInputError("no running language server supports workspace symbols")
        rows: list[tuple[int, str, str, dict[str, Any]]] = []
        for server in servers:
            client = await server.ready_client()
            await client.wait_idle(server.config.request_timeout)
            result = await _workspace_symbol(client, query)
            renderer = self._renderer(server, client)
            for sym in result or []:
                if not isinstance(sym, dict) or not isinstance(sym.get("name"), str):
                    continue
                locs = locations_of(sym.get("location"))
                if not locs:
                    continue
                container = sym.get("containerName")
                name = f"{container}.{sym['name']}" if isinstance(container, str) and container else sym["name"]
                rank = 0 if sym["name"] == query else 1 if sym["name"].lower().startswith(query.lower()) else 2
                rows.append((rank, name, f"{kind_name(sym.get('kind'))} {name}  {renderer.location(locs[0])}", sym))
        if not rows:
            return ToolResult.from_text(f"no symbols match {query!r}")
        rows.sort(key=lambda r: (r[0], r[1]))
        shown = rows[:limit]
        lines = [f"{len(rows)} symbols match {query!r}:", *(r[2] for r in shown)]
        if len(rows) > limit:
            lines.append(f"... and {len(rows) - limit} more (raise `limit` to see them)")
        return ToolResult.from_text(
            "\n".join(lines),
            structured={"symbols": [{"name": r[1], "kind": kind_name(r[3].get("kind"))} for r in shown]},
        )

    async def diagnostics(self, args: dict[str, Any]) -> ToolResult:
        path_arg = _str_arg(args, "path")
        server_name = _str_arg(args, "server")
        if path_arg is not None:
            server, client, doc = await self._open(self._path(path_arg), server_name)
            fresh = await client.wait_diagnostics(doc.uri, server.config.request_timeout)
            entries = [(server, client, doc.uri)]
        else:
            fresh = True
            entries = []
            for server in self.provider.ready_servers(server_name):
                if server.client is not None:
                    entries.extend((server, server.client, uri) for uri in sorted(server.client.diagnostics))
        lines: list[str] = []
        items: list[dict[str, Any]] = []
        for server, client, uri in entries:
            renderer = self._renderer(server, client)
            _version, diags = client.diagnostics.get(uri, (None, []))
            located = [(locs[0], d) for d in diags if (locs := locations_of({"uri": uri, "range": d.get("range")}))]
            for loc, d in sorted(located, key=lambda pair: (pair[0].line, pair[0].character)):
                pos = renderer.location_dict(loc)
                severity = severity_name(d.get("severity"))
                tag = " ".join(str(x) for x in (d.get("source"), d.get("code")) if x not in (None, ""))
                message = " ".join(str(d.get("message", "")).split())
                lines.append(
                    f"{pos['path']}:{pos['line']}:{pos['column']}: {severity}: {message}" + (f" [{tag}]" if tag else "")
                )
                items.append(
                    {**pos, "severity": severity, "message": message, "source": d.get("source"), "code": d.get("code")}
                )
        where = self._display(self._path(path_arg)) if path_arg else "the open files"
        if not lines:
            text = f"no problems reported in {where}"
        else:
            counts: dict[str, int] = {}
            for item in items:
                counts[item["severity"]] = counts.get(item["severity"], 0) + 1
            summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items())
            text = "\n".join([f"{summary} in {where}:", *lines])
        if not fresh:
            text += "\n(the server has not published diagnostics for the current text yet; these may be stale)"
        return ToolResult.from_text(text, structured={"diagnostics": items})


#: what the ``lsp.*`` tools report as error results (see :func:`kairox_peer.peer_error_text`)
LSP_ERRORS: PeerErrors = [
    (ServerUnavailable, "{}"),
    (ConnectionLost, "the language server went away during the request: {}"),
    (RequestTimeout, "{}"),
    (LspError, "the language server answered with an error: {}"),
    (OSError, "cannot read the file: {}"),
]


def build_tools(operations: LspOperations, names: list[str], provider_name: str) -> list[PeerTool]:
    """The ``lsp.*`` tools ``names`` (all read-only) over ``operations``."""
    tools = []
    for name in names:
        description, schema, _capability = TOOL_CAPABILITIES[name]
        operation = getattr(operations, name.split(".", 1)[1])
        summary = (description, schema, Capability.READ)
        tools.append(
            PeerTool.local(name, summary, provider_name, operation, LSP_ERRORS, readOnlyHint=True, openWorldHint=False)
        )
    return tools
