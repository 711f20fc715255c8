"""Built-in tools: fs.read, fs.write, fs.list, shell.exec, search.grep.

Registered through the ``kairox`` entry point (``kairox_tools.hooks``) as the
``builtin-tools`` provider; configured by the optional ``[tools]`` section.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
