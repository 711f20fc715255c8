"""The public names of :mod:`kairox_peer`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._client import (
    MessagePeer as MessagePeer,
    PeerClient as PeerClient,
    PendingRequest as PendingRequest,
)
from ._config import (
    EXTENSION_LANGUAGES as EXTENSION_LANGUAGES,
    PeerServerConfig as PeerServerConfig,
    child_env as child_env,
    language_patterns as language_patterns,
    matches as matches,
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
from ._errors import (
    ToolInputError as ToolInputError,
)
from ._framing import (
    BadMessage as BadMessage,
    FrameDecoder as FrameDecoder,
    FramingError as FramingError,
    encode_message as encode_message,
)
from ._managed import (
    ManagedServer as ManagedServer,
    Spawn as Spawn,
)
from ._process import (
    CommandNotFound as CommandNotFound,
    StdioPeer as StdioPeer,
    resolve_command as resolve_command,
)
from ._text import (
    line_at as line_at,
    read_text as read_text,
    split_lines as split_lines,
)
from ._tools import (
    PeerErrors as PeerErrors,
    PeerTool as PeerTool,
    object_schema as object_schema,
    peer_error_text as peer_error_text,
)
