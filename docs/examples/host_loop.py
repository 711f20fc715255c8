"""An embedding host's agent loop, with a scripted model instead of a real one (no network).

Run it on a workspace: ``uv run python docs/examples/host_loop.py path/to/workspace``. It
hands the session's tools to the "model" in the Anthropic Messages shape, runs each tool call
the model asks for through the session (policy, hooks, approver) and gives the model the
results as tool-result messages. A denial or a failure is a result the model reads, not an
exception: ``errors="result"``. Here no approver is given, so what the policy would ask
about (``shell.exec``) is denied.
"""

import json
import sys

import anyio

import kairox
from kairox.hosts import result_message, tool_name, tools_for

#: what the scripted model asks for, one tool_use block per turn (names as the model sees them)
SCRIPT = [
    {"type": "tool_use", "id": "call-1", "name": "fs_list", "input": {"path": "."}},
    {"type": "tool_use", "id": "call-2", "name": "fs_read", "input": {"path": "notes.txt"}},
    {"type": "tool_use", "id": "call-3", "name": "fs_write", "input": {"path": "out.txt", "content": "hi"}},
    {"type": "tool_use", "id": "call-4", "name": "shell_exec", "input": {"command": "touch ran.txt"}},
    {"type": "tool_use", "id": "call-5", "name": "weather_now", "input": {"city": "Oslo"}},
]


async def main(workspace: str) -> None:
    async with kairox.Runtime.open(workspace) as rt, rt.session() as session:
        tools = tools_for(session, "anthropic")
        print(f"offered {len(tools)} tools: {', '.join(sorted(t['name'] for t in tools))}")
        messages: list[dict] = [{"role": "user", "content": "Look around this workspace."}]
        for block in SCRIPT:  # a real host: reply = client.messages.create(tools=tools, messages=messages, ...)
            messages.append({"role": "assistant", "content": [block]})
            result = await session.call_tool(tool_name(block["name"], "anthropic"), block["input"], errors="result")
            message = result_message(result, "anthropic", block["id"])
            messages.append(message)
            answer = message["content"][0]
            status = "error" if answer.get("is_error") else "ok"
            print(f"{block['name']} {json.dumps(block['input'])} -> {status}: {result.text.splitlines()[0]}")
        print(f"{len(messages)} messages in the conversation")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else ".")
