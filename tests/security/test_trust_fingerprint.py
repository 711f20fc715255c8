"""What a trusted item's fingerprint covers: every file it runs, or it is refused.

Written as the attack: a trusted repository changes code that runs (a script behind
``${PWD}/x.sh``, a bundle script under ``node_modules`` or outside the bundle, a link
retargeted) and must not have it run without being asked again; a bundle too large to
fingerprint whole is refused, never trusted in part. Each would-be command writes a
marker file into ``markers/`` (outside the workspace).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from security_helpers import Clone, cli, output_of, pending_of, server_toml, servers_of, write_bundle

from kairox._declared import MAX_REFERENCED_BYTES
from kairox.ext import TrustStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and links")

WRITE = ("tools", "call", "fs.write", "--args", '{"path": "notes.txt", "content": "x"}', "--yes")


def marker_script(clone: Clone, name: str) -> str:
    return f"echo ran >> {clone.markers / name}\n"


# -- 1. a script named with a variable kairox expands is part of what was trusted --------------

#: where the server is declared, and how it names tools/x.sh with ${PWD}
PWD_SERVERS = {
    "toml-args": ("kairox.toml", {"command": "sh", "args": ["${PWD}/tools/x.sh"]}),
    "toml-shell-string": ("kairox.toml", {"command": "sh", "args": ["-c", '. "${PWD}/tools/x.sh"']}),
    "toml-cwd": ("kairox.toml", {"command": "sh", "args": ["./x.sh"], "cwd": "${PWD}/tools"}),
    "mcp-json": (".mcp.json", {"command": "sh", "args": ["${PWD}/tools/x.sh"]}),
}


@pytest.mark.parametrize("case", list(PWD_SERVERS))
def test_a_changed_script_behind_a_pwd_path_is_changed_since_trusted(
    clone: Clone, no_leftovers: None, case: str
) -> None:
    where, entry = PWD_SERVERS[case]
    clone.write("tools/x.sh", marker_script(clone, "v1"))
    if where == "kairox.toml":
        clone.write(where, "[mcp_servers.s]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in entry.items()))
        key = "mcp_servers.s"
    else:
        clone.write(where, json.dumps({"mcpServers": {"s": entry}}))
        key = ".mcp.json:s"
    clone.trust()
    clone.status()
    assert clone.ran() == {"v1"}, "trusted, the server and its script run"

    clone.write("tools/x.sh", marker_script(clone, "v2"))
    status = clone.status()
    assert "v2" not in clone.ran(), "the changed script ran without being trusted again"
    assert pending_of(status) == {key: "changed"}


def test_a_link_out_of_the_workspace_counts_by_where_it_leads(clone: Clone, no_leftovers: None) -> None:
    """``run.sh -> ../outside/a.sh``: the file out there is not the workspace's (a venv's
    ``python`` links to the system's), but where the link leads is part of what was trusted."""
    outside = clone.workspace.parent / "outside"
    outside.mkdir()
    (outside / "a.sh").write_text(marker_script(clone, "a"))
    (outside / "b.sh").write_text(marker_script(clone, "b"))
    (clone.workspace / "run.sh").symlink_to(outside / "a.sh")
    clone.write("kairox.toml", '[mcp_servers.s]\ncommand = "sh"\nargs = ["./run.sh"]\n')
    clone.trust()
    clone.status()
    assert clone.ran() == {"a"}

    (clone.workspace / "run.sh").unlink()
    (clone.workspace / "run.sh").symlink_to(outside / "b.sh")
    assert pending_of(clone.status()) == {"mcp_servers.s": "changed"}
    assert "b" not in clone.ran()


