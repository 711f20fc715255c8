"""kairox-minimal: kairox with ``kairox-tools`` and ``kairox-skills`` only.

A custom distribution is just a package whose dependencies pick the plugins:
kairox finds whatever is installed through the ``kairox`` entry-point group.
``kairox-minimal`` runs the ordinary ``kairox`` CLI restricted to the plugins
this distribution ships (``KAIROX_LOAD_PLUGINS``), so plugins that happen to be
installed next to it are not loaded unless the user asks for them.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PLUGINS", "main"]

#: entry-point names of the plugins this distribution ships
PLUGINS = ("tools", "skills")


def main(argv: list[str] | None = None) -> Any:
    os.environ.setdefault("KAIROX_LOAD_PLUGINS", ",".join(PLUGINS))
    from kairox.cli import main as kairox_main

    return kairox_main(argv)
