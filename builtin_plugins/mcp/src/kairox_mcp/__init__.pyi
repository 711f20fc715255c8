"""The public names of :mod:`kairox_mcp`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from .adapter import (
    McpToolAdapter as McpToolAdapter,
    build_spec as build_spec,
    convert_result as convert_result,
    normalize_schema as normalize_schema,
)
from .codex import (
    CODEX_SERVER_KEYS as CODEX_SERVER_KEYS,
    CodexServer as CodexServer,
    codex_server as codex_server,
)
from .config import (
    McpServerConfig as McpServerConfig,
    ServerDefinition as ServerDefinition,
)
from .events import (
    McpLogMessage as McpLogMessage,
    McpPromptsChanged as McpPromptsChanged,
    McpResourcesChanged as McpResourcesChanged,
    McpResourceUpdated as McpResourceUpdated,
    McpServerFailed as McpServerFailed,
    McpServerReady as McpServerReady,
    McpServerStarting as McpServerStarting,
    McpServerStopped as McpServerStopped,
    McpToolsRefreshed as McpToolsRefreshed,
)
from .lifecycle import (
    ServerLifecycle as ServerLifecycle,
)
from .manager import (
    McpServerManager as McpServerManager,
    McpStartupError as McpStartupError,
    manager_of as manager_of,
)
from .resources import (
    McpPrompt as McpPrompt,
    McpPromptResult as McpPromptResult,
    McpResource as McpResource,
    McpResourceTemplate as McpResourceTemplate,
)
from .sources import (
    UnavailableServer as UnavailableServer,
    parse_mcp_json as parse_mcp_json,
    parse_server_table as parse_server_table,
)
from .transport import (
    ConnectContext as ConnectContext,
    Diagnostics as Diagnostics,
    McpTransport as McpTransport,
    StderrBuffer as StderrBuffer,
)
