"""fs.write stays inside the writable roots when a path component is swapped for a
symbolic link after the policy decided, and when the target is a hard link to a file
outside them (issue 13, item 3).

Each test is the attack, through the real runtime (policy, then the tool): a thread
or a hook flips ``ws/d`` while approved writes run, or the workspace holds a hard
link to a file outside; nothing may change outside the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_helpers import open_with_builtin_tools as opened

import kairox_tools._base
import kairox_tools._safeopen
import kairox_tools.hooks
from kairox._hooks import ToolCall
from kairox._runtime import Runtime
from kairox.errors import PolicyDenied
from kairox_testing import Approvals, make_plugin

pytestmark = pytest.mark.anyio

#: approved writes per race; the unfixed tool put about a quarter of them outside
RACE_CALLS = 400
SWITCH_INTERVAL = 0.0002


@pytest.fixture
def base(tmp_path: Path) -> Path:
    for name in ("ws", "outside", "home"):
        (tmp_path / name).mkdir()
    return tmp_path.resolve()


@pytest.fixture
def ws(base: Path) -> Path:
    return base / "ws"


@pytest.fixture
def outside(base: Path) -> Path:
    """A directory next to the workspace: not a writable root."""
    return base / "outside"


@pytest.fixture(params=["dir-fd", "paths"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the tool opens files: by directory descriptor, and the fallback by path
    (a platform without ``dir_fd``), which must still write and refuse the same."""
    if request.param == "paths":
        monkeypatch.setattr(kairox_tools._safeopen, "DIR_FD", False)
    return str(request.param)


@pytest.fixture
async def rt(ws: Path) -> AsyncIterator[Runtime]:
    """Only the built-in tools; the workspace is the only writable root (no temp dir)."""
    async with opened(ws) as runtime:
        yield runtime


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def write(rt: Runtime, **arguments: Any) -> Any:
    """One fs.write through the runtime; ``None`` when the policy refused it."""
    try:
        return await rt.call_tool("fs.write", arguments)
    except PolicyDenied:
        return None


# -- races: a component flipped while approved writes run ---------------------------------


def retarget(ws: Path, outside: Path) -> Iterator[None]:
    """``ws/d`` stays a symbolic link; its target flips between ``ws/real`` and the
    outside directory, atomically (a new link renamed over it)."""
    (ws / "d").symlink_to("real")
    spare = ws / ".d-spare"
    while True:
        for target in (str(outside), "real"):
            spare.symlink_to(target)
            os.replace(spare, ws / "d")
            yield


def dir_swap(ws: Path, outside: Path) -> Iterator[None]:
    """``ws/d`` flips between a real directory and a symbolic link to the outside one."""
    (ws / "real").rename(ws / "d")
    (ws / ".d-link").symlink_to(outside)
    while True:
        (ws / "d").rename(ws / ".d-dir")
        (ws / ".d-link").rename(ws / "d")
        yield
        (ws / "d").rename(ws / ".d-link")
        (ws / ".d-dir").rename(ws / "d")
        yield


@contextlib.contextmanager
def flipping(flips: Iterator[None]) -> Iterator[list[int]]:
    """Run ``flips`` in a thread as fast as it goes until the block ends."""
    stop = threading.Event()
    count = [0]
    failure: list[BaseException] = []

    def run() -> None:
        try:
            while not stop.is_set():
                next(flips)
                count[0] += 1
        except BaseException as exc:  # reported by the test, not lost in the thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="flipper", daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)  # the flipper gets the interpreter often: more flips in the windows
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join(10)
        sys.setswitchinterval(interval)
    assert not thread.is_alive()
    assert not failure, failure


@pytest.mark.parametrize("flipper", [retarget, dir_swap], ids=["retarget-link", "dir-to-link"])
@pytest.mark.parametrize("mode", ["create", "overwrite", "append"])
async def test_a_flipped_component_never_puts_an_approved_write_outside(
    rt: Runtime, ws: Path, outside: Path, mode: str, flipper: Callable[[Path, Path], Iterator[None]]
) -> None:
    (ws / "real").mkdir()
    existing = mode != "create"
    if existing:
        (ws / "real" / "f.txt").write_text("inside\n")
        (outside / "f.txt").write_text("outside\n")
    before = snapshot(outside)
    outcomes = {"written": 0, "refused by the tool": 0, "refused by the policy": 0}
    with flipping(flipper(ws, outside)) as flips:
        for i in range(RACE_CALLS):
            name = "d/f.txt" if existing else f"d/new-{i}.txt"
            # create_dirs false: the tool must not make `ws/d` while the flipper has it moved away
            result = await write(rt, path=name, content=f"{i}\n", mode=mode, create_dirs=False)
            if result is None:
                outcomes["refused by the policy"] += 1
            elif result.is_error:
                outcomes["refused by the tool"] += 1
            else:
                outcomes["written"] += 1
    assert flips[0] > 0
    assert snapshot(outside) == before, f"approved writes landed outside the workspace ({outcomes})"
    assert [name for name in snapshot(ws) if name.endswith(".kairox-tmp")] == []