def test_a_server_naming_a_file_too_large_to_fingerprint_is_refused(clone: Clone, no_leftovers: None) -> None:
    with open(clone.workspace / "big.bin", "wb") as fh:
        fh.truncate(MAX_REFERENCED_BYTES + 1)  # sparse: costs no disk
    clone.write(
        "kairox.toml",
        f'[mcp_servers.s]\ncommand = "sh"\nargs = ["-c", "{marker_script(clone, "s").strip()}", "x", "./big.bin"]\n',
    )

    text = cli(clone.harness, "trust").stdout
    assert "refused:" in text and "big.bin" in text, text
    record = TrustStore(clone.home).get(clone.workspace)
    assert record is not None and "mcp_servers.s" not in record.items, "never trusted in part"
    status = clone.status()
    assert pending_of(status) == {"mcp_servers.s": "refused"}
    assert clone.ran() == set()
    shown = cli(clone.harness, "status").stdout
    assert "mcp_servers.s refused, not run:" in shown, shown


# -- 2. a bundle's whole folder, and what its servers and hooks name outside it -----------------


def claude_bundle(clone: Clone, server_args: list[str] | None = None, hook: str | None = None) -> Path:
    root = clone.workspace / ".kairox" / "plugins" / "cb"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "cb"}))
    if server_args is not None:
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": {"command": "sh", "args": server_args}}}))
    if hook is not None:
        command = {"type": "command", "command": hook}
        (root / "hooks").mkdir()
        (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [command]}]}}))
    return root


#: a server script named with ${CLAUDE_PLUGIN_ROOT}: in folders once skipped, and outside the bundle
BUNDLE_SCRIPTS = {
    "node_modules": ".kairox/plugins/cb/node_modules/.bin/srv.sh",
    "dot-git": ".kairox/plugins/cb/.git/hooks/srv.sh",
    "outside-the-bundle": "tools/srv.sh",
}


@pytest.mark.parametrize("where", list(BUNDLE_SCRIPTS))
def test_a_changed_bundle_server_script_is_changed_since_trusted(clone: Clone, no_leftovers: None, where: str) -> None:
    script = BUNDLE_SCRIPTS[where]
    clone.write(script, marker_script(clone, "v1"))
    rel = os.path.relpath(clone.workspace / script, clone.workspace / ".kairox" / "plugins" / "cb")
    claude_bundle(clone, ["${CLAUDE_PLUGIN_ROOT}/" + rel])
    clone.trust()
    clone.status()
    assert clone.ran() == {"v1"}, "trusted, the bundle's server runs its script"

    clone.write(script, marker_script(clone, "v2"))
    status = clone.status()
    assert "v2" not in clone.ran(), "the bundle's changed script ran without being trusted again"
    assert pending_of(status) == {"bundle:.kairox/plugins/cb": "changed"}


@pytest.mark.parametrize(
    "hook", ['sh "${CLAUDE_PLUGIN_ROOT}/../../../tools/hook.sh"', 'sh "$CLAUDE_PROJECT_DIR/tools/hook.sh"']
)
def test_a_changed_script_a_bundle_hook_runs_is_changed_since_trusted(
    clone: Clone, no_leftovers: None, hook: str
) -> None:
    clone.write("tools/hook.sh", marker_script(clone, "v1"))
    claude_bundle(clone, hook=hook)
    clone.trust()
    cli(clone.harness, *WRITE)
    assert clone.ran() == {"v1"}, "trusted, the bundle's hook runs its script"

    clone.write("tools/hook.sh", marker_script(clone, "v2"))
    result = cli(clone.harness, *WRITE)
    assert "v2" not in clone.ran(), f"the changed hook script ran: {output_of(result)}"
    assert pending_of(clone.status()) == {"bundle:.kairox/plugins/cb": "changed"}


