"""Exceptions raised by the kernel. Every one is a :class:`KairoxError`."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "KairoxError",
    "MissingFeatureError",
    "PolicyDenied",
    "RegistrationError",
    "ToolError",
    "ToolNotFound",
]


class KairoxError(Exception):
    """Base class of every error the kernel raises on purpose."""


class RegistrationError(KairoxError):
    """A plugin tried to register something that clashes with another plugin."""


class ConfigError(KairoxError):
    """A configuration value is wrong.

    ``file`` is the file the value came from (``None`` for values set in code),
    ``path`` the dotted field path inside it (``mcp_servers.git.args[1]``) and
    ``message`` what was expected.

    ``errors`` lists every problem this error stands for: ``[self]`` for a single one; when
    structuring a value finds several, the first is raised with all of them in ``errors``
    (a reader that reports every problem uses ``exc.errors``, never ``exc`` alone).
    """

    def __init__(self, message: str, *, file: str | None = None, path: str = "") -> None:
        self.file = file
        self.path = path
        self.message = message
        #: every problem this error stands for (``[self]`` when single)
        self.errors: list[ConfigError] = [self]
        super().__init__(self.render())

    def render(self) -> str:
        where = ": ".join(p for p in (self.file, self.path) if p)
        return f"{where}: {self.message}" if where else self.message


class MissingFeatureError(ConfigError):
    """The configuration asks for a feature whose plugin is not installed."""


class ToolError(KairoxError):
    """A tool call failed (the tool raised, timed out or its server died)."""


class ToolNotFound(ToolError):
    """No tool is registered under that canonical id or exported name."""


class PolicyDenied(ToolError):
    """The policy engine (or a hook, or the user) refused a tool call."""

    def __init__(self, reason: str, *, tool: str = "") -> None:
        self.reason = reason
        self.tool = tool
        super().__init__(f"{tool}: {reason}" if tool else reason)
