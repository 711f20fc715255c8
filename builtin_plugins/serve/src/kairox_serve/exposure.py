"""What the gateway shows of its runtime: the one place where ``[serve]``'s ``tools`` /
``deny_tools`` and ``skills`` / ``deny_skills`` apply.

Every route of the gateway asks an :class:`Exposure`, and nothing else, what there is:
``tools/list`` and ``tools/call`` (a hidden tool is an unknown one), ``prompts/list`` and
``prompts/get``, ``resources/list`` and ``resources/read`` (a hidden skill's files are not
there), and the ``list_changed`` notifications (a change a client cannot see is not
announced); and what of a backend MCP server's prompts, resources and completions is
forwarded (:mod:`kairox_serve.backends`).

A backend's prompt or resource is namespaced as its tools are (``<prefix>.<name>``, exported
``<prefix>_<name>``) and passes the same ``tools`` / ``deny_tools`` globs under that name. A
backend one of whose tools ``deny_tools`` or the policy denies forwards nothing besides: the
process that serves the denied tool serves its prompts and resources too, and may do in a
``prompts/get`` or ``resources/read`` what the tool would have done.

The kernel's own tools (``tools.search``, ``skills.search``, of the ``kairox`` provider) are
never exposed: they describe the whole runtime (every tool and skill, with the skill's file
on this machine), not what ``[serve]`` lets through, and they exist to find what a turn's
budget left out of a model's lists, where a client of the gateway gets complete ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from kairox import Runtime, ToolSpec
from kairox.ext import SkillDef

from .config import ServeConfig, matches

__all__ = ["KERNEL_PROVIDER", "Exposure"]

#: the kernel's tool provider (``tools.search``, ``skills.search``)
KERNEL_PROVIDER = "kairox"


class Exposure:
    """The tools and skills of ``runtime`` that ``config`` exposes, as they are now; after a
    change of the registries, :meth:`tools_changed` / :meth:`skills_changed` take the new
    ones and say whether a client could tell."""

    def __init__(self, runtime: Runtime, config: ServeConfig) -> None:
        self.rt = runtime
        self.config = config
        self._tools = self._exposed_tools()
        self._skills = self._exposed_skills()

    # -- tools -----------------------------------------------------------------------
    def tools(self) -> Mapping[str, ToolSpec]:
        """Exported name -> spec of every exposed tool."""
        return self._tools

    def tool(self, exported_name: str) -> ToolSpec | None:
        """The exposed tool of that exported name, else ``None`` (hidden or missing alike)."""
        return self.tools().get(exported_name)

    def _exposed_tools(self) -> dict[str, ToolSpec]:
        kernel = {spec.id for spec in self.rt.tools.by_provider(KERNEL_PROVIDER)}
        return {
            spec.exported_name: spec
            for spec in self.rt.tools.specs()
            if spec.exported_name and spec.id not in kernel and self.config.exposes_tool(spec.exported_name, spec.id)
        }

    def tools_changed(self) -> bool:
        """After a change of the registry: whether the exposed tools changed with it."""
        before, self._tools = self._tools, self._exposed_tools()
        return before != self._tools

    # -- backend servers ---------------------------------------------------------------------
    def exposes_backend(self, server: str) -> bool:
        """Whether the backend MCP server ``server`` may forward prompts, resources and
        completions: none of its tools is denied (by ``[serve] deny_tools``, or by the policy
        for every call)."""
        for spec in self.rt.tools.by_provider(f"mcp:{server}"):
            if matches(self.config.deny_tools, (spec.exported_name or spec.id, spec.id)):
                return False
            if self.rt.policy.decide(spec, {}).kind == "deny":
                return False
        return True

    def exposes_backend_item(self, canonical: str, exported: str) -> bool:
        """Whether a backend's prompt or resource of that namespaced name passes ``[serve]``'s
        ``tools`` / ``deny_tools`` globs."""
        return self.config.exposes_tool(exported, canonical)

    # -- skills --------------------------------------------------------------------------
    def skills(self) -> list[SkillDef]:
        """The exposed skills a client is offered: enabled, model-invocable, allowed by ``[serve]``."""
        return self._skills

    def skill(self, name: str) -> SkillDef | None:
        """The exposed skill ``name`` (enabled and allowed by ``[serve]``; one a user invokes
        by name, not listed, counts), else ``None`` (hidden or missing alike)."""
        skill = self.rt.skills.get(name)
        if skill is None or not self.rt.skills.is_enabled(name) or not self.config.exposes_skill(name):
            return None
        return skill

    def _exposed_skills(self) -> list[SkillDef]:
        return [s for s in self.rt.skills.skills() if self.config.exposes_skill(s.name)]

    def skills_changed(self, names: tuple[str, ...]) -> bool:
        """After the skills ``names`` changed: whether a client could see it (an exposed
        skill came, went or changed; a skill's files are read when listed, so its name
        counts)."""
        before, self._skills = self._skills, self._exposed_skills()
        seen = {s.name for s in before} | {s.name for s in self._skills}
        return before != self._skills or any(name in seen for name in names)
