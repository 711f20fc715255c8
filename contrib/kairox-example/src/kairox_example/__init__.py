"""kairox-example: the plugin extension authors copy.

- ``hooks.py``: the hook implementations (and nothing else);
- ``config.py``: the ``[example]`` section of ``kairox.toml``;
- ``tools.py``: ``example.wordcount`` and ``example.checksum``, a ``ToolSet`` of two functions;
- ``guard.py``: a ``pre_tool_call`` check that blocks calls naming protected files;
- ``cli.py``: ``kairox example ...`` commands.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
