"""kairox_process's public names: each listed in its stub resolves, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kairox_process


@pytest.mark.parametrize("name", kairox_process.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(kairox_process, name) is not None


def test_names_load_lazily() -> None:
    # a reader of a child's stderr (OutputTail) does not load the process-group code
    code = (
        "import sys, kairox_process; assert 'kairox_process._tail' not in sys.modules; "
        "kairox_process.OutputTail; assert 'kairox_process._tail' in sys.modules; "
        "assert 'kairox_process._children' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
