"""Settings files: enable/disable per scope, atomic writes, no lost updates across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kairox.ext import SkillError
from kairox_skills import SettingsFile, settings_path
from kairox_skills._settings import skill_overrides


def test_set_and_clear_a_skill(tmp_path: Path) -> None:
    settings = SettingsFile(tmp_path / "settings.json")
    settings.set_skill("pr-review", False)
    settings.set_skill("deploy", True)
    assert settings.read() == {"skills": {"enabled": {"deploy": True, "pr-review": False}}}
    settings.set_skill("deploy", None)
    assert skill_overrides(settings.read()) == ({"pr-review": False}, [])


def test_other_keys_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"theme": "dark", "skills": {"enabled": {"a": True}, "other": 1}}))
    SettingsFile(path).set_skill("b", False)
    assert json.loads(path.read_text()) == {
        "theme": "dark",
        "skills": {"enabled": {"a": True, "b": False}, "other": 1},
    }


def test_a_broken_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{\n  "skills": {\n    "enabled": {"a": fals}\n')
    with pytest.raises(SkillError) as info:
        SettingsFile(path).set_skill("b", False)
    assert (info.value.file, info.value.line) == (str(path), 3)
    assert path.read_text().startswith('{\n  "skills"')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", "settings.json.lock"]


def test_bad_entries_are_errors_and_the_rest_apply(tmp_path: Path) -> None:
    overrides, errors = skill_overrides({"skills": {"enabled": {"a": False, "b": "no"}}}, file="s.json")
    assert overrides == {"a": False}
    assert [(e.file, e.field) for e in errors] == [("s.json", "skills.enabled.b")]
    assert skill_overrides({"skills": {"enabled": []}})[0] == {}


def test_where_the_files_are(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert settings_path("workspace", workspace=ws) == ws / ".kairox" / "settings.json"
    assert settings_path("user", workspace=ws, env={"KAIROX_HOME": str(tmp_path / "h")}) == (
        tmp_path / "h" / "settings.json"
    )
    with pytest.raises(ValueError):
        settings_path("session", workspace=ws)


WRITER = textwrap.dedent(
    """
    import sys
    from kairox_skills._settings import SettingsFile
    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    settings = SettingsFile(path)
    for i in range(count):
        settings.set_skill(f"w{worker}-{i}", i % 2 == 0)
    """
)


def test_concurrent_writers_in_many_processes_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    workers, count = 6, 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w), str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        for w in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    enabled = SettingsFile(path).read()["skills"]["enabled"]
    assert len(enabled) == workers * count
    assert enabled == {f"w{w}-{i}": i % 2 == 0 for w in range(workers) for i in range(count)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", "settings.json.lock"]
