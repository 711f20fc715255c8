"""The "Locking it" recipe of docs/distributions.md, run as written (issue 41, item 5): with
``contrib/kairox-minimal`` as the distribution and this repository's wheels as the folder of
wheels that are not on PyPI, each command of the recipe in a temporary directory, then the
install from the lock into a fresh virtual environment gives exactly the declared plugin set.
uv runs offline, from its cache."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contrib.conftest import run, uv_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]

ROOT = Path(__file__).resolve().parents[2]


def recipe() -> list[str]:
    """The commands of the first ``sh`` block of docs/distributions.md's "Locking it"."""
    text = (ROOT / "docs" / "distributions.md").read_text()
    section = text.split("## Locking it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the Locking it section has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in uv_env().items() if not k.startswith(("KAIROX_", "PYTHON"))}
    return {**env, "UV_OFFLINE": "1", "UV_PYTHON": sys.executable, "KAIROX_HOME": str(tmp_path / "home")}


def minimal_project(wheels: Path, tmp_path: Path) -> Path:
    """A copy of contrib/kairox-minimal whose ``wheels/`` holds the kairox wheels a team gets
    from its private index; its own is built by the recipe."""
    project = tmp_path / "kairox-minimal"
    shutil.copytree(ROOT / "contrib" / "kairox-minimal", project, ignore=shutil.ignore_patterns("dist", "__pycache__"))
    (project / "wheels").mkdir()
    for wheel in wheels.glob("*.whl"):
        if not wheel.name.startswith("kairox_minimal-"):
            shutil.copy(wheel, project / "wheels")
    return project


def test_the_locking_recipe_installs_exactly_the_plugin_set(wheels: Path, tmp_path: Path) -> None:
    project = minimal_project(wheels, tmp_path)
    prefix = tmp_path / "opt-acme"
    env = env_for(tmp_path)
    (tmp_path / "home").mkdir()
    commands = recipe()
    assert len(commands) == 5, commands
    # the recipe runs offline; the wheels fixture built with whichever interpreter came first,
    # so the build backend's requirements for this one (hatchling needs tomli before 3.11)
    # are put in uv's cache first, online, by a build into a folder the recipe does not read
    online = {k: v for k, v in env.items() if k != "UV_OFFLINE"}
    run(["uv", "build", "--wheel", "--quiet", "--out-dir", str(tmp_path / "primed")], cwd=project, env=online)
    for command in commands:
        command = command.replace("acme-kairox==1.0.0", "kairox-minimal==0.1.0").replace("/opt/acme", str(prefix))
        out = run(["bash", "-euo", "pipefail", "-c", command], cwd=project, env=env)
    assert "distribution minimal (kairox-minimal 0.1.0): kairox-tools, kairox-skills" in out.stdout

    lock = (project / "requirements.lock").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", lock, re.M)
    assert ("kairox-minimal", "0.1.0") in pins and ("kairox-tools", "0.1.0") in pins
    # every pin carries its hashes (--require-hashes refuses one without)
    assert len(pins) == lock.count("==") == len(re.findall(r"==\S+ \\\n    --hash=sha256:", lock))

    (tmp_path / "ws").mkdir()
    shown = subprocess.run(
        [str(prefix / "bin" / "kairox"), "--workspace", str(tmp_path / "ws"), "--json", "plugins"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert sorted((p["name"], p["distribution"]) for p in data["plugins"]) == [
        ("skills", "kairox-skills"),
        ("tools", "kairox-tools"),
    ]
    assert data["failures"] == [] and data["not_loaded"] == []
    assert data["distribution"]["package"] == "kairox-minimal"
    installed = subprocess.run(
        [str(prefix / "bin" / "python"), "-c", "import importlib.util as u; print(u.find_spec('mcp') is None)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert installed.stdout.strip() == "True"


def test_the_lock_refuses_a_wheel_whose_hash_differs(wheels: Path, tmp_path: Path) -> None:
    """The attack: the folder of wheels shipped with the lock (to the machine that builds the
    image) has a wheel replaced. The same install from an untouched copy succeeds."""
    project = minimal_project(wheels, tmp_path)
    env = env_for(tmp_path)
    build, compile_, venv, install, _show = recipe()
    for command in (build, compile_):
        command = command.replace("acme-kairox==1.0.0", "kairox-minimal==0.1.0")
        run(["bash", "-euo", "pipefail", "-c", command], cwd=project, env=env)

    def ship_and_install(name: str, tamper: bool) -> subprocess.CompletedProcess[str]:
        # a copy elsewhere, as `COPY wheels/ requirements.lock` (uv's cache knows the first folder's files)
        target = tmp_path / name
        shutil.copytree(project / "wheels", target / "wheels")
        shutil.copy(project / "requirements.lock", target)
        if tamper:
            [tools] = (target / "wheels").glob("kairox_tools-*.whl")
            with open(tools, "ab") as f:  # another file under the same name: not the one locked
                f.write(b"\0")
        prefix = str(target / "venv")
        run(["bash", "-c", venv.replace("/opt/acme", prefix)], cwd=target, env=env)
        return subprocess.run(
            ["bash", "-c", install.replace("/opt/acme", prefix)],
            cwd=target,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    assert ship_and_install("untouched", tamper=False).returncode == 0
    out = ship_and_install("tampered", tamper=True)
    assert out.returncode != 0
    assert "hash" in out.stderr.lower() and "kairox-tools" in out.stderr, out.stderr
    assert not (tmp_path / "tampered" / "venv" / "bin" / "kairox").exists()
