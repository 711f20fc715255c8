"""The public names of :mod:`kairox_cli`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._declare import (
    command as command,
)
from ._lazy import (
    LazyCommand as LazyCommand,
    lazy_command as lazy_command,
)
from ._net import (
    is_loopback_host as is_loopback_host,
)
from ._main import (
    build_cli as build_cli,
    cli as cli,
    main as main,
)
from ._util import (
    CommandFailed as CommandFailed,
    config_secrets as config_secrets,
    echo_json as echo_json,
    mask_secrets as mask_secrets,
    parse_pairs as parse_pairs,
    run_with_runtime as run_with_runtime,
    scope_option as scope_option,
    tty_approver as tty_approver,
    want_json as want_json,
)
