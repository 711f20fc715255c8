"""Property: whatever a server writes on stdout, every JSON-RPC message arrives once and in
order, and every other non-blank line becomes exactly one InvalidServerMessage.

The "server" is ``cat FILE``: the bytes go through a real pipe (the OS chooses the chunks)
and the real transport.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from stdio_helpers import context

from kairox_mcp.config import McpServerConfig
from kairox_stdio import InvalidServerMessage, StdioTransport

#: ``cat`` exits as soon as it has written the file; the transport then reads what is left for
#: ``exit_drain`` (0.25 s by default), which a loaded machine (parallel test workers) can need
#: more of for 25 lines: this property is about framing, not about that bound
PATIENT = StdioTransport(shutdown_grace=0.5, term_grace=0.5, kill_wait=2.0, exit_drain=10.0)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
messages = st.builds(
    lambda method, params: json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode(),
    st.text(min_size=1, max_size=20),
    st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
garbage = st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from(
    [b"not json", b"{}", b"[]", b'{"jsonrpc":"2.0"}', b"\r", b"   ", b"\xff\xfe"]
)


def is_message(line: bytes) -> bool:
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        return False
    return True


@pytest.mark.anyio
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(messages, garbage), max_size=25), crlf=st.booleans())
async def test_framing_through_a_real_pipe(tmp_path: Path, lines: list[bytes], crlf: bool) -> None:
    out = tmp_path / "stdout.bin"
    out.write_bytes(b"".join(line + (b"\r\n" if crlf else b"\n") for line in lines))
    got: list[Any] = []
    with anyio.fail_after(20):
        async with PATIENT.connect(McpServerConfig(command="cat", args=[str(out)]), context(tmp_path)) as (read, _w):
            async for item in read:
                got.append(item)
    expected = [line for line in lines if line.strip()]
    assert len(got) == len(expected)
    for line, item in zip(expected, got, strict=True):
        if is_message(line):
            assert isinstance(item, SessionMessage)
            assert item.message.method == json.loads(line)["method"]  # type: ignore[union-attr]
        else:
            assert isinstance(item, InvalidServerMessage)
            # one trailing \r is part of the line ending (CRLF), more are the line's own
            own = line if crlf or not line.endswith(b"\r") else line[:-1]
            assert item.line == own[:200]
