"""Instructions (``[instructions]``, ``AGENTS.md``, ``CLAUDE.md``), Claude Code agents
(subagents) and output styles for kairox.

The public API (imported lazily, so loading the plugin stays cheap): the registries of a
runtime (:func:`agents_of`, :func:`output_styles_of`), an agent to run (:func:`prepare`), a
session's output style (:func:`use_output_style`), the agents index (:func:`agents_index`),
and the file formats (:func:`parse_agent`, :func:`parse_output_style`).
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
