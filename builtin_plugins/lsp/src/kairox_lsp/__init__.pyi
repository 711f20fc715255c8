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
    load_lsp_json as load_lsp_json,
    parse_lsp_servers as parse_lsp_servers,
)
from ._documents import (
    DocumentStore as DocumentStore,
    path_to_uri as path_to_uri,
    uri_to_path as uri_to_path,
)
from ._events import (
    LspServerFailed as LspServerFailed,
    LspServerRunning as LspServerRunning,
    LspServerStarting as LspServerStarting,
    LspServerStopped as LspServerStopped,
)
from ._lifecycle import (
    LspServerLifecycle as LspServerLifecycle,
    ServerUnavailable as ServerUnavailable,
)
from ._positions import (
    from_server_character as from_server_character,
    to_server_character as to_server_character,
)
from ._provider import (
    LspToolProvider as LspToolProvider,
    PROVIDER_NAME as PROVIDER_NAME,
    add_bundle_servers as add_bundle_servers,
    provider_of as provider_of,
    restart_server as restart_server,
    stop_server as stop_server,
)
