"""A misbehaving language server for lifecycle tests (real servers cover the happy paths).

Modes (argv[1]):
  hang-on-exit  answers initialize, ignores shutdown/exit, stdin EOF and SIGTERM (like
                jedi-language-server stuck on exit)
  silent        never answers initialize
  crash-after-init  answers initialize, then exits with code 3 on the first request
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any, BinaryIO


def read(stream: BinaryIO) -> dict[str, Any] | None:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        ch = stream.read(1)
        if not ch:
            return None
        header += ch
    length = int(header.split(b":")[1].split(b"\r\n")[0])
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def write(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main() -> None:
    mode = sys.argv[1]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write(f"fake server in mode {mode}\n")
    sys.stderr.flush()
    while True:
        message = read(sys.stdin.buffer)
        if message is None:
            if mode == "hang-on-exit":
                while True:
                    time.sleep(1)
            return
        method = message.get("method")
        if method == "initialize" and mode != "silent":
            write({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"hoverProvider": True}}})
        elif "id" in message and method not in ("initialize", "shutdown") and mode == "crash-after-init":
            sys.stderr.write("crashing on purpose\n")
            sys.stderr.flush()
            sys.exit(3)


if __name__ == "__main__":
    main()
