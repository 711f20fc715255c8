"""Claude's template syntax: how Claude commands and Claude skills take their arguments.

A skill that declares the argument :data:`ARGUMENTS` (every Claude command and Claude skill
does) is rendered by :func:`render_claude`, the :attr:`~kairox.ext.SkillDef.template` the
sources of this package give it; any other skill keeps kairox's ``{{ name }}`` syntax.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from kairox.ext import PLACEHOLDER, SkillFrontmatter, Template, format_value, render_template

__all__ = ["ARGUMENTS", "render_claude", "template_for"]

#: the argument that carries a Claude command's (or Claude skill's) whole argument string
ARGUMENTS = "ARGUMENTS"
#: ``{{ name }}`` (groups 1-2) or a Claude ``$ARGUMENTS`` / ``$ARGUMENTS[N]`` / ``$N`` (groups 3-5)
_WITH_DOLLAR = re.compile(
    PLACEHOLDER.pattern + r"|(\\?)\$(?:ARGUMENTS\[([0-9]+)\]|ARGUMENTS(?![A-Za-z0-9_])|([1-9])(?![0-9]))"
)


def _positional(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unclosed quote: split on blanks
        return text.split()


def render_claude(body: str, values: Mapping[str, Any]) -> str:
    """Replace ``{{ name }}`` for each name in ``values`` and Claude's spellings of
    :data:`ARGUMENTS`: ``$ARGUMENTS`` (the whole string), ``$ARGUMENTS[0]`` and
    ``$1``..``$9`` (its shell-split words, ``$1`` the first); ``\\$ARGUMENTS`` and
    ``\\{{ name }}`` stay literal. A non-empty value the body never mentions is appended
    as ``ARGUMENTS: value`` (as Claude Code does). Each placeholder is replaced once: a
    value is never read for placeholders again."""
    if ARGUMENTS not in values:
        return render_template(body, values)
    whole = format_value(values.get(ARGUMENTS))
    words = _positional(whole)
    used = False

    def repl(m: re.Match[str]) -> str:
        nonlocal used
        name = m.group(2)
        if name is not None:  # {{ name }}
            if name not in values:
                return m.group(0)
            if m.group(1):
                return m.group(0)[1:]
            used = used or name == ARGUMENTS
            return format_value(values[name])
        if m.group(3):
            return m.group(0)[1:]
        used = True
        index, digit = m.group(4), m.group(5)
        if index is None and digit is None:
            return whole
        i = int(index) if index is not None else int(digit) - 1
        return words[i] if 0 <= i < len(words) else ""

    text = _WITH_DOLLAR.sub(repl, body)
    if whole and not used:
        text = f"{text.rstrip()}\n\nARGUMENTS: {whole}\n"
    return text


def template_for(frontmatter: SkillFrontmatter) -> Template | None:
    """:func:`render_claude` for a skill that declares :data:`ARGUMENTS`, else ``None``
    (kairox's ``{{ name }}``)."""
    return render_claude if frontmatter.argument(ARGUMENTS) is not None else None
