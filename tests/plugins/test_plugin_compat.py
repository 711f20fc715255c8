"""Compatibility: version ranges (PEP 440 and npm forms), platforms, required binaries with versions."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version
from plugin_helpers import write_executable

from kairox_manifests.compat import check_compatibility, parse_range, parse_requirement
from kairox_manifests.model import Compatibility, Requirement


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        (">=0.1,<1", ["0.1.0", "0.9.9"], ["0.0.9", "1.0.0"]),
        (">=0.1 <1", ["0.5"], ["1.0"]),
        ("^0.2", ["0.2.0", "0.2.9"], ["0.3.0", "0.1.9"]),
        ("^1.2.3", ["1.2.3", "1.9.0"], ["2.0.0", "1.2.2"]),
        ("^0.0.3", ["0.0.3"], ["0.0.4"]),
        ("~1.4", ["1.4.0", "1.4.7"], ["1.5.0"]),
        ("1.x", ["1.0", "1.99"], ["2.0", "0.9"]),
        ("0.1", ["0.1.0", "0.1.5"], ["0.2.0"]),
        ("*", ["0.0.1", "99.0"], []),
        (">=20", ["20.0.0", "22.1.0"], ["18.19.0"]),
    ],
)
def test_ranges(text: str, inside: list[str], outside: list[str]) -> None:
    spec = parse_range(text)
    for v in inside:
        assert spec.contains(Version(v), prereleases=True), (text, v)
    for v in outside:
        assert not spec.contains(Version(v), prereleases=True), (text, v)


@pytest.mark.parametrize("text", ["garbage", ">=1 || <0", ">>1", ""])
def test_bad_ranges(text: str) -> None:
    if text == "":
        assert str(parse_range(text)) == ""  # empty means any version
        return
    with pytest.raises(ValueError):
        parse_range(text)


@given(st.text(max_size=30))
def test_parse_range_only_raises_value_error(text: str) -> None:
    try:
        parse_range(text)
    except ValueError:
        pass


def test_requirements() -> None:
    assert parse_requirement("node >=20") == Requirement("node", ">=20")
    assert parse_requirement("  git ") == Requirement("git", "")
    for bad in ["", "no!pe", "node >>>20"]:
        with pytest.raises(ValueError):
            parse_requirement(bad)


def test_kairox_version_and_platform() -> None:
    compat = Compatibility(kairox_version=">=0.1,<1", platforms=("linux", "macos"))
    assert check_compatibility(compat, version="0.4.0", platform="linux") == []
    assert check_compatibility(compat, version="0.4.0", platform="darwin") == []
    [why] = check_compatibility(compat, version="1.2.0", platform="linux")
    assert why == "needs kairox >=0.1,<1, this is 1.2.0"
    [why] = check_compatibility(compat, version="0.4.0", platform="win32")
    assert "supports linux, macos, not win32" == why


def test_required_binaries_on_path_with_versions(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    write_executable(bin_dir / "fakenode", "#!/bin/sh\necho v18.19.1\n")
    write_executable(bin_dir / "quiet", "#!/bin/sh\necho 'no version here'\n")
    env = {"PATH": str(bin_dir)}
    ok = Compatibility(requires=(Requirement("fakenode", ">=18"), Requirement("fakenode")))
    assert check_compatibility(ok, env=env) == []
    too_old = Compatibility(requires=(Requirement("fakenode", ">=20"),))
    assert check_compatibility(too_old, env=env) == ["requires fakenode >=20, found fakenode 18.19.1"]
    missing = Compatibility(requires=(Requirement("nothere"),))
    assert check_compatibility(missing, env=env) == ["requires nothere, which is not on PATH"]
    unreadable = Compatibility(requires=(Requirement("quiet", ">=1"),))
    [why] = check_compatibility(unreadable, env=env)
    assert "could not read the version" in why
