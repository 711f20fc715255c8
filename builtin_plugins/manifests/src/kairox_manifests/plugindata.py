"""A plugin's data folder, and Agent Plugins' ``${PLUGIN_ROOT}`` / ``${PLUGIN_DATA}``.

Agent Plugins 1.0.0 (§9) gives every plugin subprocess ``PLUGIN_ROOT`` (the plugin's
folder) and ``PLUGIN_DATA`` (a folder of the client's, kept across updates). Kairox's is
``$KAIROX_HOME/plugin-data/<name>-<digest of the plugin's resolved root>``: one per
installed copy (two workspaces' plugins of one name never share it), the same for a copy
updated in place. It is made (mode 0700, :func:`ready_servers`) when a runtime defines the
servers of a plugin that may load (any command that opens one), never by reading a plugin's
manifest, and never for an untrusted or disabled plugin.

:func:`expand_placeholders` is §9.2's expansion: one pass over the text, each exact
``${PLUGIN_ROOT}`` / ``${PLUGIN_DATA}`` replaced, what a replacement put in never read
again, any other ``${...}`` left as it is. :func:`literal` writes a value so that kairox's
server tables (which expand ``${VAR}`` from the environment, :func:`kairox.ext.expand_env`)
keep it as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kairox.ext import user_home

if TYPE_CHECKING:
    from .model import BundleManifest, Contribution

__all__ = [
    "DATA_FOLDER",
    "PLACEHOLDERS",
    "expand_placeholders",
    "literal",
    "make_plugin_data",
    "plugin_data_dir",
    "ready_servers",
]

#: the folder of ``$KAIROX_HOME`` that holds each plugin's data folder
DATA_FOLDER = "plugin-data"
PLACEHOLDERS = ("${PLUGIN_ROOT}", "${PLUGIN_DATA}")
# two fixed alternatives, no repetition: linear on any text
_PLACEHOLDER = re.compile(r"\$\{PLUGIN_(ROOT|DATA)\}")


def plugin_data_dir(name: str, root: Path, home: Path | None = None) -> Path:
    """The data folder of the plugin ``name`` whose folder is ``root`` (``home``: the user's
    kairox home, default ``$KAIROX_HOME`` or ``~/.kairox``). Not made here."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    base = Path(home) if home is not None else user_home()
    return base / DATA_FOLDER / f"{name}-{digest}"


def make_plugin_data(path: Path) -> None:
    """Make the data folder ``path`` (and its parents) if it is not there, private to the user;
    ``OSError`` when it cannot be made, or what is there is not a folder."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")


def expand_placeholders(text: str, values: Mapping[str, str]) -> str:
    """``text`` with every exact ``${PLUGIN_ROOT}`` and ``${PLUGIN_DATA}`` replaced by
    ``values["PLUGIN_ROOT"]`` / ``values["PLUGIN_DATA"]``, in one pass (what a replacement put
    in is not scanned again); any other ``${...}`` stays as it is."""
    if "${PLUGIN_" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: values[f"PLUGIN_{m.group(1)}"], text)


def _name_start(c: str) -> bool:
    return c == "_" or (c.isascii() and c.isalpha())


def _name_char(c: str) -> bool:
    return c == "_" or (c.isascii() and c.isalnum())


def literal(text: str) -> str:
    """``text`` written for a kairox server table, where ``${NAME}`` and ``${NAME:-default}``
    expand from the environment and ``$${`` is a literal ``${``: each reference kairox would
    expand gets its ``$`` doubled, so the table gives back ``text`` exactly.

    A hand-written scan rather than a regular expression: a reference with a default runs to
    the next ``}``, and looking for it again at each ``${`` would cost the square of the
    text's length; the next ``}`` is found once per stretch of text."""
    if "${" not in text:
        return text
    out: list[str] = []
    i, n, brace = 0, len(text), -1
    while True:
        j = text.find("${", i)
        if j < 0:
            break
        k, end = j + 2, -1
        if k < n and _name_start(text[k]):
            k += 1
            while k < n and _name_char(text[k]):
                k += 1
            if k < n and text[k] == "}":
                end = k + 1
            elif text.startswith(":-", k):
                if brace < k:
                    brace = text.find("}", k)
                    if brace < 0:
                        brace = n  # no "}" after this: no reference with a default from here on
                end = brace + 1 if brace < n else -1
        if end < 0:
            out.append(text[i : j + 2])
            i = j + 2
            continue
        out.append(text[i:j])
        out.append("$")
        out.append(text[j:end])
        i = end
    out.append(text[i:])
    return "".join(out)


def ready_servers(
    manifest: BundleManifest, servers: Sequence[Contribution]
) -> tuple[list[Contribution], dict[str, str]]:
    """Make the data folder of ``manifest`` (its ``metadata["pluginData"]``) before its servers
    are defined (§9.1: before a subprocess starts). Returns the servers that may go on, and
    for each server told of the folder, when it cannot be made, why it may not (the other
    servers and the rest of the plugin still load)."""
    where = manifest.metadata.get("pluginData")
    if not isinstance(where, str):
        return list(servers), {}
    try:
        make_plugin_data(Path(where))
    except OSError as exc:
        told = literal(where)
        failed = {
            c.key: f"its data folder {where} cannot be made: {exc}"
            for c in servers
            if isinstance(c.config, dict) and (c.config.get("env") or {}).get("PLUGIN_DATA") == told
        }
        return [c for c in servers if c.key not in failed], failed
    return list(servers), {}
