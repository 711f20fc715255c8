"""Catalog entries cannot escape: the attack is a catalog document that names where to write.

An entry named ``./../../planted`` installed outside the plugins directory and
``..`` gave a traceback; a file source was read whole (``/dev/zero`` grew to
19 GB). Each test is the attack: a planted directory must not appear outside
the plugins directory, a directory outside must survive an uninstall, a file
outside must not be copied in, and reading a device or a FIFO as a source must
end promptly with a message, inside a process whose memory is capped.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from security_helpers import KAIROX, output_of

import kairox_catalog.hooks
import kairox_manifests.hooks
from kairox_catalog import bundles
from kairox_catalog.catalog import Catalog
from kairox_catalog.documents import parse_document
from kairox_catalog.install import Installer, InstallError, InstallOptions
from kairox_catalog.model import CatalogEntry, InstallSource
from kairox_testing import KairoxHarness

BAD_NAMES = [
    "./../../planted",
    "..",
    ".",
    "../planted",
    "ok/../../../planted",
    "a/b",
    "a\\b",
    "plant\x00ed",
    "plant\ned",
    "planted\n",
    "\x1b[31mred",
    ".hidden",
]


class World:
    """A workspace, a home, a plugin to install, and a local catalog document pointing at it."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.workspace = tmp_path / "ws"
        self.home = tmp_path / "home"
        self.plugin = tmp_path / "src" / "plugin"
        for d in (self.workspace, self.home, self.plugin / ".claude-plugin"):
            d.mkdir(parents=True)
        (self.plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "plugin"}))
        self.catalog = tmp_path / "catalog.json"
        self.harness = KairoxHarness(self.workspace, self.home, plugins=[kairox_catalog.hooks, kairox_manifests.hooks])

    @property
    def plugins(self) -> Path:
        return self.workspace / ".kairox" / "plugins"

    def source(self, url: str, *, name: str = "evil") -> None:
        text = (
            f"[catalog]\nbuiltin = false\n\n[[catalog.sources]]\nname = {json.dumps(name)}\nurl = {json.dumps(url)}\n"
        )
        self.harness.write_config(text)
        self.harness.trust()  # a workspace's catalog sources are read only once it is trusted

    def publish(self, *entries: dict[str, Any]) -> None:
        self.catalog.write_text(json.dumps({"entries": list(entries)}))
        self.source(str(self.catalog))

    def plugin_entry(self, name: Any, **install: Any) -> dict[str, Any]:
        return {"name": name, "kind": "plugin", "install": install or {"type": "path", "path": str(self.plugin)}}

    def files(self) -> set[str]:
        """Everything under the test's directory but the home (trust store, caches)."""
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*") if not p.is_relative_to(self.home)}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _no_traceback(result: Any) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in output_of(result)


