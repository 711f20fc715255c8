"""The public API of :mod:`kairox`: the one list of its names (issue 16).

Type checkers read this stub; at run time ``kairox/__init__.py`` reads it too
(``lazy_loader.attach_stub``) and imports each name from its module on first use.
"""

__version__: str

from ._agents import (
    AgentDef as AgentDef,
    AgentError as AgentError,
    AgentPrepared as AgentPrepared,
    AgentRegistry as AgentRegistry,
    AgentRun as AgentRun,
    DefinitionsChanged as DefinitionsChanged,
    OutputStyle as OutputStyle,
    OutputStyleError as OutputStyleError,
    OutputStyleRegistry as OutputStyleRegistry,
    claude_tool_ids as claude_tool_ids,
    parse_agent as parse_agent,
    parse_output_style as parse_output_style,
)
from ._config import (
    BrokenSection as BrokenSection,
    Config as Config,
    ConfigLayer as ConfigLayer,
    ConfigSection as ConfigSection,
    HeldEntry as HeldEntry,
    NotApplied as NotApplied,
    expand_env as expand_env,
    inherit_env as inherit_env,
    known_errors_for as known_errors_for,
    load_config as load_config,
    redact as redact,
    workspace_config_files as workspace_config_files,
)
from ._convert import (
    ValueMismatch as ValueMismatch,
    describe_value as describe_value,
    structure as structure,
)
from ._distribution import (
    Distribution as Distribution,
    DistributionChoice as DistributionChoice,
)
from ._entrypoints import (
    kernel_version as kernel_version,
)
from ._events import (
    Event as Event,
    EventBus as EventBus,
    HookFailed as HookFailed,
    PluginLoadFailed as PluginLoadFailed,
    ProviderFailed as ProviderFailed,
    ProviderReady as ProviderReady,
    ProviderStarting as ProviderStarting,
    ProviderStopped as ProviderStopped,
    SessionEnded as SessionEnded,
    SessionStarted as SessionStarted,
    SkillActivated as SkillActivated,
    ToolCallFinished as ToolCallFinished,
    ToolCallStarted as ToolCallStarted,
    ToolNameCollision as ToolNameCollision,
    ToolsChanged as ToolsChanged,
)
from ._features import (
    missing_feature_message as missing_feature_message,
)
from ._home import (
    user_home as user_home,
)
from ._hooks import (
    Block as Block,
    ContextPiece as ContextPiece,
    HookRegistry as HookRegistry,
    ToolCall as ToolCall,
)
from ._host import (
    LoadFailure as LoadFailure,
    PluginHost as PluginHost,
    PluginInfo as PluginInfo,
    build_plugin_host as build_plugin_host,
    package_key as package_key,
)
from ._names import (
    ENTRY_NAME_RE as ENTRY_NAME_RE,
    ToolRank as ToolRank,
    assign_exported_names as assign_exported_names,
    sanitize_name as sanitize_name,
)
from ._policy import (
    Allow as Allow,
    Ask as Ask,
    DEFAULT_PATH_ARGUMENTS as DEFAULT_PATH_ARGUMENTS,
    Decision as Decision,
    Deny as Deny,
    PolicyConfig as PolicyConfig,
    PolicyEngine as PolicyEngine,
    file_write_spec as file_write_spec,
)
from ._registrar import (
    Registrar as Registrar,
)
from ._call import (
    ApprovalAnswer as ApprovalAnswer,
    ApprovalRequest as ApprovalRequest,
    Approver as Approver,
    current_session as current_session,
)
from ._runtime import (
    HostCallback as HostCallback,
    Runtime as Runtime,
    RuntimeStatus as RuntimeStatus,
    Session as Session,
    StartMode as StartMode,
    TrustPrompt as TrustPrompt,
    TrustRequest as TrustRequest,
)
from ._secrets import (
    redact_text as redact_text,
    redact_url as redact_url,
)
from ._skill_model import (
    RenderedSkill as RenderedSkill,
    SkillArgument as SkillArgument,
    SkillDef as SkillDef,
    SkillError as SkillError,
    SkillFrontmatter as SkillFrontmatter,
    SkillMatch as SkillMatch,
    SkillScope as SkillScope,
    SkillWarning as SkillWarning,
    ARGUMENT_TYPES as ARGUMENT_TYPES,
    split_frontmatter as split_frontmatter,
)
from ._skills import (
    SkillLoadFailed as SkillLoadFailed,
    SkillLoadWarning as SkillLoadWarning,
    SkillRegistry as SkillRegistry,
    SkillsChanged as SkillsChanged,
    SkillsScanned as SkillsScanned,
)
from ._text import (
    glob_match as glob_match,
    terminal_safe as terminal_safe,
)
from ._tools import (
    AudioContent as AudioContent,
    Content as Content,
    FunctionTool as FunctionTool,
    ImageContent as ImageContent,
    ResourceContent as ResourceContent,
    ResourceLink as ResourceLink,
    TextContent as TextContent,
    Tool as Tool,
    ToolContext as ToolContext,
    ToolIndex as ToolIndex,
    ToolRegistry as ToolRegistry,
    ToolResult as ToolResult,
    ToolSpec as ToolSpec,
    ToolView as ToolView,
)
from ._trust import (
    WHOLE_ENVIRONMENT as WHOLE_ENVIRONMENT,
    WHOLE_ENVIRONMENT_NOTE as WHOLE_ENVIRONMENT_NOTE,
    Declared as Declared,
    TrustState as TrustState,
    TrustStore as TrustStore,
    WorkspaceTrust as WorkspaceTrust,
    describe_entry as describe_entry,
    fingerprint as fingerprint,
    shell_line as shell_line,
    shown_text as shown_text,
)
from ._types import (
    APPROVAL_STRICTNESS as APPROVAL_STRICTNESS,
    ApprovalPolicy as ApprovalPolicy,
    Capability as Capability,
    Domain as Domain,
    Permissions as Permissions,
    SANDBOX_STRICTNESS as SANDBOX_STRICTNESS,
    SandboxPolicy as SandboxPolicy,
    ServerState as ServerState,
    ServerStatus as ServerStatus,
)
from ._yaml import (
    YamlLimitError as YamlLimitError,
    safe_load_bounded as safe_load_bounded,
)
from .errors import (
    ConfigError as ConfigError,
    KairoxError as KairoxError,
    MissingFeatureError as MissingFeatureError,
    PolicyDenied as PolicyDenied,
    RegistrationError as RegistrationError,
    ToolError as ToolError,
    ToolNotFound as ToolNotFound,
)
from .files import (
    is_inside as is_inside,
    resolve_path as resolve_path,
)
from .hookspecs import (
    advisory as advisory,
    hookimpl as hookimpl,
    hookspec as hookspec,
)
