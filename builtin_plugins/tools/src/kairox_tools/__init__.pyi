"""The public names of :mod:`kairox_tools`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._base import (
    BuiltinTool as BuiltinTool,
    ToolEnv as ToolEnv,
)
from ._builtin import (
    BUILTIN_TOOLS as BUILTIN_TOOLS,
    builtin_tools as builtin_tools,
)
from ._config import (
    TOOL_IDS as TOOL_IDS,
    ToolsConfig as ToolsConfig,
)
from ._fs import (
    FsList as FsList,
    FsRead as FsRead,
    FsWrite as FsWrite,
)
from ._grep import (
    SearchGrep as SearchGrep,
)
from ._provider import (
    BuiltinToolsProvider as BuiltinToolsProvider,
)
from ._shell import (
    ShellExec as ShellExec,
)
