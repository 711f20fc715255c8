"""Importing ``kairox_adapters`` imports no framework; each submodule imports its own only."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("pydantic_ai", "agents")


def loaded_after(statement: str) -> set[str]:
    """The frameworks' top-level modules loaded by ``statement`` in a fresh interpreter."""
    code = f"import sys, json; {statement}; print(json.dumps(sorted(m for m in sys.modules if '.' not in m)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout)) & set(FRAMEWORKS)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("import kairox_adapters", set()),
        ("import kairox_adapters.pydantic_ai", {"pydantic_ai"}),
        ("import kairox_adapters.openai_agents", {"agents"}),
    ],
)
def test_each_framework_is_imported_by_its_own_submodule_only(statement: str, expected: set[str]) -> None:
    assert loaded_after(statement) == expected
