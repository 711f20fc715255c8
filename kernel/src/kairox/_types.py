"""Small enums shared by the tools, the policy engine and the config."""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = [
    "ApprovalPolicy",
    "Capability",
    "Domain",
    "Permissions",
    "SandboxPolicy",
    "ServerState",
    "ServerStatus",
    "StrEnum",
]


class StrEnum(str, enum.Enum):
    """An enum of strings that prints as its value (``enum.StrEnum`` from Python 3.11)."""

    def __str__(self) -> str:
        return str(self.value)


class Domain(StrEnum):
    """Where a tool's effects land."""

    LOCAL = "local"
    NETWORK = "network"
    SYSTEM = "system"


class Capability(StrEnum):
    """What a tool does there."""

    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"


class ApprovalPolicy(StrEnum):
    """When the user is asked (strictest first)."""

    UNTRUSTED = "untrusted"
    ON_REQUEST = "on_request"
    ON_FAILURE = "on_failure"
    NEVER = "never"


class SandboxPolicy(StrEnum):
    """What tools may change (strictest first)."""

    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    DANGER_FULL_ACCESS = "danger_full_access"


APPROVAL_STRICTNESS = list(ApprovalPolicy)
SANDBOX_STRICTNESS = list(SandboxPolicy)


@attrs.frozen
class Permissions:
    """Permissions a plugin or server declares for its tools.

    They can only *narrow* the user's policy: the effective approval and
    sandbox policies are the stricter of the user's and these; ``tools``, when
    set, is an allow-list of canonical-id globs (anything else is denied).
    """

    approval: ApprovalPolicy | None = None
    sandbox: SandboxPolicy | None = None
    tools: tuple[str, ...] | None = None


class ServerState(StrEnum):
    """Lifecycle of a managed server (MCP, LSP, DAP)."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    #: declared by a workspace the user has not trusted (or changed since): never started
    UNTRUSTED = "untrusted"
    #: an HTTP MCP server that wants an OAuth login (``kairox mcp login NAME``)
    NEEDS_AUTHORIZATION = "needs_authorization"


@attrs.frozen
class ServerStatus:
    """One managed server as ``kairox status`` shows it."""

    name: str
    kind: str  # "mcp", "lsp", "dap", ...
    state: ServerState
    detail: str = ""
    tools: int = 0
    source: str = ""
    #: the last lines of a failed server's stderr (bounded; shown under it by ``kairox status``)
    log_tail: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (``kairox status --json``, the dashboard's Status page)."""
        return {**attrs.asdict(self, recurse=False), "state": self.state.value, "log_tail": list(self.log_tail)}
