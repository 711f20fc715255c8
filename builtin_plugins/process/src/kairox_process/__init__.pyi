"""The public names of :mod:`kairox_process`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._children import (
    describe_exit as describe_exit,
    group_alive as group_alive,
    kill_group as kill_group,
    kill_session as kill_session,
    open_group as open_group,
    protect_environment as protect_environment,
    reap as reap,
    scripts_dir as scripts_dir,
    server_env as server_env,
    session_members as session_members,
    wait_group_gone as wait_group_gone,
    wait_session_gone as wait_session_gone,
)
from ._restarts import (
    MAX_BACKOFF as MAX_BACKOFF,
    RESET_AFTER as RESET_AFTER,
    Failure as Failure,
    Restarts as Restarts,
)
from ._tail import (
    OutputTail as OutputTail,
)
