"""shell.exec: run a shell command in the workspace."""

from __future__ import annotations

from typing import Any

from kairox import ToolContext, ToolResult, ToolSpec

from ._base import BuiltinTool, error, object_schema
from ._output import head_tail
from ._proc import run_process

__all__ = ["ShellExec"]


class ShellExec(BuiltinTool):
    SPEC = ToolSpec(
        id="shell.exec",
        title="Run a shell command",
        description=(
            "Run a command with the shell (`sh -c COMMAND`) in the workspace or a directory inside it, "
            "and return its exit code, stdout and stderr. Long output keeps its beginning and end. "
            "The command is stopped (with everything it started) after `timeout` seconds; processes it "
            "leaves in the background are stopped when it exits. Always needs the user's approval "
            "unless the policy says otherwise."
        ),
        input_schema=object_schema(
            {
                "command": {"type": "string", "description": "The command line, as typed in a shell."},
                "cwd": {
                    "type": "string",
                    "default": ".",
                    "description": "Working directory, inside the workspace (relative to it or absolute).",
                },
                "timeout": {"type": "number", "minimum": 0.001, "description": "Seconds before it is stopped."},
                "env": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Extra environment variables.",
                },
                "stdin": {"type": "string", "description": "Text fed to the command's standard input."},
            },
            required=["command"],
        ),
        domain="system",
        capability="execute",
        path_arguments=("cwd",),
        annotations={"destructiveHint": True, "openWorldHint": True},
    )

    async def run(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        cfg = self.env.config
        command: str = args["command"]
        if not command.strip():
            return error("shell.exec: the command is empty")
        cwd = self.env.resolve(args["cwd"], "directory")
        shown_cwd = self.env.display(cwd)
        if not self.env.is_inside_workspace(cwd):
            return error(f"cwd {shown_cwd} is outside the workspace {self.env.workspace}; commands run inside it")
        if not cwd.is_dir():
            return error(f"cwd {shown_cwd} is not a directory")
        timeout = float(args.get("timeout") or cfg.shell_timeout)
        if timeout > cfg.shell_max_timeout:
            return error(
                f"timeout {timeout:g} s is over the limit of {cfg.shell_max_timeout:g} s ([tools] shell_max_timeout)"
            )
        env = {**self.env.env, **args.get("env", {}), "PWD": str(cwd)}
        stdin = args.get("stdin")
        outcome = await run_process(
            [cfg.shell, "-c", command],
            cwd=cwd,
            env=env,
            timeout=timeout,
            stdout_limit=cfg.max_output_chars,
            stderr_limit=max(cfg.max_output_chars // 4, 1_000),
            stdin=stdin.encode("utf-8") if stdin is not None else None,
        )
        stdout, stderr = outcome.stdout.text(), outcome.stderr.text()
        code = outcome.returncode
        if outcome.timed_out:
            status = f"timed out after {timeout:g} s: the command and everything it started were stopped"
        elif code is not None and code < 0:
            status = f"killed by signal {-code}"
        else:
            status = f"exit code {code}"
        parts = [f"{status} ({outcome.duration_s:.2f} s, in {shown_cwd})"]
        if stdout:
            parts.append("--- stdout ---\n" + stdout.rstrip("\n"))
        if stderr:
            parts.append("--- stderr ---\n" + stderr.rstrip("\n"))
        if not stdout and not stderr:
            parts.append("(no output)")
        text, _ = head_tail("\n".join(parts), cfg.max_output_chars + 2_000)
        return ToolResult.from_text(
            text,
            is_error=outcome.timed_out or code != 0,
            structured={
                "exit_code": code,
                "timed_out": outcome.timed_out,
                "stdout": stdout,
                "stderr": stderr,
                "stdout_truncated": outcome.stdout.truncated,
                "stderr_truncated": outcome.stderr.truncated,
                "duration_s": round(outcome.duration_s, 3),
                "cwd": shown_cwd,
            },
        )
