"""The public API of :mod:`kairox`: the one list of its names.

What plugin authors and embedding hosts use, each documented in ``docs/api.md`` (at most 60:
what only the built-in plugins share is in :mod:`kairox.ext`). Type checkers read this stub;
at run time ``kairox/__init__.py`` reads it too (``lazy_loader.attach_stub``) and imports each
name from its module on first use.
"""

__version__: str

from ._config import (
    ConfigSection as ConfigSection,
)
from ._distribution import (
    Distribution as Distribution,
)
from ._events import (
    Event as Event,
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
    ToolsChanged as ToolsChanged,
)
from ._hooks import (
    Block as Block,
    ContextPiece as ContextPiece,
    ToolCall as ToolCall,
)
from ._policy import (
    Allow as Allow,
    Ask as Ask,
    Decision as Decision,
    Deny as Deny,
)
from ._call import (
    ApprovalAnswer as ApprovalAnswer,
    ApprovalRequest as ApprovalRequest,
    Approver as Approver,
)
from ._runtime import (
    Runtime as Runtime,
    StartMode as StartMode,
)
from ._supervisor import (
    RuntimeStatus as RuntimeStatus,
)
from ._trust import (
    TrustPrompt as TrustPrompt,
    TrustRequest as TrustRequest,
)
from ._session import (
    HostCallback as HostCallback,
    Session as Session,
)
from ._secrets import (
    redact_text as redact_text,
)
from ._skills import (
    SkillsChanged as SkillsChanged,
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
    ToolResult as ToolResult,
    ToolSpec as ToolSpec,
    ToolView as ToolView,
)
from ._types import (
    Capability as Capability,
    Domain as Domain,
    ServerState as ServerState,
    ServerStatus as ServerStatus,
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
from .hookspecs import (
    advisory as advisory,
    hookimpl as hookimpl,
    hookspec as hookspec,
)