async def test_a_component_swapped_after_the_decision_is_not_followed(ws: Path, outside: Path) -> None:
    """Deterministic: a hook runs between the decision and the tool, and swaps ``ws/d``."""
    (ws / "d").mkdir()

    def swap(call: ToolCall) -> None:
        (ws / "d").rename(ws / "d-was")
        (ws / "d").symlink_to(outside)

    async with opened(ws, make_plugin("swapper", kairox_pre_tool_call=swap)) as rt:
        result = await write(rt, path="d/f.txt", content="payload")
    assert result is not None and result.is_error
    assert "outside the writable roots" in result.text and "symbolic link" in result.text
    assert snapshot(outside) == {}


async def test_a_component_swapped_after_the_tool_resolved_the_path_is_not_followed(
    rt: Runtime, ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last window: between the tool's own check of the path and its opening the file."""
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("outside\n")
    resolve = kairox_tools._base.ToolEnv.resolve

    def resolve_then_swap(env: kairox_tools._base.ToolEnv, value: str, what: str = "path") -> Path:
        path = resolve(env, value, what)
        if value.startswith("d/"):
            (ws / "d").rename(ws / "d-was")
            (ws / "d").symlink_to(outside)
        return path

    monkeypatch.setattr(kairox_tools._base.ToolEnv, "resolve", resolve_then_swap)
    for mode in ("overwrite", "append", "create"):
        if (ws / "d").is_symlink():
            (ws / "d").unlink()
            (ws / "d-was").rename(ws / "d")
        name = "d/new.txt" if mode == "create" else "d/f.txt"
        result = await write(rt, path=name, content="payload\n", mode=mode)
        assert result is not None and result.is_error, mode
        assert "became a symbolic link" in result.text and "d" in result.text, result.text
        assert snapshot(outside) == {"f.txt": b"outside\n"}, mode


# -- hard links: a name inside, the content shared with a file outside -------------------------


@pytest.mark.parametrize("mode", ["append", "overwrite"])
async def test_a_hard_link_to_an_outside_file_counts_as_outside(
    rt: Runtime, ws: Path, outside: Path, mode: str, walk: str
) -> None:
    secret = outside / "secret.txt"
    secret.write_text("secret\n")
    os.link(secret, ws / "notes.txt")  # inside by name, outside by content
    # the policy counts it as a write outside the roots: it asks, and without an approver refuses
    assert await write(rt, path="notes.txt", content="appended\n", mode=mode) is None
    assert secret.read_text() == "secret\n"
    assert (ws / "notes.txt").read_text() == "secret\n"
    assert os.stat(secret).st_nlink == 2  # not even the link was broken
    assert rt.policy.location(rt.tools.get_spec("fs.write"), {"path": "notes.txt"}) == "outside"
    created = await write(rt, path="notes.txt", content="x", mode="create")
    assert created is None


@pytest.mark.parametrize("mode", ["append", "overwrite"])
async def test_a_hard_link_made_after_the_decision_is_refused_by_the_tool(
    ws: Path, outside: Path, mode: str, walk: str
) -> None:
    """Deterministic: a hook runs between the decision (a lone file, inside) and the tool,
    and makes the file a hard link of an outside one."""
    secret = outside / "secret.txt"
    secret.write_text("secret\n")

    def link(call: ToolCall) -> None:
        (ws / "notes.txt").unlink()
        os.link(secret, ws / "notes.txt")

    (ws / "notes.txt").write_text("mine\n")
    async with opened(ws, make_plugin("linker", kairox_pre_tool_call=link)) as rt:
        result = await write(rt, path="notes.txt", content="appended\n", mode=mode)
    assert result is not None and result.is_error
    assert "notes.txt" in result.text and "hard link" in result.text, result.text
    assert secret.read_text() == "secret\n"


async def test_a_hard_linked_file_is_written_once_the_user_approves(ws: Path, outside: Path) -> None:
    secret = outside / "shared.txt"
    secret.write_text("a\n")
    os.link(secret, ws / "shared.txt")
    approvals = Approvals(True)
    async with opened(ws) as rt:
        r = await rt.call_tool(
            "fs.write", {"path": "shared.txt", "content": "b\n", "mode": "append"}, approver=approvals
        )
    assert not r.is_error, r.text
    assert secret.read_text() == "a\nb\n"
    assert [q.reason for q in approvals.requests] == ["writes outside the writable roots"]


async def test_a_hard_link_is_written_when_the_policy_lets_writes_land_anywhere(ws: Path, outside: Path) -> None:
    """Under approval never + danger_full_access every write runs: where it lands decides nothing."""
    secret = outside / "shared.txt"
    secret.write_text("a\n")
    os.link(secret, ws / "shared.txt")
    anywhere = [("test", {"policy": {"approval": "never", "sandbox": "danger_full_access"}})]
    async with opened(ws, documents=anywhere) as rt:
        result = await write(rt, path="shared.txt", content="b\n", mode="append")
    assert result is not None and not result.is_error, result.text
    assert secret.read_text() == "a\nb\n"


# -- what still works -------------------------------------------------------------------------


async def test_normal_writes_nested_directories_and_append_still_work(rt: Runtime, ws: Path, walk: str) -> None:
    r = await write(rt, path="deep/new/file.txt", content="héllo\n")
    assert r is not None and r.text == "wrote 7 bytes to deep/new/file.txt (new file)"
    target = ws / "deep" / "new" / "file.txt"
    os.chmod(target, 0o640)
    r = await write(rt, path="deep/new/file.txt", content="second\n")
    assert r is not None and r.text == "wrote 7 bytes to deep/new/file.txt"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an overwrite keeps the permissions
    r = await write(rt, path=str(target), content="third\n", mode="append")  # absolute, inside
    assert r is not None and r.text == "appended 6 bytes to deep/new/file.txt"
    assert target.read_text(encoding="utf-8") == "second\nthird\n"
    r = await write(rt, path="fresh/dir/log.txt", content="1\n", mode="append")  # append creates
    assert r is not None and not r.is_error and (ws / "fresh" / "dir" / "log.txt").read_text() == "1\n"
    r = await write(rt, path="deep/new/file.txt", content="x", mode="create")
    assert r is not None and r.is_error and "already exists" in r.text
    r = await write(rt, path="missing/f.txt", content="x", create_dirs=False)
    assert r is not None and r.is_error and "does not exist" in r.text and not (ws / "missing").exists()
    (ws / "plain").write_text("")
    r = await write(rt, path="plain/f.txt", content="x")
    assert r is not None and r.is_error and not (ws / "plain").is_dir()
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]  # no temporary file left


