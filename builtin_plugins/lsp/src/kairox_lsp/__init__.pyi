"""The public names of :mod:`kairox_lsp`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._client import (
    CLIENT_CAPABILITIES as CLIENT_CAPABILITIES,
    ConnectionLost as ConnectionLost,
    LspClient as LspClient,
    LspError as LspError,
    RequestTimeout as RequestTimeout,
)
from ._config import (
    ClaudeLspServer as ClaudeLspServer,
    LspServerConfig as LspServerConfig,
    PeerServerConfig as PeerServerConfig,
    child_env as child_env,
    language_patterns as language_patterns,
    load_lsp_json as load_lsp_json,
    matches as matches,
    parse_lsp_servers as parse_lsp_servers,
)
from ._control import (
    PeerServers as PeerServers,
    peer_controls as peer_controls,
    peer_provider as peer_provider,
    restart_peer as restart_peer,
    server_named as server_named,
    stop_peer as stop_peer,
    unavailable_servers as unavailable_servers,
)
from ._documents import (
    DocumentStore as DocumentStore,
    path_to_uri as path_to_uri,
    read_text as read_text,
    uri_to_path as uri_to_path,
)
from ._events import (
    LspServerFailed as LspServerFailed,
    LspServerRunning as LspServerRunning,
    LspServerStarting as LspServerStarting,
    LspServerStopped as LspServerStopped,
)
from ._framing import (
    BadMessage as BadMessage,
    FrameDecoder as FrameDecoder,
    FramingError as FramingError,
    encode_message as encode_message,
)
from ._lifecycle import (
    LspServerLifecycle as LspServerLifecycle,
    ServerUnavailable as ServerUnavailable,
)
from ._managed import (
    ManagedServer as ManagedServer,
    Spawn as Spawn,
)
from ._peerclient import (
    MessagePeer as MessagePeer,
    PeerClient as PeerClient,
    PendingRequest as PendingRequest,
)
from ._errors import (
    ToolInputError as ToolInputError,
)
from ._peertools import (
    PeerErrors as PeerErrors,
    PeerTool as PeerTool,
    object_schema as object_schema,
    peer_error_text as peer_error_text,
)
from ._positions import (
    from_server_character as from_server_character,
    line_at as line_at,
    split_lines as split_lines,
    to_server_character as to_server_character,
)
from ._process import (
    CommandNotFound as CommandNotFound,
    StdioPeer as StdioPeer,
    kill_group as kill_group,
    resolve_command as resolve_command,
)
from ._provider import (
    LspToolProvider as LspToolProvider,
    PROVIDER_NAME as PROVIDER_NAME,
    add_bundle_servers as add_bundle_servers,
    provider_of as provider_of,
    restart_server as restart_server,
    stop_server as stop_server,
)
