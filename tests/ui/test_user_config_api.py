"""The dashboard's form for a plugin's ``userConfig`` (``/api/plugins/NAME/config``), against a
real ``kairox ui`` process: a sensitive value goes to the keychain and never comes back to the
page; without a keychain it is refused, naming the environment variable to use."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ui_helpers import UiSetup

BUNDLE = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "claude" / "issue-tracker"
SECRET = "tok-77d2-DASHBOARD-MARKER"
URL = "/api/plugins/issue-tracker/config"


def setup(ui: UiSetup, backend: str) -> Path:
    shutil.copytree(BUNDLE, ui.home / "plugins" / "issue-tracker")
    here = str(Path(__file__).resolve().parent)
    ui.env["PYTHONPATH"] = os.pathsep.join(p for p in (here, ui.env.get("PYTHONPATH", "")) if p)
    ui.env["PYTHON_KEYRING_BACKEND"] = backend
    keychain = ui.workspace.parent / "keychain.json"
    ui.env["TEST_KEYRING_FILE"] = str(keychain)
    return keychain


def options(answer: str) -> dict[str, dict[str, object]]:
    return {o["key"]: o for o in json.loads(answer)["options"]}


def test_a_sensitive_value_goes_to_the_keychain_and_never_comes_back(ui: UiSetup) -> None:
    keychain = setup(ui, "file_keyring.FileKeyring")
    server = ui.start()
    assert json.loads(server.request("/api/plugins")[1])["bundles"][0]["user_config"] == [
        "api_endpoint",
        "api_token",
        "max_results",
        "verbose",
    ]
    status, answer = server.request(URL, method="POST", body={"values": {"api_token": SECRET, "max_results": 40}})
    assert status == 200, answer
    token = options(answer)["api_token"]
    assert (token["set"], token["source"], token["value"], token["sensitive"]) == (True, "keychain", None, True)
    assert options(answer)["max_results"]["value"] == 40
    assert SECRET in keychain.read_text()
    answers = [answer, server.request(URL)[1], server.request("/api/plugins")[1], server.request("/api/events")[1]]
    status, bad = server.request(URL, method="POST", body={"values": {"max_results": "lots"}})
    assert status == 400 and "max_results: expected a number" in bad
    for text in [*answers, bad, server.stderr()]:
        assert SECRET not in text
    for where in (ui.home, ui.workspace):
        for path in where.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path


def test_without_a_keychain_the_form_names_the_environment_variable(ui: UiSetup) -> None:
    setup(ui, "keyring.backends.fail.Keyring")
    server = ui.start()
    status, answer = server.request(URL, method="POST", body={"values": {"api_token": SECRET}})
    assert status == 400
    assert "set the environment variable KAIROX_PLUGIN_ISSUE_TRACKER_API_TOKEN instead" in answer
    assert SECRET not in answer + server.stderr()
    assert options(server.request(URL)[1])["api_token"]["set"] is False
