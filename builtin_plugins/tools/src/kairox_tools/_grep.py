"""search.grep: find lines matching a regular expression.

Uses ripgrep (``rg --json``) when it is on ``PATH``, else a Python search with
the same rules: directories walked in name order, hidden files and
directories skipped unless asked for, ``.git`` and ``node_modules`` never
searched, symbolic links not followed, binary files (a NUL byte in their
first 8 KiB) skipped. ripgrep also honours ``.gitignore``; the Python search
does not.

The pattern comes from the model and is run on every line of the workspace's files, so
neither engine may backtrack: ripgrep uses Rust's ``regex`` crate, the Python search
RE2 (``google-re2``). Both run in time linear in the line whatever the pattern, and
neither has look-around or backreferences (a pattern the engine cannot run is an error
result with its reason). Python's ``re`` would not do: ``(a|aa)+b`` on a line of 40
``a`` takes many seconds inside one call that holds the GIL, so the whole runtime
stalls and ``grep_timeout`` cannot stop it. They still differ at the edges: RE2's
``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII, Rust's are Unicode.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread
import attrs

from kairox import ToolContext, ToolResult
from kairox.files import glob_match
from kairox_process import OutputTail, open_group

from ._base import BuiltinTool, ToolEnv, error, object_schema, read_only_spec
from ._output import SNIFF_BYTES, cut_line

__all__ = ["GrepHit", "SearchGrep", "compile_pattern", "python_search", "ripgrep_search"]

NEVER_SEARCHED = ("node_modules", ".git")
#: longest line of rg's JSON output kept (a longer one is skipped)
MAX_JSON_LINE = 4_000_000


@attrs.frozen
class GrepHit:
    path: Path
    line: int
    text: str
    kind: str = "match"  # or "context"


@attrs.frozen
class GrepQuery:
    pattern: str
    root: Path
    glob: str | None = None
    case_insensitive: bool = False
    fixed_strings: bool = False
    context: int = 0
    include_hidden: bool = False
    max_results: int = 500


class GrepError(Exception):
    pass


class SearchGrep(BuiltinTool):
    SPEC = read_only_spec(
        id="search.grep",
        title="Search files",
        description=(
            "Search files for lines matching a regular expression and return `path:line:text` for "
            "each match (context lines as `path-line-text`). Searches the workspace or `path` "
            "recursively; skips hidden files, .git, node_modules and binary files. `glob` keeps "
            "only files whose name matches (e.g. `*.py`, or `src/**/*.ts` for a path). Set "
            "`fixed_strings` to search for the text literally."
        ),
        input_schema=object_schema(
            {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression, RE2/Rust syntax: no look-around or backreferences "
                    "(or text, with fixed_strings).",
                },
                "path": {"type": "string", "default": ".", "description": "File or directory to search."},
                "glob": {"type": "string", "description": "Only files matching this glob."},
                "case_insensitive": {"type": "boolean", "default": False},
                "fixed_strings": {"type": "boolean", "default": False},
                "context": {"type": "integer", "minimum": 0, "maximum": 10, "default": 0},
                "include_hidden": {"type": "boolean", "default": False},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 10_000},
            },
            required=["pattern"],
        ),
    )

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        cfg = self.env.config
        root = self.env.resolve(args["path"])
        shown = self.env.display(root)
        if not root.exists():
            return error(f"no such file or directory: {shown}", path=shown)
        query = GrepQuery(
            pattern=args["pattern"],
            root=root,
            glob=args.get("glob"),
            case_insensitive=args["case_insensitive"],
            fixed_strings=args["fixed_strings"],
            context=args["context"],
            include_hidden=args["include_hidden"],
            max_results=args.get("max_results") or cfg.grep_max_results,
        )
        rg = shutil.which("rg", path=self.env.env.get("PATH")) if cfg.grep_engine != "python" else None
        if cfg.grep_engine == "ripgrep" and rg is None:
            return error("search.grep: [tools] grep_engine is ripgrep, but rg is not on PATH")
        engine = "ripgrep" if rg else "python"
        try:
            with anyio.fail_after(cfg.grep_timeout):
                if rg:
                    hits, limited = await ripgrep_search(rg, query, self.env)
                else:
                    hits, limited = await python_search(query)
        except GrepError as exc:
            return error(f"search.grep: {exc}", engine=engine)
        except TimeoutError:
            return error(f"search.grep: gave up after {cfg.grep_timeout:g} s ([tools] grep_timeout)", engine=engine)
        return self._render(hits, limited, query, engine)

    def _render(self, hits: list[GrepHit], limited: bool, query: GrepQuery, engine: str) -> ToolResult:
        cfg = self.env.config
        lines: list[str] = []
        used = 0
        cut_by_size = False
        previous: tuple[Path, int] | None = None
        matches = [h for h in hits if h.kind == "match"]
        for hit in hits:
            shown = self.env.display(hit.path)
            sep = ":" if hit.kind == "match" else "-"
            if query.context and previous is not None and (previous[0] != hit.path or hit.line != previous[1] + 1):
                lines.append("--")
            previous = (hit.path, hit.line)
            line = f"{shown}{sep}{hit.line}{sep}{cut_line(hit.text, cfg.max_line_chars)}"
            if used + len(line) + 1 > cfg.max_output_chars:
                cut_by_size = True
                break
            lines.append(line)
            used += len(line) + 1
        if not matches:
            lines.append(f"[no matches for {query.pattern!r} in {self.env.display(query.root)}]")
        if limited:
            lines.append(f"[... stopped after {len(matches)} matches (max_results); narrow the pattern or path ...]")
        if cut_by_size:
            lines.append("[... output limit reached; narrow the pattern or path ...]")
        return ToolResult.from_text(
            "\n".join(lines),
            structured={
                "engine": engine,
                "matches": [{"path": self.env.display(h.path), "line": h.line, "text": h.text} for h in matches],
                "truncated": limited or cut_by_size,
            },
        )


# -- ripgrep ---------------------------------------------------------------------------


def ripgrep_argv(rg: str, q: GrepQuery) -> list[str]:
    argv = [rg, "--json", "--no-config", "--sort", "path", "--no-messages"]
    if q.case_insensitive:
        argv.append("--ignore-case")
    else:
        argv.append("--case-sensitive")
    if q.fixed_strings:
        argv.append("--fixed-strings")
    if q.context:
        argv += ["--context", str(q.context)]
    if q.include_hidden:
        argv.append("--hidden")
    if q.glob:
        argv += ["--glob", q.glob]
    if not q.include_hidden:
        argv += ["--glob", "!.*"]  # a --glob whitelist would otherwise let hidden files in
    for name in NEVER_SEARCHED:  # later globs win: these always apply
        argv += ["--glob", f"!{name}", "--glob", f"!**/{name}/**"]
    argv += ["--regexp", q.pattern, "--", str(q.root)]
    return argv


def _rg_text(value: dict[str, Any]) -> str:
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


async def ripgrep_search(rg: str, q: GrepQuery, env: ToolEnv) -> tuple[list[GrepHit], bool]:
    hits: list[GrepHit] = []
    matches = 0
    limited = False
    err = OutputTail(max_bytes=8_000)  # ripgrep's diagnostics (a regex it cannot parse)
    async with open_group(ripgrep_argv(rg, q), cwd=env.workspace, env=env.env) as process:
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr

        async def drain_stderr() -> None:
            try:
                async for chunk in stderr:
                    err.feed(chunk)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain_stderr)
            async for raw in _lines(process.stdout):
                event = json.loads(raw)
                kind = event.get("type")
                if kind not in ("match", "context"):
                    continue
                data = event["data"]
                if kind == "match":
                    if matches >= q.max_results:
                        limited = True
                        break
                    matches += 1
                hits.append(
                    GrepHit(
                        Path(_rg_text(data["path"])),
                        int(data["line_number"]),
                        _rg_text(data["lines"]).rstrip("\r\n"),
                        kind,
                    )
                )
            if limited:
                tg.cancel_scope.cancel()
        code = await process.wait() if not limited else 0
    message = err.text().strip()
    if code == 2 and not hits and message:
        raise GrepError(message)  # e.g. a regex ripgrep cannot parse
    return hits, limited


async def _lines(stream: Any) -> Any:
    buffer = bytearray()
    skipping = False
    async for chunk in stream:
        buffer += chunk
        while True:
            at = buffer.find(b"\n")
            if at < 0:
                if len(buffer) > MAX_JSON_LINE:
                    buffer.clear()
                    skipping = True
                break
            line = bytes(buffer[:at])
            del buffer[: at + 1]
            if skipping:
                skipping = False
                continue
            yield line
    if buffer and not skipping:
        yield bytes(buffer)


# -- Python ----------------------------------------------------------------------------


class Regex(Protocol):
    """A compiled pattern: ``search(line)`` is a match object or ``None``."""

    def search(self, text: str) -> Any: ...


def compile_pattern(q: GrepQuery) -> Regex:
    """``q.pattern`` compiled by RE2 (literally with ``fixed_strings``); :class:`GrepError`
    naming the pattern and RE2's reason when RE2 cannot run it."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason goes in the result, not on stderr
    options.case_sensitive = not q.case_insensitive
    options.literal = q.fixed_strings
    try:
        return re2.compile(q.pattern, options)  # type: ignore[no-any-return]  # re2 ships no types
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
    except UnicodeError as exc:  # a lone surrogate (JSON allows "\ud800")
        reason = exc
    raise GrepError(
        f"invalid regular expression {q.pattern!r}: {reason} (RE2 syntax, as ripgrep's: no look-around "
        f"or backreferences)"
    )


