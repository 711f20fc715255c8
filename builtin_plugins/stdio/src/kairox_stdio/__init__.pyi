"""The public names of :mod:`kairox_stdio`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._env import (
    BASE_ENV_VARS as BASE_ENV_VARS,
    build_env as build_env,
)
from ._transport import (
    StdioTransport as StdioTransport,
)
from .stdio import (
    InvalidServerMessage as InvalidServerMessage,
    StdioServerError as StdioServerError,
)
