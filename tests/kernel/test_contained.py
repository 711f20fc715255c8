"""The contained reader (kairox.files.Root): written as the attacks a cloned repository can make.

Every test plants what a repository can contain (a link to a file of the user's, a link
to a device, a link loop, a huge file) and checks that reading through the root refuses
it with a reason naming the file, and that a walk shows the refusal where the item is.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairox.files import Limits, Refused, Root, read_user_file

SECRET = b"SECRET-d41d8cd98f00b204e980"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``(workspace, a private file of the user's outside it)``."""
    home = tmp_path / "home"
    home.mkdir()
    private = home / "id_key"
    private.write_bytes(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    return ws, private


def test_a_link_to_a_private_file_is_refused_with_its_reason(layout: tuple[Path, Path]) -> None:
    ws, private = layout
    (ws / "AGENTS.md").symlink_to(private)
    root = Root(ws, label="the workspace")
    with pytest.raises(Refused) as info:
        root.read_bytes("AGENTS.md")
    assert info.value.file == str(ws / "AGENTS.md")
    assert str(private) in info.value.reason and "outside the workspace" in info.value.reason
    assert SECRET.decode() not in str(info.value)


def test_a_relative_dotdot_path_is_refused(layout: tuple[Path, Path]) -> None:
    ws, private = layout
    with pytest.raises(Refused):
        Root(ws).read_bytes(f"../{private.parent.name}/{private.name}")
    with pytest.raises(Refused):
        Root(ws).read_bytes(private)  # absolute


def test_a_link_into_proc_is_refused(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "env.md").symlink_to("/proc/self/environ")
    with pytest.raises(Refused):
        Root(ws).read_text("env.md")


def test_a_link_to_a_device_is_refused_before_a_byte_is_read(layout: tuple[Path, Path], tmp_path: Path) -> None:
    ws, _ = layout
    (ws / "zero.md").symlink_to("/dev/zero")
    with pytest.raises(Refused):  # outside: refused at once
        Root(ws).read_bytes("zero.md")
    # a root that contains /dev (a user's folder linking a device in) still reads no device
    with pytest.raises(Refused, match="not a regular file"):
        Root("/dev").read_bytes("zero")


def test_a_fifo_does_not_block_the_reader(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    os.mkfifo(ws / "pipe.md")
    with pytest.raises(Refused, match="not a regular file"):
        Root(ws).read_bytes("pipe.md")
    [entry] = [e for e in Root(ws).walk() if e.name == "pipe.md"]
    assert entry.kind == "other" and "a pipe" in entry.refused


def test_a_file_over_the_cap_is_refused_unread(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "big.md").write_bytes(b"x" * 2048)
    root = Root(ws, limits=Limits(max_bytes=1024))
    with pytest.raises(Refused, match="larger than 1,024 bytes"):
        root.read_bytes("big.md")
    data, more = root.read_prefix("big.md", 100)
    assert data == b"x" * 100 and more == 1948


def test_links_inside_the_root_are_followed(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("guide")
    (ws / "AGENTS.md").symlink_to("docs/guide.md")
    (ws / "alias").symlink_to("docs")
    root = Root(ws)
    assert root.read_text("AGENTS.md") == "guide"
    assert root.read_text("alias/guide.md") == "guide"


def test_a_root_that_is_itself_a_link_reads_its_target(layout: tuple[Path, Path], tmp_path: Path) -> None:
    ws, _ = layout
    (tmp_path / "link").symlink_to(ws)
    assert Root(tmp_path / "link").read_text("README.md") == "hello\n"


def test_a_walk_shows_an_escaping_link_where_it_is_and_never_enters_it(layout: tuple[Path, Path]) -> None:
    ws, private = layout
    (ws / "skills").mkdir()
    (ws / "skills" / "ok.md").write_text("ok")
    (ws / "skills" / "key.md").symlink_to(private)
    (ws / "skills" / "home").symlink_to(private.parent)
    entries = {e.name: e for e in Root(ws, label="the workspace").walk("skills")}
    assert entries["ok.md"].refused == "" and entries["ok.md"].kind == "file"
    assert "outside the workspace" in entries["key.md"].refused and entries["key.md"].real is None
    assert entries["home"].kind == "dir" and entries["home"].refused
    assert not any(e.path.parent.name == "home" for e in entries.values())
    with pytest.raises(Refused):
        Root(ws).read_bytes(entries["key.md"])


def test_a_link_loop_is_entered_once(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "a").mkdir()
    (ws / "a" / "f.md").write_text("f")
    (ws / "a" / "loop").symlink_to("..")
    files = [e for e in Root(ws).walk() if e.kind == "file"]
    assert sorted(e.name for e in files) == ["README.md", "f.md"]


def test_a_walk_is_bounded_in_entries_and_says_so(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    for i in range(50):
        (ws / f"f{i:02}.md").write_text("x")
    entries = list(Root(ws, limits=Limits(max_entries=10)).walk())
    assert len(entries) == 11
    assert "more than 10 entries" in entries[-1].refused


def test_a_walk_is_bounded_in_depth(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    deep = ws
    for i in range(30):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("x")
    names = [e.name for e in Root(ws, limits=Limits(max_depth=5)).walk()]
    assert "bottom.md" not in names and "d5" in names and "d6" not in names
    assert [e.name for e in Root(ws).entries()] == ["README.md", "d0"]


def test_also_lets_links_reach_a_folder_the_user_named(layout: tuple[Path, Path]) -> None:
    ws, private = layout
    (ws / "key.md").symlink_to(private)
    assert Root(ws, also=[private.parent]).read_bytes("key.md") == SECRET


def test_read_user_file_refuses_a_device_and_a_huge_file(tmp_path: Path) -> None:
    (tmp_path / "mine.md").symlink_to("/dev/zero")
    with pytest.raises(Refused, match="not a regular file"):
        read_user_file(tmp_path / "mine.md")
    (tmp_path / "big.md").write_bytes(b"x" * 100)
    with pytest.raises(Refused, match="larger than 10 bytes"):
        read_user_file(tmp_path / "big.md", max_bytes=10)


def test_a_file_swapped_for_a_link_after_the_walk_is_refused(layout: tuple[Path, Path]) -> None:
    ws, private = layout
    [entry] = [e for e in Root(ws).walk() if e.name == "README.md"]
    (ws / "README.md").unlink()
    (ws / "README.md").symlink_to(private)
    with pytest.raises(Refused, match="symbolic link"):
        Root(ws).read_bytes(entry)


# -- the property: no generated path or link layout escapes its root ---------------------

_NAMES = st.sampled_from(["a", "b", "c", "x.md", "SKILL.md"])
_REL = st.lists(st.sampled_from(["a", "b", "c", "x.md", "..", ".", "SKILL.md"]), min_size=1, max_size=5).map(
    lambda parts: "/".join(parts)
)
_TARGET = st.one_of(
    _REL,  # relative, may climb out with ..
    st.sampled_from(["@outside", "@outside/secret", "@outside/dir", "/dev/zero", "/proc/self/environ", "/"]),
)
_NODE = st.tuples(
    st.lists(_NAMES, min_size=0, max_size=3).map(lambda p: "/".join(p)),  # a folder under the root
    _NAMES,
    st.one_of(st.just(("dir", "")), st.just(("file", "")), _TARGET.map(lambda t: ("link", t))),
)


def _build(top: Path, nodes: list[tuple[str, str, tuple[str, str]]]) -> Root:
    outside = top / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret").write_bytes(SECRET)
    (outside / "dir" / "x.md").write_bytes(SECRET)
    (outside / "dir" / "SKILL.md").write_bytes(SECRET)
    ws = top / "ws"
    ws.mkdir()
    for folder, name, (kind, target) in nodes:
        parent = ws / folder if folder else ws
        try:
            parent.mkdir(parents=True, exist_ok=True)
            path = parent / name
            if kind == "dir":
                path.mkdir()
            elif kind == "file":
                path.write_bytes(b"inside")
            else:
                path.symlink_to(target.replace("@outside", str(outside)))
        except OSError:
            continue  # a name taken already, a parent that is a file: the layout just differs
    return Root(ws, label="the workspace", limits=Limits(max_depth=8, max_entries=500))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.lists(_NODE, max_size=12), paths=st.lists(_REL, max_size=6))
def test_no_path_or_link_layout_escapes_the_root(
    nodes: list[tuple[str, str, tuple[str, str]]], paths: list[str]
) -> None:
    top = Path(tempfile.mkdtemp(prefix="contained-"))
    try:
        root = _build(top, nodes)
        outside = str(top / "outside")
        reads: list[bytes] = []
        for entry in root.walk():
            if entry.real is not None:
                assert not str(entry.real).startswith(outside + os.sep)
                assert root.contains(entry.real)
            if entry.kind == "file" and not entry.refused:
                reads.append(root.read_bytes(entry))
        for rel in [*paths, *(f"{n[0]}/{n[1]}" for n in nodes)]:
            try:
                reads.append(root.read_bytes(rel))
            except (Refused, FileNotFoundError, NotADirectoryError, IsADirectoryError):
                pass
        assert all(SECRET not in data for data in reads)
    finally:
        shutil.rmtree(top, ignore_errors=True)
