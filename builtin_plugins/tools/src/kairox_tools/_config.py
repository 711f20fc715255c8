"""The optional ``[tools]`` section of ``kairox.toml``."""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["TOOL_IDS", "ToolsConfig"]

#: the canonical ids of the built-in tools
TOOL_IDS = ("fs.read", "fs.write", "fs.list", "shell.exec", "search.grep")


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueError(f"tools.{attribute.name} must be greater than 0, got {value!r}")


def _known_tools(instance: Any, attribute: attrs.Attribute[Any], value: list[str]) -> None:
    unknown = [v for v in value if v not in TOOL_IDS]
    if unknown:
        raise ValueError(f"tools.{attribute.name}: unknown tool {unknown[0]!r}; built-in tools: {', '.join(TOOL_IDS)}")


@attrs.frozen
class ToolsConfig:
    """Limits of the built-in tools.

    ```toml
    [tools]
    disabled = ["shell.exec"]      # built-in tools not to register
    max_output_chars = 50000       # text a tool returns; beyond it, head + tail with a marker
    shell_timeout = 120            # seconds, when a call gives none
    ```
    """

    disabled: list[str] = attrs.field(factory=list, validator=_known_tools)
    #: text one tool call returns at most (longer output keeps its head and tail)
    max_output_chars: int = attrs.field(default=50_000, validator=_positive)
    #: characters of one line fs.read and search.grep show at most
    max_line_chars: int = attrs.field(default=2_000, validator=_positive)
    #: lines fs.read returns when the call gives no limit
    read_lines: int = attrs.field(default=2_000, validator=_positive)
    #: largest image fs.read returns as an image block
    max_image_bytes: int = attrs.field(default=5_000_000, validator=_positive)
    #: largest content fs.write accepts
    max_write_bytes: int = attrs.field(default=10_000_000, validator=_positive)
    #: entries fs.list returns at most
    list_max_entries: int = attrs.field(default=2_000, validator=_positive)
    #: seconds shell.exec waits when the call gives no timeout
    shell_timeout: float = attrs.field(default=120.0, validator=_positive)
    #: the largest timeout a call may ask for
    shell_max_timeout: float = attrs.field(default=1_800.0, validator=_positive)
    #: the shell that runs commands (``shell -c COMMAND``)
    shell: str = "/bin/sh"
    #: matches search.grep returns when the call gives no limit
    grep_max_results: int = attrs.field(default=500, validator=_positive)
    #: ``auto``: ripgrep when ``rg`` is on PATH, else the Python search (RE2); or force one
    grep_engine: Literal["auto", "ripgrep", "python"] = "auto"
    #: seconds search.grep searches at most
    grep_timeout: float = attrs.field(default=60.0, validator=_positive)
