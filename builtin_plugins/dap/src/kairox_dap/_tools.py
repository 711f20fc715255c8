"""The ``dap.*`` tools: their schemas, policy facts and argument checking.

``dap.launch`` runs a program and ``dap.evaluate`` runs code inside it, so both
are ``execute`` (the default policy asks). Breakpoints, stepping and
disconnecting change only the debug session (``write``, local, no path
target); reading the stack, variables and output is ``read``.
"""

from __future__ import annotations

import logging
from typing import Any

from kairox import Capability
from kairox_peer import PeerErrors, PeerTool, ToolInputError, object_schema

from ._args import bool_arg, int_arg, number_arg, str_arg
from ._client import ConnectionLost, DapError, RequestTimeout
from ._lifecycle import AdapterUnavailable
from ._session import SessionEnded

__all__ = ["DAP_ERRORS", "TOOLS", "ToolInputError", "bool_arg", "build_tools", "int_arg", "number_arg", "str_arg"]

logger = logging.getLogger(__name__)


_WAIT = {"type": "number", "exclusiveMinimum": 0, "description": "Seconds to wait for the program to stop or end."}
_THREAD = {"type": "integer", "description": "Thread id (default: the thread that stopped)."}
_SERVER = {"type": "string", "description": "Debug adapter to use (default: the one configured for the program)."}


_STEP = object_schema({"thread": _THREAD, "wait": {**_WAIT, "default": 30}})

#: tool -> (description, schema, capability)
TOOLS: dict[str, tuple[str, dict[str, Any], Capability]] = {
    "dap.launch": (
        "Start a program under the debugger. Breakpoints set before are applied first; returns where it "
        "stopped (or that it ended) and its output so far.",
        object_schema(
            {
                "program": {"type": "string", "description": "The program (script) to debug."},
                "args": {"type": "array", "items": {"type": "string"}, "default": []},
                "cwd": {"type": "string", "description": "Working directory (default: the workspace)."},
                "stop_on_entry": {"type": "boolean", "default": False},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "server": _SERVER,
                "wait": {**_WAIT, "default": 30},
            },
            ["program"],
        ),
        Capability.EXECUTE,
    ),
    "dap.set_breakpoints": (
        "Set the breakpoints of one file (replacing its previous ones); works before and during a session.",
        object_schema(
            {
                "file": {"type": "string"},
                "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                "conditions": {
                    "type": "array",
                    "items": {"type": ["string", "null"]},
                    "description": "Optional condition per line (same order as `lines`).",
                },
            },
            ["file", "lines"],
        ),
        Capability.WRITE,
    ),
    "dap.continue": (
        "Resume the stopped program until the next breakpoint or its end (while it runs: wait for that again).",
        _STEP,
        Capability.WRITE,
    ),
    "dap.step_over": ("Run to the next line in the current function.", _STEP, Capability.WRITE),
    "dap.step_in": ("Step into the call on the current line.", _STEP, Capability.WRITE),
    "dap.step_out": ("Run until the current function returns.", _STEP, Capability.WRITE),
    "dap.stack_trace": (
        "The call stack of the stopped program: #index function  path:line:col: source.",
        object_schema({"thread": _THREAD, "levels": {"type": "integer", "minimum": 1, "default": 20}}),
        Capability.READ,
    ),
    "dap.variables": (
        "Variables of a stack frame (0 = innermost), by scope (default: the first, usually Locals; `all` for "
        "every cheap scope), expanded to `depth` levels.",
        object_schema(
            {
                "frame": {"type": "integer", "minimum": 0, "default": 0},
                "scope": {"type": "string"},
                "depth": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
            }
        ),
        Capability.READ,
    ),
    "dap.evaluate": (
        "Evaluate an expression in a stack frame of the stopped program (it can run code in the program).",
        object_schema(
            {
                "expression": {"type": "string"},
                "frame": {"type": "integer", "minimum": 0, "default": 0},
                "context": {"type": "string", "enum": ["repl", "watch", "hover"], "default": "repl"},
            },
            ["expression"],
        ),
        Capability.EXECUTE,
    ),
    "dap.output": (
        "The program's output since the last dap.output (or all of it that is kept).",
        object_schema({"all": {"type": "boolean", "default": False}}),
        Capability.READ,
    ),
    "dap.disconnect": (
        "End the debug session: the program is terminated and the adapter stopped (nothing is left running).",
        object_schema({}),
        Capability.WRITE,
    ),
}


#: what the ``dap.*`` tools report as error results (see :func:`kairox_peer.peer_error_text`)
DAP_ERRORS: PeerErrors = [
    ((SessionEnded, AdapterUnavailable, IndexError, ValueError), "{}"),
    (DapError, "the debug adapter refused: {}"),
    (ConnectionLost, "the debug adapter went away: {}"),
    ((RequestTimeout, TimeoutError), "timed out: {}"),
]


def build_tools(operations: object, provider: str) -> list[PeerTool]:
    """The ``dap.*`` tools over ``operations`` (the provider: a method per tool)."""
    tools = []
    for name, summary in TOOLS.items():
        method = "continue_" if name == "dap.continue" else name.split(".", 1)[1]  # `continue` is a keyword
        read_only = summary[2] is Capability.READ
        tools.append(
            PeerTool.local(name, summary, provider, getattr(operations, method), DAP_ERRORS, readOnlyHint=read_only)
        )
    return tools
