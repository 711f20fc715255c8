"""Kairox tools as agent frameworks' tools: every call goes through the session's policy,
hooks and approver (:meth:`kairox.Session.call_tool`).

Each framework has its own submodule, which imports that framework; importing this
package imports neither:

- :mod:`kairox_adapters.pydantic_ai`: ``KairoxToolset(session)``, a pydantic-ai toolset
  (extra ``kairox-adapters[pydantic-ai]``);
- :mod:`kairox_adapters.openai_agents`: ``tools(session)``, openai-agents function tools
  (extra ``kairox-adapters[openai-agents]``).
"""

from __future__ import annotations

__all__: list[str] = []
