"""The public names of :mod:`kairox_dap`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._client import (
    ConnectionLost as ConnectionLost,
    DapClient as DapClient,
    DapError as DapError,
    OutputBuffer as OutputBuffer,
    RequestTimeout as RequestTimeout,
)
from ._config import (
    DapServerConfig as DapServerConfig,
)
from ._events import (
    DapServerFailed as DapServerFailed,
    DapServerRunning as DapServerRunning,
    DapServerStarting as DapServerStarting,
    DapServerStopped as DapServerStopped,
)
from ._lifecycle import (
    AdapterUnavailable as AdapterUnavailable,
    DapServerLifecycle as DapServerLifecycle,
)
from ._provider import (
    DapToolProvider as DapToolProvider,
    provider_of as provider_of,
    restart_server as restart_server,
    stop_server as stop_server,
)
from ._session import (
    Breakpoint as Breakpoint,
    DebugSession as DebugSession,
    SessionEnded as SessionEnded,
)