# -- names in a catalog document ------------------------------------------------------------------


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_entry_name_is_skipped_with_its_field_path_and_the_others_load(world: World, name: str) -> None:
    world.publish(world.plugin_entry("fine"), world.plugin_entry(name), world.plugin_entry("also-fine"))
    result = world.harness.cli("catalog", "sources", "--json")
    _no_traceback(result)
    data = json.loads(result.stdout)
    assert [(s["name"], s["entries"], s["skipped"]) for s in data["sources"]] == [("evil", 2, 1)]
    (skipped,) = data["skipped"]
    assert (skipped["source"], skipped["where"]) == ("evil", "entries[1].name")
    assert "not a valid name" in skipped["reason"]
    listed = world.harness.cli("catalog", "list", "--json")
    assert [e["name"] for e in json.loads(listed.stdout)["entries"]] == ["fine", "also-fine"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_installing_a_bad_name_from_the_cli_fails_clearly_and_writes_nothing(world: World, name: str) -> None:
    world.publish(world.plugin_entry(name))
    before = world.files()
    result = world.harness.cli("catalog", "install", name, "--yes", "--force")
    _no_traceback(result)
    assert result.exit_code != 0
    assert "entries[0].name" in output_of(result) and "not a valid name" in output_of(result)
    assert world.files() == before
    assert not (world.root / "planted").exists() and not (world.workspace / "planted").exists()


@pytest.mark.parametrize("depth", ["", "d" * 90])  # a long name is still found among the skipped ones
def test_an_absolute_entry_name_cannot_install_at_that_path(world: World, depth: str) -> None:
    planted = world.root / depth / "planted"
    world.publish(world.plugin_entry(str(planted)))
    result = world.harness.cli("catalog", "install", str(planted), "--yes")
    _no_traceback(result)
    assert result.exit_code != 0 and "not a valid name" in output_of(result)
    assert not planted.exists()


def test_the_printed_error_quotes_a_name_with_control_characters(world: World) -> None:
    world.publish(world.plugin_entry("evil\n\x1b[2Jname"))
    text = world.harness.cli("catalog", "sources").stdout
    assert "\x1b" not in text
    assert "skipped evil: entries[0].name ('evil\\n\\x1b[2Jname')" in text


@pytest.mark.parametrize(
    ("install", "where"),
    [
        ({"type": "git", "url": "https://example.com/r.git", "path": "../../etc"}, "entries[0].install.path"),
        ({"type": "git", "url": "https://example.com/r.git", "path": "/etc"}, "entries[0].install.path"),
        ({"type": "github", "repo": "a/b", "path": "x/\x00"}, "entries[0].install.path"),
        ({"type": "git", "url": "--upload-pack=touch planted"}, "entries[0].install.url"),
        ({"type": "npm", "package": "--pack-destination=/tmp"}, "entries[0].install.package"),
        ({"type": "path", "path": ""}, "entries[0].install.path"),
    ],
)
def test_install_source_paths_are_checked_when_the_document_is_parsed(install: dict[str, str], where: str) -> None:
    doc = {"entries": [{"name": "p", "kind": "plugin", "install": install}, {"name": "q", "launch": {"command": "x"}}]}
    result = parse_document(doc, source="evil")
    assert [e.name for e in result.entries] == ["q"]
    assert [(e.source, e.where) for e in result.errors] == [("evil", where)]


def test_a_marketplace_git_subdir_path_cannot_go_up() -> None:
    plugin = {"name": "p", "source": {"source": "git-subdir", "url": "https://example.com/m.git", "path": "a/../../.."}}
    result = parse_document({"plugins": [plugin, {"name": "ok", "source": "./ok"}]}, source="mk", location="/m/x.json")
    assert [e.name for e in result.entries] == ["ok"]
    assert [e.where for e in result.errors] == ["plugins[0].source.path"]


def test_a_code_built_entry_cannot_install_outside_either(world: World) -> None:
    """Defence in depth: an entry that never went through a document is checked at install time."""
    entry = CatalogEntry(
        name="../../planted", kind="plugin", install=InstallSource(type="path", path=str(world.plugin))
    )

    async def go() -> None:
        async with world.harness.open(start=False) as rt:
            with pytest.raises(InstallError, match="not a valid name"):
                await Installer(rt).install(entry, InstallOptions(force=True))

    anyio.run(go)
    assert not (world.workspace / "planted").exists() and not (world.root / "planted").exists()


def _install(world: World, entry: CatalogEntry, **options: Any) -> None:
    async def go() -> None:
        async with world.harness.open(start=False) as rt:
            await Installer(rt).install(entry, InstallOptions(**options))

    anyio.run(go)


def test_a_workspace_plugins_directory_that_links_outside_is_refused(world: World) -> None:
    outside = world.root / "outside"
    outside.mkdir()
    (world.workspace / ".kairox").mkdir()
    (world.workspace / ".kairox" / "plugins").symlink_to(outside)  # what a cloned repository can carry
    entry = CatalogEntry(name="p", kind="plugin", install=InstallSource(type="path", path=str(world.plugin)))
    with pytest.raises(InstallError, match="outside"):
        _install(world, entry)
    assert list(outside.iterdir()) == []


def test_an_install_target_that_links_outside_is_refused(world: World) -> None:
    outside = world.root / "outside"
    outside.mkdir()
    world.plugins.mkdir(parents=True)
    (world.plugins / "p").symlink_to(outside)
    entry = CatalogEntry(name="p", kind="plugin", install=InstallSource(type="path", path=str(world.plugin)))
    with pytest.raises(InstallError, match="outside"):
        _install(world, entry, force=True)
    assert list(outside.iterdir()) == []
    assert (world.plugins / "p").is_symlink()


def test_a_symlink_in_a_copied_bundle_cannot_bring_a_file_from_outside(world: World) -> None:
    secret = world.root / "secret.txt"
    secret.write_text("do-not-copy")
    (world.plugin / "leak").symlink_to(secret)
    entry = CatalogEntry(name="p", kind="plugin", install=InstallSource(type="path", path=str(world.plugin)))
    with pytest.raises(InstallError, match="symbolic link"):
        _install(world, entry)
    installed = [p for p in world.workspace.rglob("*") if p.is_file() and not p.is_symlink()]
    assert all("do-not-copy" not in p.read_text(errors="replace") for p in installed)
    assert not (world.plugins / "p").exists()


def test_a_relative_symlink_inside_the_bundle_is_kept(world: World) -> None:
    (world.plugin / "README.md").write_text("hello")
    (world.plugin / "docs").mkdir()
    (world.plugin / "docs" / "index.md").symlink_to("../README.md")
    entry = CatalogEntry(name="p", kind="plugin", install=InstallSource(type="path", path=str(world.plugin)))
    _install(world, entry)
    link = world.plugins / "p" / "docs" / "index.md"
    assert link.is_symlink() and link.read_text() == "hello"


def _tar(path: Path, *members: tarfile.TarInfo) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)


