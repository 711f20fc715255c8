"""``kairox --version`` (issue 18, item 2): the kernel's version, and with ``-v`` every
plugin package's, as the installed metadata says; options without a command still fail."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

KAIROX = str(Path(sys.executable).parent / "kairox")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KAIROX, *args], capture_output=True, text=True, timeout=60)


def test_version_is_the_installed_kernels() -> None:
    out = run("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"kairox {metadata.version('kairox')} (Python {sys.version.split()[0]})"]


def test_verbose_version_lists_every_plugin_package_in_either_order() -> None:
    for args in (["-v", "--version"], ["--version", "-v"]):
        out = run(*args)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert f"  kairox-tools {metadata.version('kairox-tools')}" in lines
        assert f"  kairox-example {metadata.version('kairox-example')}" in lines  # a third party's, from contrib/
        assert not any(line.startswith("  kairox ") for line in lines)  # the kernel is the first line


def test_version_as_json() -> None:
    out = run("--json", "-v", "--version")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["kairox"] == metadata.version("kairox")
    assert data["plugin_packages"]["kairox-stdio"] == metadata.version("kairox-stdio")
    assert "plugin_packages" not in json.loads(run("--json", "--version").stdout)


def test_options_without_a_command_still_fail() -> None:
    out = run("-v")
    assert out.returncode == 2
    assert "Missing command" in out.stderr
    bare = run()
    assert bare.returncode == 2 and "Usage: kairox" in bare.stdout + bare.stderr


def test_the_module_version_is_the_installed_distributions() -> None:
    import kairox

    assert kairox.__version__ == metadata.version("kairox")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import kairox; kairox.__version__"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "importlib.metadata" in imported or "importlib_metadata" in imported  # read from the metadata
    assert not {"mcp", "httpx", "pluggy"} & imported  # and nothing heavy
