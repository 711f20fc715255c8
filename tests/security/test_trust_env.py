"""A server entry's ``env`` decides what runs: the trust prompt shows it, and the fingerprint
covers the files it names and the program its ``PATH`` finds.

Written as the attack: ``BASH_ENV=./env.sh`` (bash sources it before its command),
``LD_PRELOAD=./x.so``, ``NODE_OPTIONS=--require ./h.js``, and ``env.PATH = "./bin:..."`` that
makes ``node server.js`` run the clone's ``./bin/node``. Each would-be program writes a marker
file (outside the workspace); once trusted, a changed file must not run until trusted again.
Items whose process gets the user's whole environment (a bundle's hook scripts and language
servers, a workspace language server) say so among the variables they read.
"""

from __future__ import annotations

import json

from security_helpers import SECRET, Clone, cli, cli_env, output_of, run_kairox

from kairox.ext import WHOLE_ENVIRONMENT, WHOLE_ENVIRONMENT_NOTE

ENTRY = (
    "[mcp_servers.s]\n"
    'command = "bash"\n'
    'args = ["-c", "exit 3"]\n'
    'env = { BASH_ENV = "./env.sh", LD_PRELOAD = "./x.so", NODE_OPTIONS = "--require ./h.js", '
    'API_TOKEN = "tok3n-value-81c2", TOKEN_HELPER = "./helper.sh" }\n'
)


def test_trust_shows_every_env_setting(clone: Clone) -> None:
    """``kairox trust`` printed ``runs: bash -c 'exit 3'`` and nothing of ``env``: what bash
    runs first (``./env.sh``) was named nowhere. Every setting is shown ``NAME=value``; only a
    value under a secret-looking name is masked, and not one that reads as a path."""
    clone.write("kairox.toml", ENTRY)

    item = json.loads(cli(clone.harness, "trust", "--json").stdout)["trusted"][0]
    text = cli(clone.harness, "trust").stdout
    status = clone.status()

    settings = [
        "BASH_ENV=./env.sh",
        "LD_PRELOAD=./x.so",
        "NODE_OPTIONS=--require ./h.js",
        "API_TOKEN=<redacted:env.API_TOKEN>",
        "TOKEN_HELPER=./helper.sh",
    ]
    assert item["env"] == settings, item
    for setting in settings:
        assert f"env:      {setting}" in text, text
    assert "tok3n-value-81c2" not in text + json.dumps(item) + json.dumps(status)


def test_a_file_the_env_runs_is_in_the_fingerprint(clone: Clone) -> None:
    """After ``kairox trust``, changing ``./env.sh`` (run by bash through ``BASH_ENV``) ran the
    new code at the next ``kairox status``, without asking again."""
    clone.write("env.sh", f"echo v1 >> {clone.markers}/env-ran\n")
    clone.write("kairox.toml", ENTRY)
    clone.trust()
    clone.status()
    assert (clone.markers / "env-ran").read_text() == "v1\n"  # trusted: it ran

    clone.write("env.sh", f"echo CHANGED >> {clone.markers}/env-ran\n")
    status = clone.status()

    assert "CHANGED" not in (clone.markers / "env-ran").read_text(), json.dumps(status)[-2000:]
    assert {p["key"]: p["state"] for p in status["trust"]["pending"]} == {"mcp_servers.s": "changed"}


def test_a_program_its_own_path_finds_is_shown_and_fingerprinted(clone: Clone) -> None:
    """A ``.mcp.json`` server ``node server.js`` with ``env.PATH = "./bin:..."``: kairox runs
    the clone's ``./bin/node``. The prompt says so, and a changed ``./bin/node`` runs nothing
    until trusted again."""
    node = clone.write("bin/node", f"#!/bin/sh\necho v1 >> {clone.markers}/node-ran\n")
    node.chmod(0o755)
    clone.write("server.js", "// the server the user reads before trusting\n")
    entry = {"command": "node", "args": ["server.js"], "env": {"PATH": "./bin:/usr/bin:/bin"}}
    clone.write(".mcp.json", json.dumps({"mcpServers": {"s": entry}}))
    env = cli_env(clone.home)

    shown = run_kairox(clone.workspace, env, "trust")
    assert shown.returncode == 0, output_of(shown)
    assert "env:      PATH=./bin:/usr/bin:/bin" in shown.stdout, shown.stdout
    assert "note:     node runs bin/node of the workspace, found on the PATH its process gets" in shown.stdout
    run_kairox(clone.workspace, env, "status", "--json")
    assert (clone.markers / "node-ran").read_text() == "v1\n"  # trusted: the program shown ran

    node.write_text(f"#!/bin/sh\necho CHANGED >> {clone.markers}/node-ran\n")
    status = run_kairox(clone.workspace, env, "status", "--json")

    assert "CHANGED" not in (clone.markers / "node-ran").read_text(), status.stdout[-2000:]


def test_an_item_that_gets_the_whole_environment_says_so(clone: Clone) -> None:
    """A trusted workspace's bundle hook and language server get kairox's whole environment
    (``SECRET_TOKEN`` included; a stdio MCP server gets the base set), and ``kairox trust``
    named no variable for them (docs/trust.md: an item that reads the whole environment says so)."""
    markers = clone.markers
    bundle = clone.workspace / ".kairox" / "plugins" / "wb"
    (bundle / ".claude-plugin").mkdir(parents=True)
    (bundle / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "wb"}))
    (bundle / "hooks").mkdir()
    hook = {"matcher": ".*", "hooks": [{"type": "command", "command": f"env > {markers}/hook-env"}]}
    (bundle / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    clone.write(
        "kairox.toml",
        "[lsp_servers.l]\n"
        f'command = "sh"\nargs = ["-c", "env > {markers}/lsp-env; sleep 5"]\n'
        'languages = ["python"]\nfile_patterns = ["*.py"]\nstartup_timeout = 2\n',
    )
    clone.write("a.py", "x = 1\n")
    items = {i["kind"]: i for i in json.loads(cli(clone.harness, "trust", "--json").stdout)["trusted"]}
    text = cli(clone.harness, "trust").stdout
    cli(clone.harness, "tools", "call", "fs.read", "--args", json.dumps({"path": "a.py"}))
    clone.status()

    for kind, marker in (("bundle", "hook-env"), ("lsp_servers", "lsp-env")):
        assert SECRET in (markers / marker).read_text(), f"{kind}: the attack did not reach the secret"
        assert any(name.startswith(WHOLE_ENVIRONMENT) for name in items[kind]["env_names"]), items[kind]
        assert any(WHOLE_ENVIRONMENT_NOTE in note for note in items[kind]["notes"]), items[kind]
    assert f"reads:    {WHOLE_ENVIRONMENT}: hook scripts" in text, text
    assert f"note:     its hook scripts: each {WHOLE_ENVIRONMENT_NOTE}" in text, text
