"""The formats as registered (:class:`LazyFormat`): the real formats' names, priorities and
answers, their code imported on first use, a missing module refused when registering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_helpers import FIXTURES

from kairox_manifests.discovery import Location, locations, probe, sorted_formats
from kairox_manifests.formats import ClaudeDefaultLayout, builtin_formats
from kairox_manifests.lazyformat import LazyFormat, builtin_lazy_formats
from kairox_philont.locations import philont_format
from kairox_philont.manifest import PhilontFormat


def test_the_registered_formats_are_the_builtin_formats() -> None:
    lazy = [*builtin_lazy_formats(), philont_format()]
    real = [*builtin_formats(), PhilontFormat()]
    assert [(f.name, f.priority, getattr(f, "fallback", False)) for f in lazy] == [
        (f.name, f.priority, getattr(f, "fallback", False)) for f in real
    ]
    assert [type(f.format) for f in lazy] == [type(f) for f in real]


def test_a_lazy_format_probes_as_the_real_one() -> None:
    lazy = sorted_formats(builtin_lazy_formats())
    real = sorted_formats(builtin_formats())
    for root in (
        FIXTURES / "claude" / "code-review",
        FIXTURES / "codex" / "release-notes",
        FIXTURES / "kairox" / "docs-helper",
    ):
        manifest, error = probe(root, lazy)
        assert manifest is not None and error is None
        assert (manifest, error) == probe(root, real)


@pytest.mark.anyio
async def test_the_real_format_is_built_when_needed_and_nothing_is_forwarded() -> None:
    fmt = LazyFormat("claude-layout", 100, "kairox_manifests.formats.claude:ClaudeDefaultLayout", fallback=True)
    assert "not loaded" in repr(fmt)
    assert not hasattr(fmt, "MARKERS")  # the format's own attributes stay the format's
    assert isinstance(fmt.format, ClaudeDefaultLayout) and "loaded" in repr(fmt)
    with pytest.raises(RuntimeError, match="cannot run plugin code"):  # the Claude formats run no code
        await fmt.activate(None, None)
    assert fmt.locations(Path("/w"), {}) == []


def test_philont_locations_without_loading_the_format(tmp_path: Path) -> None:
    fmt = philont_format()
    found = fmt.locations(tmp_path, {"HOME": str(tmp_path / "home")})
    assert [(loc.path, loc.scope) for loc in found] == [
        (tmp_path / ".philont" / "plugins", "workspace"),
        (tmp_path / "home" / ".philont" / "plugins", "user"),
    ]
    assert all(isinstance(loc, Location) for loc in found)
    assert fmt.locations(tmp_path, {}, config=_PluginsOff()) == []
    assert fmt._format is None


class _PluginsOff:
    sections = {"philont"}

    def section(self, name: str) -> object:
        from kairox_philont.config import PhilontConfig

        return PhilontConfig(plugins=False)


def test_a_missing_module_is_refused_when_registering() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"no module named 'kairox_manifests\.formats\.nothing'"):
        LazyFormat("nothing", 5, "kairox_manifests.formats.nothing:Nothing")
    with pytest.raises(ModuleNotFoundError):
        LazyFormat("nothing", 5, "no_such_package.formats:Nothing")
    with pytest.raises(ValueError, match=r"is not 'package\.module:attribute'"):
        LazyFormat("nothing", 5, "kairox_manifests.formats")


def test_a_format_that_is_not_what_it_was_registered_as_fails_its_probe(tmp_path: Path) -> None:
    fmt = LazyFormat("kairox", 11, "kairox_manifests.formats.kairox:KairoxFormat")
    (tmp_path / ".kairox-plugin").mkdir()
    (tmp_path / ".kairox-plugin" / "plugin.json").write_text(json.dumps({"name": "x"}), encoding="utf-8")
    manifest, error = probe(tmp_path, [fmt])
    assert manifest is None and error is not None
    assert "registered as 'kairox' (priority 11)" in error.message


class _FolderOnly:
    """A third-party format whose ``probe`` takes the folder alone."""

    name, priority = "folder-only", 50

    def __init__(self) -> None:
        self.asked: list[Path] = []

    def probe(self, root: Path) -> None:
        self.asked.append(root)
        return None


def test_the_bundle_reader_goes_to_the_formats_that_take_it(tmp_path: Path) -> None:
    from kairox.files import Root

    # the manifest is a link to a file beside the bundle: outside the bundle, inside tmp_path
    (tmp_path / "beside.json").write_text(json.dumps({"name": "p"}), encoding="utf-8")
    (tmp_path / "p" / ".kairox-plugin").mkdir(parents=True)
    (tmp_path / "p" / ".kairox-plugin" / "plugin.json").symlink_to(tmp_path / "beside.json")
    folder_only = _FolderOnly()
    formats = [*builtin_lazy_formats(), folder_only]
    manifest, error = probe(tmp_path / "p", formats, reader=Root(tmp_path / "p", label="the plugin root"))
    assert manifest is None and error is not None and "outside the plugin root" in error.message
    # the formats read through the reader they are given (here one that reaches tmp_path)
    manifest, error = probe(tmp_path / "p", formats, reader=Root(tmp_path / "p", also=[tmp_path]))
    assert error is None and manifest is not None and manifest.name == "p"
    # a format whose probe takes no reader is asked with the folder alone (by the second
    # probe: in the first, the refused manifest failed the folder before it was asked)
    assert folder_only.asked == [tmp_path / "p"]


def test_discovery_lists_the_philont_locations_through_the_lazy_format(tmp_path: Path) -> None:
    from kairox_manifests.config import BundlesConfig
    from kairox_manifests.discovery import DiscoveryContext
    from kairox_manifests.settings import BundleSettings

    ctx = DiscoveryContext(
        workspace=tmp_path,
        env={"HOME": str(tmp_path / "home")},
        home=tmp_path / "kh",
        config=BundlesConfig(),
        settings=BundleSettings(),
        formats=sorted_formats([*builtin_lazy_formats(), philont_format()]),
    )
    origins = [loc.origin for loc in locations(ctx)]
    assert "Philont workspace plugins" in origins and "Philont user plugins" in origins
