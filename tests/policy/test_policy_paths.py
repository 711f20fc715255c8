"""No path trick gets a write outside the writable roots allowed.

Each example builds a fresh tree on disk (a workspace with symbolic links
pointing out of it, back into it, dangling and looping; a sibling directory; a
home directory), asks the engine where a write lands, and then does the write
the way a tool would (create the parent directories, open the file for
writing). The kernel then says which file was opened (``/proc/self/fd``): that
is the oracle, independent of the engine's own path logic.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kairox._policy import Allow, PolicyConfig, PolicyEngine
from kairox._tools import ToolSpec
from kairox._types import ApprovalPolicy, SandboxPolicy

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd"
)

WRITE = ToolSpec(id="fs.write", domain="local", capability="write", path_arguments=("path",))
UNDECLARED = ToolSpec(id="other.write", domain="local", capability="write")

COMPONENTS = [
    "..",
    ".",
    "",
    "sub",
    "file.txt",
    "new",
    "to_outside",
    "to_sub",
    "to_ws_abs",
    "dangling",
    "dangling_in",
    "loop",
    "ws",
    "outside",
    "back_in",
    "~",
    "home",
]
PREFIXES = ["", "/", "~/", "~", "<ws>/", "<base>/", "<outside>/", "file://<ws>/", "file://<base>/", "./", "//"]


@contextlib.contextmanager
def fresh_tree() -> Iterator[dict[str, Path]]:
    base = Path(tempfile.mkdtemp(prefix="kairox-paths-")).resolve()
    ws, outside, home = base / "ws", base / "outside", base / "home"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    home.mkdir()
    (ws / "file.txt").write_text("x")
    (ws / "to_outside").symlink_to(outside)
    (ws / "to_sub").symlink_to("sub")
    (ws / "to_ws_abs").symlink_to(ws)
    (ws / "dangling").symlink_to(outside / "created-through-link")
    (ws / "dangling_in").symlink_to("sub/created-inside")
    (ws / "loop").symlink_to("loop")
    (ws / "sub" / "up").symlink_to("../..")
    (outside / "back_in").symlink_to(ws / "sub")
    try:
        with mock.patch.dict(os.environ, {"HOME": str(home)}):  # `~` is this tree's home
            yield {"base": base, "ws": ws, "outside": outside, "home": home}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def build_path(prefix: str, parts: list[str], t: dict[str, Path]) -> str:
    text = (
        prefix.replace("<ws>", str(t["ws"])).replace("<base>", str(t["base"])).replace("<outside>", str(t["outside"]))
    )
    return text + "/".join(parts)


def os_write_lands(value: str, ws: Path) -> str | None:
    """Write the way a tool does and return the real path the kernel opened (None: the write fails)."""
    if value.startswith("file://"):
        value = value[len("file://") :]
    path = os.path.join(ws, os.path.expanduser(value))
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except (OSError, ValueError):
        return None
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def inside(real: str, ws: Path) -> bool:
    return real == str(ws) or real.startswith(str(ws) + os.sep)


paths = st.tuples(st.sampled_from(PREFIXES), st.lists(st.sampled_from(COMPONENTS), min_size=0, max_size=7))


@given(paths)
@example(("", ["to_outside", "x"]))
@example(("", ["dangling"]))
@example(("", ["sub", "up", "outside", "x"]))
@example(("", ["new", "..", "..", "outside", "x"]))
@example(("<outside>/", ["back_in", "x"]))
@example(("~/", ["x"]))
@example(("file://<base>/", ["ws", "..", "outside", "x"]))
def test_the_engine_places_every_write_where_the_os_puts_it(spec: tuple[str, list[str]]) -> None:
    prefix, parts = spec
    with fresh_tree() as t:
        ws = t["ws"]
        engine = PolicyEngine.build(PolicyConfig(include_temp_dir=False), ws)
        value = build_path(prefix, parts, t)
        location = engine.location(WRITE, {"path": value})
        decision = engine.decide(WRITE, {"path": value})
        assert location in ("inside", "outside")
        assert isinstance(decision, Allow) == (location == "inside")
        real = os_write_lands(value, ws)
        if real is None:
            return  # the OS refuses the write (a loop, a file used as a directory): nothing lands anywhere
        assert inside(real, ws) == (location == "inside"), (value, real, location)


@given(paths, st.sampled_from(["path", "file_path", "destination", "uri"]), st.integers(0, 2))
def test_undeclared_tools_get_the_same_protection(spec: tuple[str, list[str]], key: str, depth: int) -> None:
    prefix, parts = spec
    with fresh_tree() as t:
        ws = t["ws"]
        engine = PolicyEngine.build(PolicyConfig(include_temp_dir=False), ws)
        value = build_path(prefix, parts, t)
        args: dict[str, object] = {key: value}
        for _ in range(depth):
            args = {"edits": [args]}
        if isinstance(engine.decide(UNDECLARED, args), Allow):
            real = os_write_lands(value, ws)
            assert real is None or inside(real, ws), (value, real)


@given(st.text(max_size=40))
def test_any_string_is_decided_without_crashing(value: str) -> None:
    with fresh_tree() as t:
        engine = PolicyEngine.build(PolicyConfig(include_temp_dir=False), t["ws"])
        location = engine.location(WRITE, {"path": value})
        assert location in ("inside", "outside")
        if location == "inside":
            real = os_write_lands(value, t["ws"])
            assert real is None or inside(real, t["ws"]), (value, real)


@given(paths, st.sampled_from(list(ApprovalPolicy)))
def test_no_write_outside_is_allowed_under_any_approval_with_workspace_write(
    spec: tuple[str, list[str]], approval: ApprovalPolicy
) -> None:
    prefix, parts = spec
    with fresh_tree() as t:
        ws = t["ws"]
        config = PolicyConfig(approval=approval, sandbox=SandboxPolicy.WORKSPACE_WRITE, include_temp_dir=False)
        engine = PolicyEngine.build(config, ws)
        value = build_path(prefix, parts, t)
        if isinstance(engine.decide(WRITE, {"path": value}), Allow):
            real = os_write_lands(value, ws)
            assert real is None or inside(real, ws), (value, real)


# -- where a path hides: any depth, any type ----------------------------------------------------


def _nested(depth: int, leaf: dict[str, object]) -> dict[str, object]:
    value: dict[str, object] = leaf
    for i in range(depth):
        value = {"options": [{"level": i, "next": value}]}
    return value


@pytest.mark.parametrize("depth", [0, 9, 40, 2000])
def test_a_path_outside_at_any_depth_is_outside(tmp_path: Path, depth: int) -> None:
    """The scan used to stop after 8 levels: a write buried deeper was decided as touching nothing."""
    engine = PolicyEngine.build(PolicyConfig(include_temp_dir=False), tmp_path)
    outside = str(tmp_path.parent / "elsewhere" / "x.txt")
    assert engine.location(UNDECLARED, _nested(depth, {"path": outside})) == "outside"
    assert engine.location(UNDECLARED, _nested(depth, {"path": str(tmp_path / "in.txt")})) == "inside"


@pytest.mark.parametrize(
    "value", [{"p": "/etc/passwd"}, 5, True, ["ok.txt", {"p": "/etc/passwd"}], ["ok.txt", 3], {"path": "/etc/x"}]
)
def test_a_path_argument_of_another_type_counts_as_outside(tmp_path: Path, value: object) -> None:
    engine = PolicyEngine.build(PolicyConfig(), tmp_path)
    assert engine.location(UNDECLARED, {"path": value}) == "outside"
    assert engine.location(UNDECLARED, {"wrapped": {"file": value}}) == "outside"
    assert not isinstance(engine.decide(UNDECLARED, {"path": value}), Allow)
