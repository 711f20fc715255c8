"""``[dap_servers.NAME]``: structuring, errors with paths, routing by program (and the fields it shares
with ``[lsp_servers.NAME]``, for both)."""

from __future__ import annotations

from pathlib import Path, PurePath
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shared_helpers import loaded_after

import kairox_dap.hooks
import kairox_lsp.hooks
from kairox import Runtime
from kairox_dap._config import DapServerConfig, handles, patterns_for
from kairox_dap._provider import DapToolProvider

from .helpers import config_runtime, open_runtime


def _runtime(tmp_path: Path, document: dict[str, Any]) -> Runtime:
    return config_runtime(tmp_path, kairox_dap.hooks, document)


@pytest.mark.parametrize(("hooks", "section"), [(kairox_lsp.hooks, "lsp_servers"), (kairox_dap.hooks, "dap_servers")])
def test_peer_server_entries_are_structured_and_bad_ones_dropped(
    tmp_path: Path, hooks: ModuleType, section: str
) -> None:
    """The fields LSP and DAP entries share (kairox_peer.PeerServerConfig): a bad one drops its entry, named by path."""
    good = {"command": "python", "args": ["-m", "debugpy.adapter"], "languages": ["python"]}
    entries = {
        "good": good,
        "badarg": {"command": "c", "args": ["--port", 0]},
        "typo": {"command": "x", "language": ["c"]},
    }
    rt = config_runtime(tmp_path, hooks, {section: entries})
    assert list(rt.config.section(section)) == ["good"]
    assert {e.path for e in rt.config.errors} == {f"{section}.badarg.args[1]", f"{section}.typo.language"}
    assert all(e.file == "ws/kairox.toml" for e in rt.config.errors)


def test_launch_arguments_are_kept(tmp_path: Path) -> None:
    entry = {"command": "python", "adapter_id": "python", "launch": {"justMyCode": False}}
    servers = _runtime(tmp_path, {"dap_servers": {"debugpy": entry}}).config.section("dap_servers")
    assert servers["debugpy"].launch == {"justMyCode": False} and servers["debugpy"].adapter_id == "python"


def test_tools_only_while_an_adapter_is_configured(tmp_path: Path) -> None:
    import anyio

    async def tools(document: dict[str, Any]) -> list[str]:
        async with open_runtime(tmp_path, kairox_dap.hooks, document) as rt:
            assert isinstance(rt.providers.get("dap"), DapToolProvider)
            return [s.id for s in rt.tools.specs() if s.id.startswith("dap.")]

    assert anyio.run(tools, {}) == []
    configured = anyio.run(tools, {"dap_servers": {"py": {"command": "python", "languages": ["python"]}}})
    assert configured == sorted(
        [
            "dap.continue",
            "dap.disconnect",
            "dap.evaluate",
            "dap.launch",
            "dap.output",
            "dap.set_breakpoints",
            "dap.stack_trace",
            "dap.step_in",
            "dap.step_out",
            "dap.step_over",
            "dap.variables",
        ]
    )


def test_routing_by_language_and_patterns() -> None:
    py = DapServerConfig(command="x", languages=["python"])
    assert handles(py, PurePath("tools/run.py"))
    assert not handles(py, PurePath("main.rs"))
    lldb = DapServerConfig(command="y", languages=["rust", "c"], file_patterns=["target/debug/*"])
    assert patterns_for(lldb) == ["target/debug/*"]
    assert handles(lldb, PurePath("target/debug/app"))


@given(st.dictionaries(st.sampled_from(["command", "args", "languages", "launch", "env", "x"]), st.text(max_size=5)))
def test_any_entry_either_structures_or_names_its_problem(entry: dict[str, Any]) -> None:
    rt = _runtime(Path("/nonexistent-kairox-ws"), {"dap_servers": {"a": entry}})
    servers = rt.config.section("dap_servers")
    if "a" not in servers:
        assert rt.config.errors and all(e.path.startswith("dap_servers.a") for e in rt.config.errors)


def test_importing_hooks_is_cheap() -> None:
    loaded = loaded_after("import kairox_dap.hooks", "kairox_dap", "kairox_lsp", "kairox_peer")
    assert loaded == ["kairox_dap", "kairox_dap.hooks"]


def test_the_debug_adapters_run_without_language_server_code() -> None:
    """kairox-dap builds on kairox-peer alone: loading every module of it loads no kairox_lsp."""
    code = (
        "import pkgutil, importlib, kairox_dap\n"
        "for m in pkgutil.iter_modules(kairox_dap.__path__): importlib.import_module('kairox_dap.' + m.name)"
    )
    loaded = loaded_after(code, "kairox_dap", "kairox_lsp")
    modules = [m for m in loaded if m.startswith("kairox_dap.")]
    assert len(modules) >= 9 and loaded == ["kairox_dap", *modules]
