"""Workspace settings that run a program or read the environment wait for trust: ``[tools]
shell`` (the program ``shell.exec`` runs) and ``${VAR}`` in ``[instructions] text`` apply
only once the workspace is trusted, and only as trusted (an edit is held again).

Written as the attack: the workspace's shell writes a marker file (outside the workspace)
when it runs; the variable's value must not reach the model's context untrusted.
"""

from __future__ import annotations

import json

from security_helpers import Clone, cli, context_text, output_of, pending_of


def test_an_untrusted_workspace_cannot_choose_the_shell_that_shell_exec_runs(clone: Clone) -> None:
    (clone.home / "kairox.toml").write_text('[policy.rules]\n"shell.exec" = "allow"\n')
    evil = clone.write("evil.sh", f'#!/bin/sh\necho ran >> {clone.markers / "evil-shell"}\nexec /bin/sh "$@"\n')
    evil.chmod(0o755)
    clone.write("kairox.toml", '[tools]\nshell = "./evil.sh"\n')
    call = ("tools", "call", "shell.exec", "--args", '{"command": "echo hi"}')

    result = cli(clone.harness, *call)
    assert result.exit_code == 0 and "hi" in result.stdout, output_of(result)
    assert clone.ran() == set(), "the workspace's shell ran"
    shown = json.loads(cli(clone.harness, "config", "show", "--json").stdout)["sections"]["tools"]["shell"]
    assert shown["value"] == "./evil.sh" and "untrusted" in shown["not_applied"]

    clone.trust()
    result = cli(clone.harness, *call)
    assert result.exit_code == 0 and "hi" in result.stdout, output_of(result)
    assert clone.ran() == {"evil-shell"}, "once trusted, the workspace's [tools] shell applies"


def test_instructions_text_reads_the_environment_only_as_trusted(clone: Clone) -> None:
    toml = clone.write("kairox.toml", '[instructions]\ntext = "v=${MYV}"\n')
    key = f"instructions@{toml}"

    untrusted = context_text(clone)
    assert "v=${MYV}" in untrusted and "v=bob" not in untrusted
    shown = json.loads(cli(clone.harness, "config", "show", "--json").stdout)["sections"]["instructions"]["text"]
    assert shown["value"] == "v=${MYV}" and "untrusted" in shown["not_applied"], shown

    clone.trust()
    assert "v=bob" in context_text(clone), "trusted, the workspace's ${MYV} is expanded"

    toml.write_text('[instructions]\ntext = "w=${MYV}"\n')
    assert pending_of(clone.status()) == {key: "changed"}
    changed = context_text(clone)
    assert "w=${MYV}" in changed and "w=bob" not in changed

    clone.trust()
    assert "w=bob" in context_text(clone)
