"""fs.read, fs.write, fs.list: files on this machine.

Paths are resolved with the policy engine's own function (``ToolEnv.resolve``:
:func:`kairox.files.resolve_path`: ``~``, relative to the workspace, ``..``,
symbolic links followed), so the file a tool touches is the file the policy
checked. Blocking file work runs in a worker thread.

fs.write resolves the path once more when it runs, checks that result against
the writable roots the policy confined the call to (a link may have changed since
the decision), then opens exactly the resolved components from ``/`` with
no-follow on each (:mod:`._safeopen`): a component that became a link fails the
write instead of redirecting it. An existing file with more than one hard link
counts as a write outside the roots.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread

from kairox import ImageContent, TextContent, ToolContext, ToolResult, ToolSpec
from kairox.files import glob_match, is_inside

from . import _safeopen
from ._base import BuiltinTool, error, object_schema, read_only_spec
from ._output import SNIFF_BYTES, image_type, looks_binary, safe_text

__all__ = ["FsList", "FsRead", "FsWrite"]

#: directories fs.list does not descend into (hidden ones are skipped unless asked for)
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})


class FsRead(BuiltinTool):
    SPEC = read_only_spec(
        id="fs.read",
        title="Read a file",
        description=(
            "Read a text file and return its lines, numbered. Large files are returned a window at a "
            "time: pass `offset` (first line, from 1) and `limit` (number of lines) to page through; "
            "the output says where to continue. Images (PNG, JPEG, GIF, WebP) are returned as images; "
            "other binary files are reported, not dumped. Relative paths are taken from the workspace."
        ),
        input_schema=object_schema(
            {
                "path": {"type": "string", "description": "File to read (relative to the workspace, or absolute)."},
                "offset": {"type": "integer", "minimum": 1, "default": 1, "description": "First line to return."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return at most."},
                "line_numbers": {
                    "type": "boolean",
                    "default": True,
                    "description": "Prefix each line with its number and a tab.",
                },
            },
            required=["path"],
        ),
    )

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        return await anyio.to_thread.run_sync(self._read, args)

    def _read(self, args: dict[str, Any]) -> ToolResult:
        cfg = self.env.config
        path = self.env.resolve(args["path"])
        shown = self.env.display(path)
        try:
            st = path.stat()
        except FileNotFoundError:
            return error(f"no such file: {shown}", path=shown)
        except OSError as exc:
            return error(f"cannot read {shown}: {exc.strerror or exc}", path=shown)
        if stat.S_ISDIR(st.st_mode):
            return error(f"{shown} is a directory; list it with fs.list", path=shown)
        if not stat.S_ISREG(st.st_mode):
            return error(f"{shown} is not a regular file (a device, socket or pipe); not read", path=shown)
        try:
            with open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
                mime = image_type(head)
                if mime is not None:
                    return self._image(f, head, mime, shown, st.st_size)
                if looks_binary(head):
                    note = f"[binary file {shown}: {st.st_size} bytes; not shown as text]"
                    return ToolResult.from_text(note, structured={"path": shown, "binary": True, "size": st.st_size})
            with open(path, encoding="utf-8", errors="replace") as text:
                return self._text(text, args, shown, cfg.read_lines)
        except OSError as exc:
            return error(f"cannot read {shown}: {exc.strerror or exc}", path=shown)

    def _image(self, f: Any, head: bytes, mime: str, shown: str, size: int) -> ToolResult:
        limit = self.env.config.max_image_bytes
        info = {"path": shown, "binary": True, "size": size, "mime_type": mime}
        if size > limit:
            note = f"[image {shown}: {mime}, {size} bytes; over the {limit}-byte limit, not returned]"
            return ToolResult.from_text(note, structured=info)
        data = head + f.read(limit + 1 - len(head))
        return ToolResult(
            content=(
                TextContent(f"{shown}: {mime} image, {len(data)} bytes"),
                ImageContent(base64.b64encode(data).decode("ascii"), mime),
            ),
            structured=info,
        )

    def _text(self, f: Any, args: dict[str, Any], shown: str, default_lines: int) -> ToolResult:
        cfg = self.env.config
        offset: int = args["offset"]
        limit: int = args.get("limit") or default_lines
        numbers: bool = args["line_numbers"]
        budget = cfg.max_output_chars
        out: list[str] = []
        used = 0
        first = last = 0
        number = 0
        scanned = 0
        counted = True
        cut_by_size = False
        for number, (head, length) in enumerate(_bounded_lines(f, cfg.max_line_chars), start=1):
            scanned += length
            if number < offset or cut_by_size or number >= offset + limit:
                if last and scanned > COUNT_LINES_UP_TO:
                    counted = False  # the window is read; counting the rest would take too long
                    break
                continue
            line = (
                head if length <= cfg.max_line_chars else f"{head} [... line cut: {length - len(head)} more characters]"
            )
            rendered = f"{number:>6}\t{line}" if numbers else line
            if out and used + len(rendered) + 1 > budget:
                cut_by_size = True
                continue
            out.append(rendered)
            used += len(rendered) + 1
            first = first or number
            last = number
        total = number if counted else None
        info: dict[str, Any] = {"path": shown, "total_lines": total, "start_line": first, "end_line": last}
        if number == 0:
            return ToolResult.from_text(f"[{shown} is empty]", structured={**info, "truncated": False})
        if offset > number:
            return error(f"offset {offset} is past the end of {shown} ({number} lines)", **info)
        truncated = total is None or last < total
        info["truncated"] = truncated
        info["next_offset"] = last + 1 if truncated else None
        of = f" of {total}" if total is not None else f" of more than {number}"
        if truncated:
            why = "output limit reached" if cut_by_size else "line limit reached"
            out.append(f"[... {why}: showing lines {first}-{last}{of}; continue with offset={last + 1} ...]")
        elif first > 1:
            out.append(f"[lines {first}-{last}{of}]")
        return ToolResult.from_text("\n".join(out), structured=info)


#: characters fs.read reads past its window to count a file's lines
COUNT_LINES_UP_TO = 64_000_000
_CHUNK = 65_536


def _bounded_lines(f: Any, keep: int) -> Iterator[tuple[str, int]]:
    """Each line (file opened with universal newlines) as (its first ``keep``
    characters, its length without the newline), in bounded memory: a minified
    file can be one line of many megabytes."""
    while True:
        piece: str = f.readline(_CHUNK)
        if not piece:
            return
        head = piece[: keep + 1]
        length = len(piece)
        while not piece.endswith("\n"):
            piece = f.readline(_CHUNK)
            if not piece:
                break
            length += len(piece)
            if len(head) <= keep:
                head += piece[: keep + 1 - len(head)]
        content = length - 1 if piece.endswith("\n") else length
        yield head[: min(keep, content)], content


class FsWrite(BuiltinTool):
    SPEC = ToolSpec(
        id="fs.write",
        title="Write a file",
        description=(
            "Write text to a file (UTF-8). mode `overwrite` (default) replaces the file atomically, "
            "`append` adds to its end, `create` fails if the file exists. Missing parent directories "
            "are created unless `create_dirs` is false. Relative paths are taken from the workspace; "
            "writing outside the workspace needs the user's approval."
        ),
        input_schema=object_schema(
            {
                "path": {"type": "string", "description": "File to write (relative to the workspace, or absolute)."},
                "content": {"type": "string", "description": "The text to write."},
                "mode": {"type": "string", "enum": ["overwrite", "append", "create"], "default": "overwrite"},
                "create_dirs": {"type": "boolean", "default": True, "description": "Create missing parents."},
            },
            required=["path", "content"],
        ),
        domain="local",
        capability="write",
        path_arguments=("path",),
        annotations={"destructiveHint": True},
    )

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        # the roots the policy allowed this call for (None: the user approved it, or
        # where it lands decided nothing); the path is resolved again below, so a link
        # that changed since the decision is caught against the same roots
        return await anyio.to_thread.run_sync(self._write, args, context.confined_to)

    def _write(self, args: dict[str, Any], roots: tuple[Path, ...] | None = None) -> ToolResult:
        """Write as ``args`` say; with ``roots``, the write must land inside them
        (:attr:`kairox.ToolContext.confined_to`), and a file with more than one hard link is refused."""
        raw: str = args["path"]
        path = self.env.resolve(raw)
        shown = self.env.display(path)
        data = args["content"].encode("utf-8")
        mode: str = args["mode"]
        limit = self.env.config.max_write_bytes
        if len(data) > limit:
            return error(f"content is {len(data)} bytes; fs.write takes at most {limit}", path=shown)
        single_link = roots is not None
        if roots is not None and not any(is_inside(path, root) for root in roots):
            return error(
                f"{safe_text(raw)!r} now leads to {shown}, outside the writable roots the policy allowed it for "
                "(a symbolic link on the way changed after the check); not written",
                path=shown,
            )
        if not path.name:
            return error(f"{shown} is a directory", path=shown)
        try:
            with _safeopen.directory(path.parent, create=args["create_dirs"]) as parent:
                outcome = _write_at(parent, path.name, data, mode, shown, single_link=single_link)
        except _safeopen.MissingDirectory:
            return error(f"the directory of {shown} does not exist (create_dirs is false)", path=shown)
        except _safeopen.LinkOnPath as exc:
            link = self.env.display(exc.path)
            return error(f"{link} became a symbolic link after {shown} was checked; not written", path=shown)
        except _safeopen.NotADirectory as exc:
            return error(f"cannot write {shown}: {self.env.display(exc.path)} is not a directory", path=shown)
        except _safeopen.NotRegular:
            return error(f"{shown} is not a regular file; not written", path=shown)
        except _safeopen.SharedFile as exc:
            return _shared(shown, exc.links)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return error(f"{shown} became a symbolic link after it was checked; not written", path=shown)
            return error(f"cannot write {shown}: {exc.strerror or exc}", path=shown)
        if isinstance(outcome, ToolResult):
            return outcome
        created = outcome
        verb = "appended" if mode == "append" else "wrote"
        note = " (new file)" if created else ""
        return ToolResult.from_text(
            f"{verb} {len(data)} bytes to {shown}{note}",
            structured={"path": shown, "bytes": len(data), "created": created, "mode": mode},
        )


def _write_at(
    parent: _safeopen.Directory, name: str, data: bytes, mode: str, shown: str, *, single_link: bool
) -> ToolResult | bool:
    """Write ``name`` in ``parent``: an error result, or whether the file was created."""
    existing = parent.lstat(name)
    if existing is not None:
        if stat.S_ISDIR(existing.st_mode):
            return error(f"{shown} is a directory", path=shown)
        if stat.S_ISLNK(existing.st_mode):  # the path was resolved: its last part was no link then
            return error(f"{shown} became a symbolic link after it was checked; not written", path=shown)
        if mode == "create":
            return error(f"{shown} already exists (mode create); use overwrite or append", path=shown)
        if not stat.S_ISREG(existing.st_mode):
            return error(f"{shown} is not a regular file; not written", path=shown)
        if single_link and existing.st_nlink > 1:
            return _shared(shown, existing.st_nlink)
    if mode == "append":
        parent.append(name, data, single_link=single_link)  # checks the links again, on what it opened
    elif existing is None:
        parent.create(name, data)
    else:
        parent.replace(name, data, existing.st_mode)
    return existing is None


def _shared(shown: str, links: int) -> ToolResult:
    return error(
        f"{shown} has {links} hard links: another name, maybe outside the writable roots, shares its content; "
        "not written (a file with more than one link counts as a write outside the writable roots)",
        path=shown,
        links=links,
    )


class FsList(BuiltinTool):
    SPEC = read_only_spec(
        id="fs.list",
        title="List a directory",
        description=(
            "List the entries of a directory: directories end with `/`, files show their size, "
            "symbolic links show their target. With `recursive`, descends up to `max_depth` levels "
            "(not into .git, node_modules, __pycache__, nor hidden directories unless `include_hidden`). "
            "`pattern` keeps only entries whose name matches a glob (e.g. `*.py`)."
        ),
        input_schema=object_schema(
            {
                "path": {"type": "string", "default": ".", "description": "Directory to list."},
                "recursive": {"type": "boolean", "default": False},
                "max_depth": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
                "include_hidden": {"type": "boolean", "default": False},
                "pattern": {"type": "string", "description": "Glob on entry names, e.g. `*.py`."},
            },
        ),
    )

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        return await anyio.to_thread.run_sync(self._list, args)

    def _list(self, args: dict[str, Any]) -> ToolResult:
        root = self.env.resolve(args["path"])
        shown = self.env.display(root)
        if not root.exists():
            return error(f"no such directory: {shown}", path=shown)
        if not root.is_dir():
            return error(f"{shown} is not a directory; read it with fs.read", path=shown)
        walker = _Walker(
            max_entries=self.env.config.list_max_entries,
            max_depth=args["max_depth"] if args["recursive"] else 1,
            hidden=args["include_hidden"],
            pattern=args.get("pattern"),
        )
        try:
            walker.walk(root, Path(), 1)
        except PermissionError as exc:
            return error(f"cannot list {shown}: {exc.strerror or exc}", path=shown)
        lines = [e.render() for e in walker.entries]
        if walker.truncated:
            lines.append(
                f"[... listing stopped at {len(walker.entries)} entries; narrow the path, the pattern or max_depth ...]"
            )
        if not walker.entries:
            lines.append(
                f"[{shown} has no entries{' matching ' + repr(args['pattern']) if args.get('pattern') else ''}]"
            )
        return ToolResult.from_text(
            "\n".join(lines),
            structured={
                "path": shown,
                "entries": [e.as_dict() for e in walker.entries],
                "truncated": walker.truncated,
            },
        )


class _Entry:
    __slots__ = ("kind", "note", "rel", "size", "target")

    def __init__(self, rel: Path, kind: str, size: int | None = None, target: str | None = None, note: str = ""):
        self.rel, self.kind, self.size, self.target, self.note = rel, kind, size, target, note

    def render(self) -> str:
        name = safe_text(self.rel.as_posix())
        if self.kind == "dir":
            text = name + "/"
        elif self.kind == "symlink":
            text = f"{name} -> {safe_text(self.target or '')}"
        elif self.kind == "file":
            text = f"{name}  ({self.size} bytes)"
        else:
            text = f"{name}  ({self.kind})"
        return f"{text}  [{self.note}]" if self.note else text

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": safe_text(self.rel.as_posix()), "type": self.kind}
        if self.size is not None:
            data["size"] = self.size
        if self.target is not None:
            data["target"] = safe_text(self.target)
        return data


class _Walker:
    def __init__(self, *, max_entries: int, max_depth: int, hidden: bool, pattern: str | None) -> None:
        self.max_entries = max_entries
        self.max_depth = max_depth
        self.hidden = hidden
        self.pattern = pattern
        self.entries: list[_Entry] = []
        self.truncated = False

    def _add(self, entry: _Entry) -> bool:
        if len(self.entries) >= self.max_entries:
            self.truncated = True
            return False
        self.entries.append(entry)
        return True

    def walk(self, directory: Path, rel: Path, depth: int) -> None:
        with os.scandir(directory) as it:
            items = sorted(it, key=lambda e: e.name)
        for item in items:
            if self.truncated:
                return
            if not self.hidden and item.name.startswith("."):
                continue
            sub = rel / item.name
            try:
                is_link = item.is_symlink()
                is_dir = not is_link and item.is_dir(follow_symlinks=False)
            except OSError:
                continue
            matches = self.pattern is None or glob_match(item.name, self.pattern)
            if is_dir:
                descend = depth < self.max_depth and item.name not in SKIP_DIRS
                note = "not descended" if depth < self.max_depth and not descend else ""
                if matches and not self._add(_Entry(sub, "dir", note=note)):
                    return
                if descend:
                    try:
                        self.walk(Path(item.path), sub, depth + 1)
                    except PermissionError:
                        self._add(_Entry(sub, "dir", note="permission denied"))
                continue
            if not matches:
                continue
            if is_link:
                try:
                    target = os.readlink(item.path)
                except OSError:
                    target = "?"
                entry = _Entry(sub, "symlink", target=target)
            else:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    entry = _Entry(sub, "file", size=st.st_size)
                elif stat.S_ISFIFO(st.st_mode):
                    entry = _Entry(sub, "fifo")
                elif stat.S_ISSOCK(st.st_mode):
                    entry = _Entry(sub, "socket")
                else:
                    entry = _Entry(sub, "device")
            if not self._add(entry):
                return
