"""The transport plugins register an object that is cheap to build and is what it says.

What ``kairox_register_transports`` adds is built at every open: building it imports
none of the transport's machinery (the stdio process handling, the HTTP clients,
kairox-mcp's transport contract, ``mcp``), which its module of old still holds and
imports with the first ``connect``. That module re-exports the class, so
``isinstance`` against ``kairox_stdio.stdio.StdioTransport`` (or the package's name)
answers for the registered object. Checked in fresh interpreters (this one has
imported everything already).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import importlib, json, sys
from kairox.ext import Registrar

package, machinery, cls, name = sys.argv[1:]
registrar = Registrar("transport")
importlib.import_module(package + ".hooks").kairox_register_transports(registrar)
transport = registrar[name]
heavy = [m for m in (machinery, "kairox_mcp.transport", "mcp", "httpx2") if m in sys.modules]
exported = getattr(importlib.import_module(package), cls)
kept = getattr(importlib.import_module(machinery), cls)
print(json.dumps({
    "heavy": heavy,
    "isinstance": isinstance(transport, kept) and isinstance(transport, exported),
    "same": kept is exported is type(transport),
}))
"""


@pytest.mark.parametrize(
    ("package", "machinery", "cls", "name"),
    [
        ("kairox_stdio", "kairox_stdio.stdio", "StdioTransport", "stdio"),
        ("kairox_sse", "kairox_sse.sse", "SseTransport", "sse"),
        (
            "kairox_streamable_http",
            "kairox_streamable_http.streamable_http",
            "StreamableHttpTransport",
            "streamable_http",
        ),
    ],
)
def test_the_registered_transport_is_built_without_its_machinery(
    package: str, machinery: str, cls: str, name: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, package, machinery, cls, name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"heavy": [], "isinstance": True, "same": True}
