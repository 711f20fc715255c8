"""Kairox: the extensibility runtime an LLM agent stands on.

The public API is re-exported here and loaded lazily, so ``import kairox``
stays cheap (it never imports ``mcp`` or an HTTP client).

    async with kairox.Runtime.open(workspace=".") as rt:
        result = await rt.call_tool("fs.read", {"path": "README.md"})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl, hookspec
from .lazy import lazy_exports

if TYPE_CHECKING:
    from ._config import (
        Config,
        ConfigLayer,
        ConfigSection,
        HeldEntry,
        NotApplied,
        expand_env,
        inherit_env,
        load_config,
        redact,
    )
    from ._convert import ValueMismatch, describe_value, structure
    from ._events import (
        Event,
        EventBus,
        HookFailed,
        PluginLoadFailed,
        ProviderFailed,
        ProviderReady,
        ProviderStarting,
        ProviderStopped,
        SessionEnded,
        SessionStarted,
        SkillActivated,
        ToolCallFinished,
        ToolCallStarted,
        ToolNameCollision,
        ToolsChanged,
    )
    from ._home import user_home
    from ._hooks import Block, ContextPiece, HookRegistry, ToolCall
    from ._host import LoadFailure, PluginHost, PluginInfo, build_plugin_host
    from ._names import ENTRY_NAME_RE, ToolRank, assign_exported_names, sanitize_name
    from ._policy import DEFAULT_PATH_ARGUMENTS, Allow, Ask, Decision, Deny, PolicyConfig, PolicyEngine
    from ._registrar import Registrar
    from ._runtime import (
        ApprovalAnswer,
        ApprovalRequest,
        Approver,
        Runtime,
        RuntimeStatus,
        Session,
        StartMode,
        TrustPrompt,
        TrustRequest,
    )
    from ._secrets import redact_url
    from ._skill_model import split_frontmatter
    from ._skills import (
        RenderedSkill,
        SkillArgument,
        SkillDef,
        SkillError,
        SkillFrontmatter,
        SkillLoadFailed,
        SkillLoadWarning,
        SkillMatch,
        SkillRegistry,
        SkillsChanged,
        SkillScope,
        SkillsScanned,
        SkillWarning,
    )
    from ._text import terminal_safe
    from ._tools import (
        AudioContent,
        Content,
        FunctionTool,
        ImageContent,
        ResourceContent,
        ResourceLink,
        TextContent,
        Tool,
        ToolContext,
        ToolRegistry,
        ToolResult,
        ToolSpec,
    )
    from ._trust import Declared, TrustState, TrustStore, WorkspaceTrust, describe_entry, fingerprint
    from ._types import ApprovalPolicy, Capability, Domain, Permissions, SandboxPolicy, ServerState, ServerStatus
    from ._yaml import YamlLimitError, safe_load_bounded
    from .errors import (
        ConfigError,
        KairoxError,
        MissingFeatureError,
        PolicyDenied,
        RegistrationError,
        ToolError,
        ToolNotFound,
    )

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "Config",
            "ConfigLayer",
            "ConfigSection",
            "HeldEntry",
            "NotApplied",
            "expand_env",
            "inherit_env",
            "load_config",
            "redact",
        ],
        "_config",
    ),
    **dict.fromkeys(
        [
            "Event",
            "EventBus",
            "HookFailed",
            "PluginLoadFailed",
            "ProviderFailed",
            "ProviderReady",
            "ProviderStarting",
            "ProviderStopped",
            "SessionEnded",
            "SessionStarted",
            "SkillActivated",
            "ToolCallFinished",
            "ToolCallStarted",
            "ToolNameCollision",
            "ToolsChanged",
        ],
        "_events",
    ),
    **dict.fromkeys(["Block", "ContextPiece", "HookRegistry", "ToolCall"], "_hooks"),
    **dict.fromkeys(["LoadFailure", "PluginHost", "PluginInfo", "build_plugin_host"], "_host"),
    **dict.fromkeys(["ENTRY_NAME_RE", "ToolRank", "assign_exported_names", "sanitize_name"], "_names"),
    **dict.fromkeys(["ValueMismatch", "describe_value", "structure"], "_convert"),
    "split_frontmatter": "_skill_model",
    **dict.fromkeys(["YamlLimitError", "safe_load_bounded"], "_yaml"),
    **dict.fromkeys(
        ["DEFAULT_PATH_ARGUMENTS", "Allow", "Ask", "Decision", "Deny", "PolicyConfig", "PolicyEngine"], "_policy"
    ),
    "Registrar": "_registrar",
    **dict.fromkeys(
        [
            "ApprovalAnswer",
            "ApprovalRequest",
            "Approver",
            "Runtime",
            "RuntimeStatus",
            "Session",
            "StartMode",
            "TrustPrompt",
            "TrustRequest",
        ],
        "_runtime",
    ),
    "redact_url": "_secrets",
    "user_home": "_home",
    "terminal_safe": "_text",
    **dict.fromkeys(
        ["Declared", "TrustState", "TrustStore", "WorkspaceTrust", "describe_entry", "fingerprint"], "_trust"
    ),
    **dict.fromkeys(
        [
            "RenderedSkill",
            "SkillArgument",
            "SkillDef",
            "SkillError",
            "SkillFrontmatter",
            "SkillLoadFailed",
            "SkillLoadWarning",
            "SkillMatch",
            "SkillRegistry",
            "SkillScope",
            "SkillWarning",
            "SkillsChanged",
            "SkillsScanned",
        ],
        "_skills",
    ),
    **dict.fromkeys(
        [
            "AudioContent",
            "Content",
            "FunctionTool",
            "ImageContent",
            "ResourceContent",
            "ResourceLink",
            "TextContent",
            "Tool",
            "ToolContext",
            "ToolRegistry",
            "ToolResult",
            "ToolSpec",
        ],
        "_tools",
    ),
    **dict.fromkeys(
        ["ApprovalPolicy", "Capability", "Domain", "Permissions", "SandboxPolicy", "ServerState", "ServerStatus"],
        "_types",
    ),
    **dict.fromkeys(
        [
            "ConfigError",
            "KairoxError",
            "MissingFeatureError",
            "PolicyDenied",
            "RegistrationError",
            "ToolError",
            "ToolNotFound",
        ],
        "errors",
    ),
}

# a literal list (kept equal to _EXPORTS by a test), so type checkers see the re-exports
__all__ = [
    "Allow",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "Ask",
    "AudioContent",
    "Block",
    "Capability",
    "Config",
    "ConfigError",
    "ConfigLayer",
    "ConfigSection",
    "Content",
    "ContextPiece",
    "DEFAULT_PATH_ARGUMENTS",
    "Decision",
    "Declared",
    "Deny",
    "Domain",
    "ENTRY_NAME_RE",
    "Event",
    "EventBus",
    "FunctionTool",
    "HeldEntry",
    "HookFailed",
    "HookRegistry",
    "ImageContent",
    "KairoxError",
    "LoadFailure",
    "MissingFeatureError",
    "NotApplied",
    "Permissions",
    "PluginHost",
    "PluginInfo",
    "PluginLoadFailed",
    "PolicyConfig",
    "PolicyDenied",
    "PolicyEngine",
    "ProviderFailed",
    "ProviderReady",
    "ProviderStarting",
    "ProviderStopped",
    "Registrar",
    "RegistrationError",
    "RenderedSkill",
    "ResourceContent",
    "ResourceLink",
    "Runtime",
    "RuntimeStatus",
    "SandboxPolicy",
    "ServerState",
    "ServerStatus",
    "Session",
    "SessionEnded",
    "SessionStarted",
    "SkillActivated",
    "SkillArgument",
    "SkillDef",
    "SkillError",
    "SkillFrontmatter",
    "SkillLoadFailed",
    "SkillLoadWarning",
    "SkillMatch",
    "SkillRegistry",
    "SkillScope",
    "SkillWarning",
    "SkillsChanged",
    "SkillsScanned",
    "StartMode",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolError",
    "ToolNameCollision",
    "ToolNotFound",
    "ToolRank",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "ToolsChanged",
    "TrustPrompt",
    "TrustRequest",
    "TrustState",
    "TrustStore",
    "ValueMismatch",
    "WorkspaceTrust",
    "YamlLimitError",
    "assign_exported_names",
    "build_plugin_host",
    "describe_entry",
    "describe_value",
    "expand_env",
    "fingerprint",
    "hookimpl",
    "hookspec",
    "inherit_env",
    "load_config",
    "redact",
    "redact_url",
    "safe_load_bounded",
    "sanitize_name",
    "split_frontmatter",
    "structure",
    "terminal_safe",
    "user_home",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