@pytest.mark.parametrize("bound", ["size", "count"])
def test_a_bundle_over_the_bound_is_refused_not_trusted(
    clone: Clone, no_leftovers: None, bound: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kairox_manifests.trust
    from kairox_manifests.trust import MAX_BYTES

    # the count bound, lowered so the test makes 200 files, not 20,000 (the CLI runs in process)
    monkeypatch.setattr(kairox_manifests.trust, "MAX_FILES", 200)
    root = write_bundle(
        clone.workspace / ".kairox" / "plugins" / "big", "big", clone.markers, hook_marker="hook", server_marker="mcp"
    )
    if bound == "size":
        with open(root / "data.bin", "wb") as fh:
            fh.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    else:
        (root / "node_modules").mkdir()
        for i in range(200):
            (root / "node_modules" / f"f{i}").touch()

    text = cli(clone.harness, "trust").stdout
    assert "not trusted: 1 item refused" in text and "bundle big" in text, text
    assert "refused:" in text and "cannot be trusted as it is" in text, text
    record = TrustStore(clone.home).get(clone.workspace)
    assert record is not None and record.items == {}, "never trusted in part"

    result = cli(clone.harness, *WRITE)
    assert result.exit_code == 0, output_of(result)
    assert clone.ran() == set(), "the refused bundle's hook and server ran"
    assert pending_of(clone.status()) == {"bundle:.kairox/plugins/big": "refused"}
    shown = cli(clone.harness, "status").stdout
    assert "bundle:.kairox/plugins/big refused, not run:" in shown, shown
    plugin = json.loads(cli(clone.harness, "plugin", "list", "--json").stdout)["plugins"][0]
    assert plugin["state"] == "untrusted" and "refused" in plugin["reason"], plugin


# -- a trusted server's workspace script, a bundle's symlinked directory ------------------------


SCRIPT_SERVERS = {
    "run-sh": ("run.sh", ["sh", "./run.sh"]),
    "script-flag": ("tools/lib.sh", ["sh", "-c", '. "./${1#--script=}"', "attack", "--script=tools/lib.sh"]),
}


@pytest.mark.parametrize("where", ["kairox.toml", ".mcp.json"])
@pytest.mark.parametrize("server", list(SCRIPT_SERVERS))
def test_editing_a_trusted_servers_script_makes_it_changed_since_trusted(
    clone: Clone, no_leftovers: None, server: str, where: str
) -> None:
    script, command = SCRIPT_SERVERS[server]
    clone.write(script, f"echo v1 >> {clone.markers / 'v1'}\n")
    if where == "kairox.toml":
        clone.write(where, server_toml("s", command))
        key = "mcp_servers.s"
    else:
        clone.write(where, json.dumps({"mcpServers": {"s": {"command": command[0], "args": command[1:]}}}))
        key = ".mcp.json:s"
    clone.trust()
    clone.status()
    assert clone.ran() == {"v1"}, "trusted, the server (and its script) runs"

    clone.write(script, f"echo v2 >> {clone.markers / 'v2'}\n")
    status = clone.status()
    assert "v2" not in clone.ran(), "the edited script ran without being trusted again"
    assert pending_of(status) == {key: "changed"}
    assert servers_of(status)["s"]["state"] == "untrusted"
    assert "changed since trusted" in servers_of(status)["s"]["detail"]


def test_a_bundles_symlinked_directory_is_part_of_what_was_trusted(clone: Clone, no_leftovers: None) -> None:
    clone.write("tools/helper.py", "X = 1\n")
    bundle = write_bundle(
        clone.workspace / ".kairox" / "plugins" / "b", "b", clone.markers, hook_marker="b-hook", server_marker="b-mcp"
    )
    (bundle / "lib").symlink_to(os.path.relpath(clone.workspace / "tools", bundle), target_is_directory=True)
    clone.trust()
    assert cli(clone.harness, *WRITE).exit_code == 1, "trusted, the bundle's hook blocks fs.write"

    clone.write("tools/helper.py", "X = 2  # what the hook imports now\n")
    (clone.markers / "b-hook").unlink()
    result = cli(clone.harness, *WRITE)
    assert result.exit_code == 0, f"the changed bundle's hook still ran: {output_of(result)}"
    assert "b-hook" not in clone.ran()
    assert pending_of(clone.status()) == {"bundle:.kairox/plugins/b": "changed"}
    plugin = json.loads(cli(clone.harness, "plugin", "list", "--json").stdout)["plugins"][0]
    assert plugin["state"] == "untrusted" and "changed since trusted" in plugin["reason"]


def test_a_bundle_link_out_of_the_workspace_is_not_walked_but_counts(tmp_path: Path) -> None:
    """``lib -> /`` in a hostile bundle must not make every command walk the disk: a
    symlinked directory outside the workspace counts by its target, not its tree."""
    from kairox_manifests.trust import bundle_digest

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    bundle = ws / ".kairox" / "plugins" / "b"
    bundle.mkdir(parents=True)
    outside.mkdir()
    (outside / "big.txt").write_text("one")
    (bundle / "plugin.json").write_text("{}")
    (bundle / "lib").symlink_to(outside)
    first = bundle_digest(bundle, within=ws)
    (outside / "big.txt").write_text("two")  # outside the workspace: not part of the fingerprint
    assert bundle_digest(bundle, within=ws) == first
    (bundle / "lib").unlink()
    (bundle / "lib").symlink_to(tmp_path)  # where the link points is
    assert bundle_digest(bundle, within=ws) != first
    (bundle / "lib").unlink()
    (bundle / "lib").symlink_to("/")
    assert bundle_digest(bundle, within=ws)  # finishes: / is not walked


def test_a_nested_transport_table_is_shown_and_covered_as_the_entry_itself(tmp_path: Path) -> None:
    """Philont's ``mcp.json`` nests ``command``, ``args``, ``url`` and ``env`` in a ``transport``
    table: the prompt shows what runs from there, and the fingerprint covers the script it
    runs and the file its ``BASH_ENV`` names, as at the top of an entry."""
    from kairox.ext import Declared

    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    (ws / "tools" / "x.sh").write_text("echo one\n")
    (ws / "env.sh").write_text("echo env\n")
    transport = {"command": "sh", "args": ["./tools/x.sh"], "env": {"BASH_ENV": "./env.sh"}}
    raw = {"transport": {**transport, "url": "https://example.test/mcp"}}

    def declared() -> Declared:
        return Declared.entry("mcp.json:x", "mcp_server", "x", "mcp.json", raw, workspace=ws, env={"PATH": "/bin"})

    item = declared()
    assert (item.commands, item.urls, item.env) == (
        ("sh ./tools/x.sh",),
        ("https://example.test/mcp",),
        ("BASH_ENV=./env.sh",),
    )
    assert set(item.files) == {"tools/x.sh", "env.sh"} and not item.refused
    for name in ("tools/x.sh", "env.sh"):
        before = declared().digest
        (ws / name).write_text("echo changed\n")
        assert declared().digest != before, f"a change to {name} needs trust again"


@pytest.mark.parametrize("cwd", ["{outside}", "~/.ssh", "../outside"])
def test_a_server_that_runs_outside_the_workspace_is_refused(clone: Clone, no_leftovers: None, cwd: str) -> None:
    """``command = "./x.sh"`` with ``cwd`` out of the workspace: the prompt showed ``./x.sh``
    (a workspace script, it seemed), trusting it ran a file no fingerprint covered, and
    changing that file did not ask again. Such an item is refused, naming its cwd."""
    outside = clone.workspace.parent / "outside"
    outside.mkdir()
    ssh = Path(clone.harness.env["HOME"]) / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    for folder in (outside, ssh):
        (folder / "x.sh").write_text("#!/bin/sh\n" + marker_script(clone, "outside"))
        (folder / "x.sh").chmod(0o755)
    clone.write(
        "kairox.toml", f'[mcp_servers.s]\ncommand = "./x.sh"\ncwd = {json.dumps(cwd.format(outside=outside))}\n'
    )
    text = cli(clone.harness, "trust").stdout
    assert "runs in" in text and "refused:" in text and "outside the workspace" in text, text
    assert pending_of(clone.status()) == {"mcp_servers.s": "refused"}
    assert clone.ran() == set()


def test_a_server_that_runs_in_a_workspace_folder_says_where(clone: Clone, no_leftovers: None) -> None:
    clone.write("tools/x.sh", "#!/bin/sh\n" + marker_script(clone, "in-tools"))
    (clone.workspace / "tools" / "x.sh").chmod(0o755)
    clone.write("kairox.toml", '[mcp_servers.s]\ncommand = "./x.sh"\ncwd = "tools"\n')
    text = cli(clone.harness, "trust").stdout
    assert "runs in tools" in text and "refused:" not in text, text
    clone.status()
    assert clone.ran() == {"in-tools"}
