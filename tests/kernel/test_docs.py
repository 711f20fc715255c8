"""The docs this area owns: relative links resolve, and the fixtures of kairox_testing are documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kairox_testing

DOCS = Path(__file__).resolve().parents[2] / "docs"
OWNED = ["index.md", "configuration.md", "hooks.md", "writing-a-plugin.md", "testing-plugins.md", "cli.md"]


@pytest.mark.parametrize("name", OWNED)
def test_relative_links_resolve(name: str) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (DOCS / target).exists(), f"{name}: broken link {target}"


def test_every_fixture_is_documented() -> None:
    text = (DOCS / "testing-plugins.md").read_text(encoding="utf-8")
    fixtures = [n for n, v in vars(kairox_testing).items() if n.startswith("kairox_") and callable(v)]
    assert len(fixtures) == 7
    for name in fixtures:
        assert f"`{name}`" in text, f"fixture {name} is not documented in docs/testing-plugins.md"
    for name in kairox_testing.__all__:
        assert name in text, f"kairox_testing.{name} is not documented"
