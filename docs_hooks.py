"""The documentation site's glue: a mkdocs hook and a griffe extension (both named in mkdocs.yml).

- docs/*.md link to files of the repository outside docs/ (``../contrib/kairox-minimal``):
  links that work where the repository is browsed but lead to no page of the site, so there
  each becomes its text. A link whose target does not exist is left alone, for
  ``mkdocs build --strict`` to fail on.
- The docstrings are written for Sphinx (``:class:`~kairox.ToolSpec```, ``text::`` before a
  literal block) and rendered as Markdown: a role becomes a code span of its target
  (``~`` keeps the last name), ``::`` a colon.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

# [text](../path) with no title, anchor or space in the target: how docs/*.md write these links
OUTSIDE_LINK = re.compile(r"\[([^\]\n]+)\]\((\.\./[^)#\s]+)\)")
ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`\n]+)`")
LITERAL_BLOCK = re.compile(r"(\S) ?::$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    repo = docs.parent
    here = Path(page.file.abs_src_path).parent

    def unlink(match: re.Match[str]) -> str:
        target = (here / match[2]).resolve()
        outside_docs = not target.is_relative_to(docs)
        if outside_docs and target.is_relative_to(repo) and target.exists():
            return match[1]
        return match[0]

    return OUTSIDE_LINK.sub(unlink, markdown)


def _code_span(match: re.Match[str]) -> str:
    target = match[2].removesuffix("()")
    return f"`{target.rsplit('.', 1)[-1] if match[1] else target}`"


def markdown_docstring(text: str) -> str:
    """A Sphinx-flavoured docstring as Markdown: roles as code spans, ``::`` as ``:``."""
    return LITERAL_BLOCK.sub(r"\1:", ROLE.sub(_code_span, text))


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring of a loaded package with :func:`markdown_docstring`."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._rewrite(pkg, set())

    def _rewrite(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._rewrite(member, seen)
