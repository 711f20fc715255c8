"""``kairox config show``'s rows (``kairox_cli._config_show``): each value with the file it came
from, secrets masked, a narrowing list as it applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from kairox import ConfigSection
from kairox._config import REDACTED
from kairox.ext import Registrar, WorkspaceTrust, load_config
from kairox_cli._config_show import shown_config


@attrs.define
class Guarded:
    program: str = "/bin/sh"
    width: int = 80
    deny: list[str] = attrs.field(factory=lambda: ["builtin"])


def sections(*extra: ConfigSection) -> Registrar[ConfigSection]:
    reg: Registrar[ConfigSection] = Registrar("config section")
    reg.owner = "kairox-demo"
    for sec in extra:
        reg.add(sec)
    return reg


def _layered(tmp_path: Path, user: str, workspace: str, **options: Any) -> Any:
    """``[guarded]`` from the user's file ``user`` and an untrusted workspace's ``workspace``."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    (home / "kairox.toml").write_text(user, encoding="utf-8")
    (ws / "kairox.toml").write_text(workspace, encoding="utf-8")
    config = load_config(
        workspace=ws,
        sections=sections(ConfigSection("guarded", Guarded, **options)),
        env={},
        home=home,
        trust=WorkspaceTrust(ws, None),
    )
    return config, home / "kairox.toml", ws / "kairox.toml"


def test_show_redacts_secrets(tmp_path: Path) -> None:
    reg = sections(ConfigSection("remote", dict[str, Any], entries=True))
    path = tmp_path / "kairox.toml"
    path.write_text(
        "[remote.search]\n"
        'url = "https://example.com"\n'
        'headers = { Authorization = "Bearer sk-123" }\n'
        'env = { TOKEN = "abc" }\n'
        'api_key = "k-999"\n'
        'api_key_env = "MY_KEY"\n'
        'args = ["--verbose"]\n'
    )
    config = load_config(workspace=tmp_path, sections=reg, env={}, files=[path])
    shown = shown_config(config)["remote"]["search"]
    assert shown["source"] == str(path)
    value = shown["value"]
    assert value["headers"] == {"Authorization": REDACTED}
    assert value["env"] == {"TOKEN": REDACTED}
    assert value["api_key"] == REDACTED
    assert value["api_key_env"] == "MY_KEY"  # the name of a variable is no secret
    assert value["url"] == "https://example.com" and value["args"] == ["--verbose"]
    assert "sk-123" not in json.dumps(shown_config(config)) and "k-999" not in json.dumps(shown_config(config))
    assert shown_config(config, redacted=False)["remote"]["search"]["value"]["api_key"] == "k-999"


def test_config_show_gives_a_narrowing_list_as_it_applies(tmp_path: Path) -> None:
    # a workspace's `deny = []` narrows nothing: `config show` gives the user's list, which
    # still applies, not the workspace's empty one as though it had wiped it
    config, mine, theirs = _layered(tmp_path, '[guarded]\ndeny = ["u"]\n', "[guarded]\ndeny = []\n", narrows=("deny",))
    row = shown_config(config)["guarded"]["deny"]
    assert row["value"] == ["u"] and row["source"] == f"{mine} + {theirs}"
    config, mine, theirs = _layered(
        tmp_path, '[guarded]\ndeny = ["u"]\n', '[guarded]\ndeny = ["w"]\n', narrows=("deny",)
    )
    assert shown_config(config)["guarded"]["deny"]["value"] == ["u", "w"]
