"""docs/testing-plugins.md's recipe for hypothesis with the async fixtures works as written:
the block runs as a plugin author's test module, every example on the one runtime, and it
fails on a tool that miscounts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing-plugins.md"


def recipe() -> str:
    text = DOC.read_text(encoding="utf-8")
    [block] = re.findall(r"```python\n(# tests/test_properties\.py\n.*?)```", text, re.S)
    return block


def test_the_recipe_passes_as_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_properties=recipe())
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_recipe_runs_every_example_on_the_one_runtime(pytester: pytest.Pytester) -> None:
    counted = recipe().replace(
        "    assert result.structured",
        "    runtimes.add(id(kairox_runtime)); calls.append(1)\n    assert result.structured",
    )
    pytester.makepyfile(
        test_properties="runtimes, calls = set(), []\n"
        + counted
        + "\n\ndef test_after():\n    assert len(runtimes) == 1 and len(calls) >= 20\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_recipe_fails_on_a_tool_that_miscounts(pytester: pytest.Pytester) -> None:
    broken = recipe().replace("return len(text.split())", "return len(text.split(' ')) if len(text) < 9 else 0")
    pytester.makepyfile(test_properties=broken)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines([r".*(Falsifying example|Failing test case).*"])  # hypothesis found it