async def python_search(q: GrepQuery) -> tuple[list[GrepHit], bool]:
    regex = compile_pattern(q)
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(_search_files, regex, q, stop)
    finally:
        stop.set()  # a cancelled search's thread stops at the next file


def _search_files(regex: Regex, q: GrepQuery, stop: threading.Event) -> tuple[list[GrepHit], bool]:
    hits: list[GrepHit] = []
    matches = 0
    for path in _files(q):
        if stop.is_set():
            break
        for hit in _search_file(path, regex, q.context):
            if hit.kind == "match":
                if matches >= q.max_results:
                    return hits, True
                matches += 1
            hits.append(hit)
    return hits, False


def _files(q: GrepQuery) -> Iterator[Path]:
    root = q.root
    if root.is_file():
        yield root
        return

    def wanted(rel: str, name: str) -> bool:
        if q.glob is None:
            return True
        if "/" in q.glob:
            return glob_match(rel, q.glob.lstrip("/")) or glob_match(rel, q.glob.replace("**/", ""))
        return glob_match(name, q.glob)

    def walk(directory: Path, rel: str) -> Iterator[Path]:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name in NEVER_SEARCHED or (not q.include_hidden and entry.name.startswith(".")):
                continue
            sub = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    yield from walk(Path(entry.path), sub)
                elif entry.is_file(follow_symlinks=False) and wanted(sub, entry.name):
                    yield Path(entry.path)
            except OSError:
                continue

    yield from walk(root, "")


def _search_file(path: Path, regex: Regex, context: int) -> Iterator[GrepHit]:
    try:
        with open(path, "rb") as f:
            if b"\x00" in f.read(SNIFF_BYTES):
                return
        f2 = open(path, encoding="utf-8", errors="replace", newline="")
    except OSError:
        return
    with f2:
        before: collections.deque[tuple[int, str]] = collections.deque(maxlen=context or None)
        after = 0
        last_emitted = 0
        for number, raw in enumerate(f2, start=1):
            line = raw.rstrip("\r\n")
            if regex.search(line):
                for n, text in before:
                    if n > last_emitted:
                        yield GrepHit(path, n, text, "context")
                before.clear()
                yield GrepHit(path, number, line, "match")
                last_emitted = number
                after = context
            elif after > 0:
                yield GrepHit(path, number, line, "context")
                last_emitted = number
                after -= 1
            elif context:
                before.append((number, line))
