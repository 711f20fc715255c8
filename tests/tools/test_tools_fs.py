"""fs.read, fs.write, fs.list on real files, directly and through the runtime (policy included)."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tools_helpers import NO_TEMP_DIR, open_tools_runtime

from kairox._runtime import Runtime
from kairox._tools import ImageContent, TextContent, ToolContext, ToolResult
from kairox.errors import PolicyDenied
from kairox_tools import FsList, FsRead, FsWrite, ToolEnv, ToolsConfig

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


async def call(tool: Any, **arguments: Any) -> ToolResult:
    result: ToolResult = await tool.call(arguments, ToolContext())
    return result


# -- fs.read ---------------------------------------------------------------------------


async def test_read_numbers_lines(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "a.txt").write_text("one\ntwo\r\nthree", encoding="utf-8")
    r = await call(FsRead(tool_env), path="a.txt")
    assert not r.is_error
    assert r.text == "     1\tone\n     2\ttwo\n     3\tthree"
    assert r.structured == {
        "path": "a.txt",
        "total_lines": 3,
        "start_line": 1,
        "end_line": 3,
        "truncated": False,
        "next_offset": None,
    }
    plain = await call(FsRead(tool_env), path=str(ws / "a.txt"), line_numbers=False)
    assert plain.text == "one\ntwo\nthree"


async def test_read_pages_with_offset_and_limit(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)), encoding="utf-8")
    r = await call(FsRead(tool_env), path="big.txt", offset=10, limit=5, line_numbers=False)
    assert r.text.splitlines()[:5] == [f"line {i}" for i in range(10, 15)]
    assert "showing lines 10-14 of 100; continue with offset=15" in r.text
    assert r.structured is not None and r.structured["next_offset"] == 15 and r.structured["truncated"]
    last = await call(FsRead(tool_env), path="big.txt", offset=99)
    assert last.text.splitlines() == ["    99\tline 99", "   100\tline 100", "[lines 99-100 of 100]"]
    past = await call(FsRead(tool_env), path="big.txt", offset=101)
    assert past.is_error and "past the end" in past.text


async def test_read_stops_at_the_output_limit_and_says_where_to_go_on(ws: Path) -> None:
    env = ToolEnv.create(ws, ToolsConfig(max_output_chars=1_000, max_line_chars=50))
    (ws / "wide.txt").write_text("".join(f"{i:04d} " + "x" * 200 + "\n" for i in range(100)), encoding="utf-8")
    r = await call(FsRead(env), path="wide.txt")
    body = r.text.splitlines()
    assert len(r.text) < 1_200
    assert body[0].startswith("     1\t0000 xxx") and body[0].endswith("[... line cut: 155 more characters]")
    assert "output limit reached" in body[-1]
    assert r.structured is not None
    assert body[-1].endswith(f"continue with offset={r.structured['next_offset']} ...]")


async def test_read_the_default_window_is_configurable(ws: Path) -> None:
    env = ToolEnv.create(ws, ToolsConfig(read_lines=3))
    (ws / "f").write_text("a\nb\nc\nd\n", encoding="utf-8")
    r = await call(FsRead(env), path="f", line_numbers=False)
    assert r.text.splitlines()[:3] == ["a", "b", "c"] and "offset=4" in r.text


async def test_read_reports_binary_files_instead_of_dumping_them(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "blob.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10)
    r = await call(FsRead(tool_env), path="blob.bin")
    assert not r.is_error
    assert r.text == "[binary file blob.bin: 2568 bytes; not shown as text]"
    assert r.structured == {"path": "blob.bin", "binary": True, "size": 2568}


async def test_read_returns_images_as_images(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "dot.png").write_bytes(PNG)
    r = await call(FsRead(tool_env), path="dot.png")
    images = [b for b in r.content if isinstance(b, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == PNG
    small = ToolEnv.create(ws, ToolsConfig(max_image_bytes=10))
    over = await call(FsRead(small), path="dot.png")
    assert all(isinstance(b, TextContent) for b in over.content) and "over the 10-byte limit" in over.text


async def test_read_decodes_non_utf8_text_without_failing(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    r = await call(FsRead(tool_env), path="latin1.txt", line_numbers=False)
    assert r.text == "caf\ufffd cr\ufffdme" and not r.is_error


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (None, "missing.txt", "no such file: missing.txt"),
        ("dir", "d", "d is a directory; list it with fs.list"),
        ("fifo", "pipe", "pipe is not a regular file"),
        (None, "bad\x00name", "cannot use the path"),
    ],
)
async def test_read_errors_are_results_the_model_can_act_on(
    ws: Path, tool_env: ToolEnv, setup: str | None, path: str, message: str
) -> None:
    if setup == "dir":
        (ws / "d").mkdir()
    elif setup == "fifo":
        os.mkfifo(ws / "pipe")  # reading it would block forever
    r = await call(FsRead(tool_env), path=path)
    assert r.is_error and message in r.text


async def test_empty_files_and_bad_arguments(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "empty").write_text("")
    assert (await call(FsRead(tool_env), path="empty")).text == "[empty is empty]"
    bad = await call(FsRead(tool_env), path="empty", offset=0)
    assert bad.is_error and "offset: must be at least 1" in bad.text
    typo = await call(FsRead(tool_env), pth="empty")
    assert typo.is_error and "did you mean 'path'" in typo.text


# -- fs.write -----------------------------------------------------------------------------


async def test_write_creates_overwrites_and_appends(ws: Path, tool_env: ToolEnv) -> None:
    w = FsWrite(tool_env)
    r = await call(w, path="deep/new/file.txt", content="héllo\n")
    assert r.text == "wrote 7 bytes to deep/new/file.txt (new file)"
    assert r.structured == {"path": "deep/new/file.txt", "bytes": 7, "created": True, "mode": "overwrite"}
    target = ws / "deep" / "new" / "file.txt"
    os.chmod(target, 0o640)
    assert (await call(w, path="deep/new/file.txt", content="second\n")).text == "wrote 7 bytes to deep/new/file.txt"
    assert target.read_text(encoding="utf-8") == "second\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an overwrite keeps the permissions
    assert (await call(w, path="deep/new/file.txt", content="third\n", mode="append")).text.startswith("appended 6")
    assert target.read_text(encoding="utf-8") == "second\nthird\n"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]  # no temporary file left


async def test_write_refusals(ws: Path, tool_env: ToolEnv) -> None:
    w = FsWrite(tool_env)
    (ws / "exists.txt").write_text("keep")
    (ws / "adir").mkdir()
    created = await call(w, path="exists.txt", content="x", mode="create")
    assert created.is_error and "already exists" in created.text
    assert (ws / "exists.txt").read_text() == "keep"
    assert "is a directory" in (await call(w, path="adir", content="x")).text
    no_dirs = await call(w, path="nope/f.txt", content="x", create_dirs=False)
    assert no_dirs.is_error and "does not exist" in no_dirs.text and not (ws / "nope").exists()
    small = FsWrite(ToolEnv.create(ws, ToolsConfig(max_write_bytes=4)))
    big = await call(small, path="big.txt", content="12345")
    assert big.is_error and "at most 4" in big.text and not (ws / "big.txt").exists()
    bad_mode = await call(w, path="f", content="x", mode="truncate")
    assert bad_mode.is_error and "expected one of 'overwrite', 'append', 'create'" in bad_mode.text
    missing = await call(w, path="f")
    assert missing.is_error and "missing required argument 'content'" in missing.text


async def test_write_through_a_symlink_writes_its_real_target(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "real.txt").write_text("old")
    (ws / "link.txt").symlink_to("real.txt")
    await call(FsWrite(tool_env), path="link.txt", content="new")
    assert (ws / "link.txt").is_symlink()  # the link stays a link
    assert (ws / "real.txt").read_text() == "new"


# -- fs.list ---------------------------------------------------------------------------------


def make_tree(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (ws / "src" / "main.py").write_text("print()\n")
    (ws / "README.md").write_text("# r\n")
    (ws / ".hidden").mkdir()
    (ws / ".hidden" / "secret").write_text("s")
    (ws / "node_modules" / "dep").mkdir(parents=True)
    (ws / "node_modules" / "dep" / "index.js").write_text("")
    (ws / "link").symlink_to("src")


async def test_list_one_level(ws: Path, tool_env: ToolEnv) -> None:
    make_tree(ws)
    r = await call(FsList(tool_env))
    assert r.text.splitlines() == ["README.md  (4 bytes)", "link -> src", "node_modules/", "src/"]
    assert r.structured is not None and r.structured["entries"][0] == {"path": "README.md", "type": "file", "size": 4}


async def test_list_recursive_skips_heavy_and_hidden_directories(ws: Path, tool_env: ToolEnv) -> None:
    make_tree(ws)
    r = await call(FsList(tool_env), recursive=True)
    assert r.text.splitlines() == [
        "README.md  (4 bytes)",
        "link -> src",
        "node_modules/  [not descended]",
        "src/",
        "src/main.py  (8 bytes)",
        "src/pkg/",
        "src/pkg/mod.py  (6 bytes)",
    ]
    hidden = await call(FsList(tool_env), recursive=True, include_hidden=True, pattern="secret")
    assert hidden.text.splitlines() == [".hidden/secret  (1 bytes)"]
    shallow = await call(FsList(tool_env), recursive=True, max_depth=1)
    assert "src/main.py  (8 bytes)" not in shallow.text
    py = await call(FsList(tool_env), path="src", recursive=True, pattern="*.py")
    assert py.text.splitlines() == ["main.py  (8 bytes)", "pkg/mod.py  (6 bytes)"]


async def test_list_caps_entries_with_a_marker(ws: Path) -> None:
    for i in range(30):
        (ws / f"f{i:02d}").write_text("")
    r = await call(FsList(ToolEnv.create(ws, ToolsConfig(list_max_entries=10))))
    lines = r.text.splitlines()
    assert lines[:10] == [f"f{i:02d}  (0 bytes)" for i in range(10)]
    assert lines[10].startswith("[... listing stopped at 10 entries")
    assert r.structured is not None and r.structured["truncated"] is True


async def test_list_errors(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "file").write_text("")
    assert "not a directory" in (await call(FsList(tool_env), path="file")).text
    assert "no such directory" in (await call(FsList(tool_env), path="nowhere")).text
    (ws / "empty").mkdir()
    assert (await call(FsList(tool_env), path="empty")).text == "[empty has no entries]"


@pytest.mark.timeout(10)
async def test_list_reads_a_glob_of_unclosed_brackets_once(rt: Runtime, ws: Path) -> None:
    # the model's glob: fnmatch read each `[` with no `]` after it to the end (minutes at 64 KB)
    make_tree(ws)
    opens = "[" * 65_536
    (ws / "src" / ("[" * 200)).write_text("")
    none = await rt.call_tool("fs.list", {"recursive": True, "pattern": opens})
    assert none.structured is not None and none.structured["entries"] == []
    some = await rt.call_tool("fs.list", {"recursive": True, "pattern": "[[]" + "[" * 199})
    assert some.text.splitlines() == [f"src/{'[' * 200}  (0 bytes)"]
    py = await rt.call_tool("fs.list", {"recursive": True, "pattern": "[!.]*.p[y]"})
    assert py.text.splitlines() == ["src/main.py  (8 bytes)", "src/pkg/mod.py  (6 bytes)"]


# -- through the runtime: the policy decides before the tool runs --------------------------------


async def test_runtime_writes_inside_and_refuses_outside_without_an_approver(rt: Runtime, ws: Path) -> None:
    result = await rt.call_tool("fs.write", {"path": "notes/today.md", "content": "ok"})
    assert not result.is_error and (ws / "notes" / "today.md").read_text() == "ok"
    outside = ws.parent / "outside.txt"
    with pytest.raises(PolicyDenied) as info:
        await rt.call_tool("fs.write", {"path": str(outside), "content": "no"})
    assert "writes outside the writable roots" in info.value.reason and "no approver" in info.value.reason
    assert not outside.exists()
    (ws / "escape").symlink_to(ws.parent)
    with pytest.raises(PolicyDenied):
        await rt.call_tool("fs_write", {"path": "escape/outside.txt", "content": "no"})  # exported name
    assert not outside.exists()
    read = await rt.call_tool("fs.read", {"path": "notes/today.md", "line_numbers": False})
    assert read.text == "ok"


async def test_runtime_asks_the_approver_for_an_outside_write(rt: Runtime, ws: Path) -> None:
    outside = ws.parent / "approved.txt"
    seen: list[str] = []

    def approve(request: Any) -> bool:
        seen.append(request.reason)
        return True

    await rt.call_tool("fs.write", {"path": str(outside), "content": "yes"}, approver=approve)
    assert outside.read_text() == "yes"
    assert seen == ["writes outside the writable roots"]


@contextlib.contextmanager
def trick_tree() -> Iterator[dict[str, Path]]:
    base = Path(tempfile.mkdtemp(prefix="kairox-fswrite-")).resolve()
    ws, outside, home = base / "ws", base / "outside", base / "home"
    for d in (ws / "sub", outside, home):
        d.mkdir(parents=True)
    (ws / "out").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "made-by-link")
    (ws / "sub" / "up").symlink_to("../..")
    try:
        with mock.patch.dict(os.environ, {"HOME": str(home)}):  # `~` is this tree's home
            yield {"base": base, "ws": ws, "outside": outside, "home": home}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


PARTS = ["..", ".", "sub", "up", "out", "dangling", "ws", "outside", "home", "~", "x.txt", ""]
PREFIXES = ["", "/", "~/", "<base>/", "<ws>/", "file://<base>/"]


@settings(max_examples=60)
@given(st.sampled_from(PREFIXES), st.lists(st.sampled_from(PARTS), max_size=6))
def test_fs_write_through_the_runtime_never_lands_outside_the_workspace(prefix: str, parts: list[str]) -> None:
    """End to end: whatever the path, an unapproved fs.write changes nothing outside the workspace."""
    with trick_tree() as t:
        value = prefix.replace("<base>", str(t["base"])).replace("<ws>", str(t["ws"])) + "/".join(parts)
        before_outside, before_home = snapshot(t["outside"]), snapshot(t["home"])
        before_base = {p.name for p in t["base"].iterdir()}

        async def go() -> None:
            async with open_tools_runtime(t["ws"], t["home"], [NO_TEMP_DIR], env={"HOME": str(t["home"])}) as rt:
                with contextlib.suppress(PolicyDenied):
                    await rt.call_tool("fs.write", {"path": value, "content": "payload"})

        anyio.run(go)
        assert snapshot(t["outside"]) == before_outside, value
        assert snapshot(t["home"]) == before_home, value
        assert {p.name for p in t["base"].iterdir()} == before_base, value


async def test_names_that_are_not_utf8_are_listed_as_valid_text(ws: Path, tool_env: ToolEnv) -> None:
    raw = os.fsencode(ws) + b"/caf\xe9.txt"
    fd = os.open(raw, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x")
    os.close(fd)
    r = await call(FsList(tool_env))
    assert r.text == "caf\ufffd.txt  (1 bytes)"
    assert r.structured is not None and r.structured["entries"][0]["path"] == "caf\ufffd.txt"
    r.text.encode("utf-8")


async def test_a_huge_single_line_is_read_in_bounded_pieces(ws: Path, tool_env: ToolEnv) -> None:
    (ws / "min.js").write_text("var a=1;" * 40_000 + "\nsecond\n", encoding="utf-8")  # 320,000 characters
    r = await call(FsRead(tool_env), path="min.js", line_numbers=False)
    first, second = r.text.splitlines()
    assert first == "var a=1;" * 250 + " [... line cut: 318000 more characters]"
    assert second == "second"


async def test_counting_stops_on_very_long_files(ws: Path, tool_env: ToolEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    import kairox_tools._fs as fs

    monkeypatch.setattr(fs, "COUNT_LINES_UP_TO", 1_000)
    (ws / "log.txt").write_text("".join(f"entry {i}\n" for i in range(10_000)), encoding="utf-8")
    r = await call(FsRead(tool_env), path="log.txt", limit=3, line_numbers=False)
    assert r.text.splitlines()[:3] == ["entry 0", "entry 1", "entry 2"]
    assert r.structured is not None and r.structured["total_lines"] is None
    assert "showing lines 1-3 of more than" in r.text and "continue with offset=4" in r.text


@given(st.text(st.sampled_from("ab\n\r"), max_size=60), st.integers(1, 8), st.integers(1, 5))
def test_bounded_lines_match_plain_line_splitting(text: str, keep: int, chunk: int) -> None:
    import io

    import kairox_tools._fs as fs

    old = fs._CHUNK
    fs._CHUNK = chunk
    try:
        got = list(fs._bounded_lines(io.StringIO(text, newline=None), keep))
    finally:
        fs._CHUNK = old
    expected = io.StringIO(text, newline=None).read().splitlines()
    assert [length for _, length in got] == [len(line) for line in expected]
    assert [head for head, _ in got] == [line[:keep] for line in expected]
