"""Pre-installing a server's packages before its first start, and running helper commands.

``uvx PKG`` is warmed up with ``uvx --from PKG python -c pass`` (uv resolves
and caches the tool environment without starting the server); ``npx -y PKG``
with ``npx -y --package PKG -- node -e 0`` (npm fetches the package into its
cache); docker images are pulled. The first real start is then quick, and a
package that does not exist fails here, before any file is written.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

import anyio
import anyio.abc
import attrs

from kairox_process import OutputTail, kill_group

from .model import CatalogEntry

__all__ = ["CommandFailed", "CommandResult", "prepare_command", "run_command"]

#: uvx options that take a value (so the value is not mistaken for the package)
_UVX_VALUED = {"--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index", "--index-url"}
_NPX_VALUED = {"--package", "-p", "--registry", "--cache", "--userconfig"}
#: characters of an output line shown in a message or result
_SHOWN_LINE = 500


class CommandFailed(Exception):
    """A helper command failed; the message ends with the tail of its output."""


@attrs.frozen
class CommandResult:
    returncode: int
    output: tuple[str, ...]


def _first_positional(args: Sequence[str], valued: set[str]) -> tuple[int, str] | None:
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            return (i + 1, args[i + 1]) if i + 1 < len(args) else None
        if arg.startswith("-"):
            skip = arg in valued
            continue
        return i, arg
    return None


def prepare_command(entry: CatalogEntry, command: str, args: Sequence[str]) -> list[str] | None:
    """The pre-install command for ``entry`` as it will run here (``None``: nothing to do)."""
    if entry.prepare:
        return list(entry.prepare)
    if entry.launch is None or entry.launch.transport != "stdio":
        return None
    args = list(args)
    if command == "uv" and args[:2] == ["tool", "run"]:
        command, args = "uvx", args[2:]
        prefix = ["uv", "tool", "run"]
    else:
        prefix = [command]
    if command == "uvx":
        found = _first_positional(args, _UVX_VALUED)
        if found is None:
            return None
        index, package = found
        options = args[:index]
        if "--from" in options:
            return [*prefix, *options, "python", "-c", "pass"]
        return [*prefix, *options, "--from", package, "python", "-c", "pass"]
    if command == "npx":
        found = _first_positional(args, _NPX_VALUED)
        if found is None:
            return None
        return ["npx", "-y", "--package", found[1], "--", "node", "-e", "0"]
    return None


async def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 600.0,
    keep: int = 40,
) -> CommandResult:
    """Run ``argv`` in its own process group, output kept in a bounded buffer (last ``keep`` lines).

    Raises :class:`CommandFailed` when it cannot start, exits non-zero or times out;
    the process group is killed on timeout and cancellation.
    """
    # a long line (a progress bar, a JSON blob) is one line here, shown cut: it never pushes the error out
    output = OutputTail(max_bytes=256 * 1024, max_line=64 * 1024)
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise CommandFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None

    drained = anyio.Event()

    async def drain() -> None:
        assert process.stdout is not None
        async for chunk in process.stdout:
            output.feed(chunk)
        drained.set()

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain)
                await process.wait()
                # a grandchild may keep the pipe open: do not wait for it for long
                with anyio.move_on_after(2.0):
                    await drained.wait()
                tg.cancel_scope.cancel()
    except TimeoutError:
        raise CommandFailed(_explain(argv, f"timed out after {timeout:g} s", _shown(output, keep))) from None
    finally:
        kill_group(process.pid)  # the group: stragglers too, after the leader exited
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if process.returncode != 0:
        raise CommandFailed(_explain(argv, f"exited with status {process.returncode}", _shown(output, keep)))
    return CommandResult(process.returncode or 0, _shown(output, keep))


def _shown(output: OutputTail, keep: int) -> tuple[str, ...]:
    return tuple(line.rstrip()[:_SHOWN_LINE] for line in output.tail(keep))


def _explain(argv: Sequence[str], what: str, tail: Sequence[str]) -> str:
    lines = [line for line in tail if line.strip()][-12:]
    shown = "\n".join(f"    {line}" for line in lines)
    return f"`{' '.join(argv)}` {what}" + (f"; its last output:\n{shown}" if shown else "")