def _member(name: str, kind: bytes = tarfile.REGTYPE, **attrs: Any) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = 1 if kind == tarfile.REGTYPE else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


@pytest.mark.parametrize(
    "bad",
    [
        _member("package/../../planted"),
        _member("/tmp/planted-by-catalog-test"),
        _member("package/link", tarfile.SYMTYPE, linkname="/etc"),
        _member("package/hard", tarfile.LNKTYPE, linkname="../../planted"),
        _member("package/fifo", tarfile.FIFOTYPE),
        _member("package/dev", tarfile.CHRTYPE, devmajor=1, devminor=5),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "fifo", "device"],
)
def test_an_archive_member_outside_the_package_or_not_a_file_is_refused(tmp_path: Path, bad: tarfile.TarInfo) -> None:
    archive = tmp_path / "pkg.tgz"
    _tar(archive, _member("package/", tarfile.DIRTYPE), _member("package/plugin.json"), bad)
    dest = tmp_path / "work" / "extracted"
    dest.mkdir(parents=True)
    with pytest.raises(OSError, match="refusing archive member"):
        bundles._safe_extract(archive, dest)
    assert not (tmp_path / "planted").exists() and not Path("/tmp/planted-by-catalog-test").exists()
    assert [p.name for p in dest.rglob("*")] == []


def test_uninstall_never_follows_a_name_out_of_the_plugins_directory(world: World) -> None:
    victim = world.root / "victim"
    victim.mkdir()
    (victim / bundles.MARKER).write_text("{}")  # looks like a catalog install
    (victim / "precious.txt").write_text("keep me")
    world.harness.write_config("[catalog]\nbuiltin = false\n")
    world.plugins.mkdir(parents=True)
    name = os.path.relpath(victim, world.plugins)  # ../../../victim
    result = world.harness.cli("catalog", "uninstall", name, "--yes")
    _no_traceback(result)
    assert result.exit_code != 0 and "not installed" in output_of(result)
    assert (victim / "precious.txt").read_text() == "keep me"


# -- any text as a name -------------------------------------------------------------------------------


def _check_name_result(result: Any, where: str) -> None:
    root = "/r/plugins"
    assert len(result.entries) + len(result.errors) == 1
    for entry in result.entries:
        joined = posixpath.normpath(posixpath.join(root, entry.name))
        assert posixpath.dirname(joined) == root and joined != root, entry.name
        assert os.path.basename(joined) == entry.name  # nothing normalised away
        assert "\x00" not in entry.name and "\\" not in entry.name
    for error in result.errors:
        assert error.where == where and error.source == "h" and error.reason


@given(st.text(max_size=40))
@example("./../../planted")
@example("..")
@example("/etc")
@example("a\x00")
@example("a\n")
@example("C:evil")
def test_any_text_as_an_entry_name_stays_under_the_root_or_is_rejected_naming_the_field(name: str) -> None:
    plugin = {"name": name, "kind": "plugin", "install": {"type": "path", "path": "/src"}}
    _check_name_result(parse_document({"entries": [plugin]}, source="h"), "entries[0].name")
    server = {"name": name, "launch": {"command": "x"}}
    _check_name_result(parse_document({"entries": [server]}, source="h"), "entries[0].name")
    market = {"plugins": [{"name": name, "source": "./p"}]}
    _check_name_result(parse_document(market, source="h", location="/m/marketplace.json"), "plugins[0].name")


def test_the_name_rule_is_the_plugin_name_rule_of_kairox_manifests() -> None:
    from kairox._names import ENTRY_NAME_RE
    from kairox_catalog._paths import NAME_RE
    from kairox_manifests.formats._common import NAME_RE as PLUGIN_NAME_RE

    assert NAME_RE is ENTRY_NAME_RE and PLUGIN_NAME_RE is ENTRY_NAME_RE  # one rule, the kernel's


# -- file sources ---------------------------------------------------------------------------------------

