"""A server entry's ``env`` decides what runs (``BASH_ENV``, ``LD_PRELOAD``, ``NODE_OPTIONS``),
but the trust prompt shows only the command line, and the files those values name are
not in the fingerprint."""

from __future__ import annotations

import json

from review38_lab import SECRET, Lab

ENTRY = (
    "[mcp_servers.s]\n"
    'command = "bash"\n'
    'args = ["-c", "exit 3"]\n'
    'env = { BASH_ENV = "./env.sh", LD_PRELOAD = "./x.so", NODE_OPTIONS = "--require ./h.js" }\n'
)


def test_trust_shows_the_env_that_changes_what_runs(lab: Lab) -> None:
    """[medium] ``kairox trust`` prints ``runs: bash -c 'exit 3'`` and nothing of the
    ``env`` table: what bash actually runs first (``./env.sh``) is named nowhere."""
    lab.write("kairox.toml", ENTRY)

    shown = lab.run("trust", "--json")
    item = json.loads(shown.stdout)["trusted"][0]
    text = json.dumps(item)

    assert "env.sh" in text and "x.so" in text and "h.js" in text, text


def test_a_file_the_env_runs_is_in_the_fingerprint(lab: Lab) -> None:
    """[medium] After ``kairox trust``, changing ``./env.sh`` (run by bash through
    ``BASH_ENV``) runs the new code at the next ``kairox status``, without asking again."""
    lab.write("env.sh", f"echo v1 >> {lab.markers}/env-ran\n")
    lab.write("kairox.toml", ENTRY)
    assert lab.run("trust").returncode == 0
    lab.run("status", "--json")
    assert (lab.markers / "env-ran").read_text() == "v1\n"  # trusted: it ran

    lab.write("env.sh", f"echo CHANGED >> {lab.markers}/env-ran\n")
    status = lab.run("status", "--json")

    assert "CHANGED" not in (lab.markers / "env-ran").read_text(), status.stdout[-2000:]


def test_a_path_in_env_is_shown_and_its_program_fingerprinted(lab: Lab) -> None:
    """[medium] A ``.mcp.json`` server ``node server.js`` with ``env.PATH = "./bin:..."``:
    ``kairox trust`` shows ``runs: node server.js``, kairox runs the clone's ``./bin/node``,
    and a changed ``./bin/node`` runs after trust without asking again."""
    node = lab.write("bin/node", f"#!/bin/sh\necho v1 >> {lab.markers}/node-ran\n")
    node.chmod(0o755)
    lab.write("server.js", "// the server the user reads before trusting\n")
    entry = {"command": "node", "args": ["server.js"], "env": {"PATH": "./bin:/usr/bin:/bin"}}
    lab.write(".mcp.json", json.dumps({"mcpServers": {"s": entry}}))
    shown = lab.run("trust")
    lab.run("status", "--json")
    ran_after_trust = (lab.markers / "node-ran").read_text()
    node.write_text(f"#!/bin/sh\necho CHANGED >> {lab.markers}/node-ran\n")
    lab.run("status", "--json")

    assert "bin" in shown.stdout or ran_after_trust == "", shown.stdout  # shown, or not run at all
    assert "CHANGED" not in (lab.markers / "node-ran").read_text()


def test_an_item_that_gets_the_whole_environment_says_so(lab: Lab) -> None:
    """[medium] A trusted workspace's bundle hook and language server get kairox's whole
    environment (``SECRET_TOKEN`` included; a stdio MCP server gets the base set), while
    ``kairox trust`` names no variable for them (docs/trust.md: "every environment variable
    the item can read ... ``inherit_env = true`` says it reads the whole environment")."""
    markers = lab.markers
    bundle = lab.ws / ".kairox/plugins/wb"
    (bundle / ".claude-plugin").mkdir(parents=True)
    (bundle / ".claude-plugin/plugin.json").write_text(json.dumps({"name": "wb"}))
    (bundle / "hooks").mkdir()
    hook = {"matcher": ".*", "hooks": [{"type": "command", "command": f"env > {markers}/hook-env"}]}
    (bundle / "hooks/hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    lab.write(
        "kairox.toml",
        "[lsp_servers.l]\n"
        f'command = "sh"\nargs = ["-c", "env > {markers}/lsp-env; sleep 5"]\n'
        'languages = ["python"]\nfile_patterns = ["*.py"]\nstartup_timeout = 2\n',
    )
    lab.write("a.py", "x = 1\n")
    items = {i["kind"]: i for i in json.loads(lab.run("trust", "--json").stdout)["trusted"]}
    lab.run("tools", "call", "fs.read", "--args", json.dumps({"path": "a.py"}))
    lab.run("status")

    for kind, marker in (("bundle", "hook-env"), ("lsp_servers", "lsp-env")):
        item = next(v for k, v in items.items() if k.startswith(kind))
        got_secret = SECRET in (markers / marker).read_text()
        said = "SECRET_TOKEN" in item["env_names"] or "environment" in " ".join(item["notes"])
        assert said or not got_secret, (kind, item)
