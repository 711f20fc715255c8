"""Issue 13, item 11: ``plugin list`` does not say "enabled" for a bundle whose load failed.

``plugin list`` runs no plugin code, so before the fix it said ``enabled`` for a
bundle whose ``register()`` had raised on every ``kairox status``. The loader now
remembers the failure (``$KAIROX_HOME/state/plugin-loads.json``, with the bundle's
digest) until the bundle loads or its files change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kairox_testing import KairoxHarness


@pytest.fixture
def boom(tmp_path: Path) -> KairoxHarness:
    home, ws = tmp_path / "home", tmp_path / "ws"
    plugin = home / "plugins" / "boom"
    plugin.mkdir(parents=True)
    ws.mkdir()
    (plugin / "plugin.json").write_text(
        json.dumps({"id": "boom", "name": "Boom", "version": "1.0.0", "main": "main.py", "providesTools": ["x"]})
    )
    (plugin / "main.py").write_text('def register(ctx):\n    raise RuntimeError("register exploded")\n')
    return KairoxHarness(ws, home)


def _row(harness: KairoxHarness) -> dict[str, object]:
    result = harness.cli("plugin", "list", "--json", load_entrypoints=True)
    assert result.exit_code == 0, result.stderr
    [row] = [p for p in json.loads(result.stdout)["plugins"] if p["name"] == "boom"]
    return row


def test_a_bundle_that_failed_to_load_is_listed_as_failed_until_it_changes(boom: KairoxHarness) -> None:
    assert _row(boom)["state"] == "available"  # never loaded: nothing known against it
    status = boom.cli("status", load_entrypoints=True)
    assert "register exploded" in status.stdout

    row = _row(boom)
    assert row["state"] == "failed"
    assert "register exploded" in str(row["reason"]) and "last load failed" in str(row["reason"])
    text = boom.cli("plugin", "list", load_entrypoints=True).stdout
    [line] = [ln for ln in text.splitlines() if ln.startswith("boom")]
    assert "enabled" not in line and "failed" in line
    assert "register exploded" in text
    inspect = boom.cli("plugin", "inspect", "boom", load_entrypoints=True)
    assert inspect.exit_code == 1 and "register exploded" in inspect.stdout

    # fixed: the edit alone makes it a candidate again, and the next load clears the record
    (boom.home / "plugins" / "boom" / "main.py").write_text("def register(ctx):\n    pass\n")
    assert _row(boom)["state"] == "available"
    boom.cli("status", load_entrypoints=True)
    saved = json.loads((boom.home / "state" / "plugin-loads.json").read_text())
    assert saved == {}


@pytest.mark.parametrize(
    "content", [b"\x00garbage", b"[1, 2]", b'{"x": 1, "y": {"reason": 5}}', b"[" * 100_000, b" " * (5 << 20)]
)
def test_a_broken_state_file_changes_nothing(boom: KairoxHarness, content: bytes) -> None:
    state = boom.home / "state" / "plugin-loads.json"
    state.parent.mkdir(parents=True)
    state.write_bytes(content)
    assert _row(boom)["state"] == "available"
    boom.cli("status", load_entrypoints=True)
    assert _row(boom)["state"] == "failed"  # and it was rewritten whole