#: a catalog run is far below this; reading /dev/zero whole is far above it
MEMORY_CAP = 1024 * 1024 * 1024


def _capped_kairox(world: World, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``kairox ARGS`` as a real process whose address space is capped (``RLIMIT_AS``)."""
    launcher = (
        "import os, resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_CAP}, {MEMORY_CAP}))\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", launcher, KAIROX, "--workspace", str(world.workspace), *args],
        cwd=world.workspace,
        env=world.harness.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


@pytest.mark.skipif(not Path("/dev/zero").exists() or sys.platform == "win32", reason="needs /dev/zero")
def test_dev_zero_as_a_source_errors_promptly_under_a_memory_cap(world: World) -> None:
    world.source("/dev/zero", name="zero")
    started = time.monotonic()
    result = _capped_kairox(world, "catalog", "sources", "--json", timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode == 0, result.stderr
    (source,) = json.loads(result.stdout)["sources"]
    assert source["name"] == "zero" and source["entries"] == 0
    (skipped,) = json.loads(result.stdout)["skipped"]
    assert "/dev/zero" in skipped["reason"] and "not a regular file" in skipped["reason"]
    assert "MemoryError" not in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_a_source_errors_instead_of_waiting_for_a_writer(world: World) -> None:
    fifo = world.root / "catalog.fifo"
    os.mkfifo(fifo)
    world.source(f"file://{fifo}", name="pipe")
    result = _capped_kairox(world, "catalog", "sources", "--json", timeout=20)
    (skipped,) = json.loads(result.stdout)["skipped"]
    assert str(fifo) in skipped["reason"] and "not a regular file" in skipped["reason"]


def test_a_file_source_over_the_cap_is_refused_like_an_http_one(world: World) -> None:
    from kairox_catalog.fetch import MAX_BYTES

    big = world.root / "big.json"
    with big.open("wb") as handle:  # sparse: no disk space needed
        handle.truncate(MAX_BYTES + 1)
    world.source(str(big), name="big")
    result = world.harness.cli("catalog", "sources", "--json")
    (skipped,) = json.loads(result.stdout)["skipped"]
    assert skipped["source"] == "big" and str(big) in skipped["reason"]
    assert f"larger than {MAX_BYTES:,} bytes" in skipped["reason"]


def test_a_file_source_at_the_cap_still_loads(world: World) -> None:
    world.publish(world.plugin_entry("fine"))
    snap_names = world.harness.cli("catalog", "list", "--json")
    assert [e["name"] for e in json.loads(snap_names.stdout)["entries"]] == ["fine"]


def test_a_file_url_single_file_bundle_is_capped_and_never_reads_a_device(world: World) -> None:
    entry = CatalogEntry(name="s", kind="skill", install=InstallSource(type="url", url="file:///dev/zero"))
    with pytest.raises(InstallError, match="not a regular file"):
        _install(world, entry, scope="workspace")


def test_catalog_load_of_a_code_source_skips_bad_names_per_entry(world: World) -> None:
    """A plugin's own source (``entries()`` returning dicts or entries) gets the same per-entry check."""
    from kairox.hookspecs import hookimpl

    good = CatalogEntry(name="good", kind="plugin", install=InstallSource(type="path", path="/x"))
    bad = CatalogEntry(name="../bad", kind="plugin", install=InstallSource(type="path", path="/x"))

    class Source:
        name = "code"

        async def entries(self, runtime: Any) -> list[Any]:
            return [good, bad, {"name": "..", "launch": {"command": "x"}}]

    class Plugin:
        @hookimpl
        def kairox_register_catalog_sources(self, registrar: Any) -> None:
            registrar.add(Source())

    world.harness.write_config("[catalog]\nbuiltin = false\n", where="user")
    world.harness.register(Plugin(), name="code-source")

    async def go() -> Any:
        async with world.harness.open(start=False) as rt:
            return await Catalog(rt).load()

    snap = anyio.run(go)
    assert [e.name for e in snap.entries] == ["good"]
    assert [(e.source, e.where) for e in snap.errors] == [("code", "[1].name"), ("code", "[2].name")]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_install_from_a_device_says_what_it_is(world: World) -> None:
    """Installing a path entry that names /dev/zero fails saying it is not a directory or a
    regular file."""
    world.publish(world.plugin_entry("zero", type="path", path="/dev/zero"))
    result = world.harness.cli("catalog", "install", "zero", "--yes", "--force")
    _no_traceback(result)
    assert result.exit_code != 0
    assert "not a directory or a regular file" in output_of(result), output_of(result)