async def test_symlinks_that_stay_inside_the_roots_write_their_real_target(rt: Runtime, ws: Path, walk: str) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "a.txt").write_text("old")
    (ws / "link.txt").symlink_to("real/a.txt")
    (ws / "alias").symlink_to("real")
    r = await write(rt, path="link.txt", content="new")
    assert r is not None and not r.is_error and r.structured is not None and r.structured["path"] == "real/a.txt"
    assert (ws / "link.txt").is_symlink() and (ws / "real" / "a.txt").read_text() == "new"
    r = await write(rt, path="alias/sub/b.txt", content="b", mode="append")
    assert r is not None and not r.is_error
    assert (ws / "alias").is_symlink() and (ws / "real" / "sub" / "b.txt").read_text() == "b"


async def test_an_approved_outside_write_lands_where_it_was_approved(ws: Path, outside: Path) -> None:
    """An outside write the user approved is not confined: it lands where the path
    leads, by its own path or through a stable symbolic link in the workspace."""
    (ws / "escape").symlink_to(outside)
    approvals = Approvals(True)
    async with opened(ws) as rt:
        r = await rt.call_tool("fs.write", {"path": str(outside / "ok.txt"), "content": "yes"}, approver=approvals)
        assert not r.is_error and (outside / "ok.txt").read_text() == "yes"
        r = await rt.call_tool("fs.write", {"path": "escape/via-link.txt", "content": "yes"}, approver=approvals)
    assert not r.is_error, r.text
    assert (outside / "via-link.txt").read_text() == "yes"
    assert [q.reason for q in approvals.requests] == ["writes outside the writable roots"] * 2


async def test_an_overwrite_removes_the_temp_files_a_killed_write_left(rt: Runtime, ws: Path) -> None:
    """An overwrite removes fs.write's own stale ``.NAME.*.kairox-tmp`` leftovers of that file,
    and leaves a young one (a live write's) and another file's alone."""
    (ws / "f.txt").write_text("old")
    stale = ws / ".f.txt.deadbeef0001.kairox-tmp"
    young = ws / ".f.txt.deadbeef0002.kairox-tmp"
    other = ws / ".g.txt.deadbeef0003.kairox-tmp"
    for p in (stale, young, other):
        p.write_text("left")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    r = await write(rt, path="f.txt", content="new")
    assert r is not None and not r.is_error, r.text
    assert not stale.exists()
    assert young.exists() and other.exists()  # a live write's, and another file's
    assert (ws / "f.txt").read_text() == "new"
