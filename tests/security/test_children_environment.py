"""A child kairox starts (a stdio server, a worker plugin) gets a filtered environment, and
must not read kairox's whole one from ``/proc/<parent>/environ`` instead.

The attack is a real child process reading its parent's environ. Root reads every
process's ``/proc`` entries whatever their owner says, so when the suite runs as root
the parent and the child run as ``nobody`` (``setpriv``), with the system's Python 3
and this environment's packages on the path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import kairox
import kairox_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")

SECRET = "s3cr3t-environ-9c41"

PARENT = """
import subprocess, sys
if sys.argv[1] == "protect":
    from kairox_process import protect_environment
    assert protect_environment()
spy = '''
import os
try:
    data = open(f"/proc/{os.getppid()}/environ", "rb").read()
    print("READ", data.decode(errors="replace"))
except OSError as exc:
    print("REFUSED", exc.errno)
'''
subprocess.run([sys.executable, "-c", spy], env={"PATH": "/usr/bin:/bin"})
"""


def _as_user() -> tuple[list[str], str]:
    """The command prefix and interpreter the parent runs with (``nobody`` when we are root)."""
    if os.geteuid() != 0:
        return [], sys.executable
    setpriv, python = shutil.which("setpriv"), "/usr/bin/python3"
    if setpriv is None or not os.path.exists(python):
        pytest.skip("running as root without setpriv and /usr/bin/python3 to drop to nobody")
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip(f"/usr/bin/python3 is {version.stdout.strip()}, this environment {sys.version_info[:2]}")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"], python


def _child_of(mode: str) -> str:
    prefix, python = _as_user()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        script = Path(tmp) / "parent.py"
        script.write_text(PARENT)
        os.chmod(script, 0o644)
        sources = [str(Path(package.__file__).parents[1]) for package in (kairox, kairox_process)]
        paths = [*sources, *(p for p in sys.path if p.endswith("site-packages"))]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths), "SECRET_TOKEN": SECRET}
        result = subprocess.run(
            [*prefix, python, str(script), mode], env=env, capture_output=True, text=True, timeout=60, cwd=tmp
        )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_child_reads_an_unprotected_parents_environment() -> None:
    """The attack works against a parent that does nothing (so the next test can fail)."""
    assert SECRET in _child_of("plain")


def test_a_child_cannot_read_a_protected_parents_environment() -> None:
    out = _child_of("protect")
    assert SECRET not in out
    assert out.startswith("REFUSED 13"), out  # EACCES: the entry belongs to root now


def test_the_kairox_command_protects_its_environment_first() -> None:
    probe = (
        "import ctypes, sys\n"
        "from kairox_cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"  # PR_GET_DUMPABLE
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("dumpable 0"), result.stdout
