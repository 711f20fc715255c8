"""The public names of :mod:`kairox_agents`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._model import (
    AgentDef as AgentDef,
    AgentError as AgentError,
    AgentPrepared as AgentPrepared,
    AgentRun as AgentRun,
    DefinitionError as DefinitionError,
    DefinitionsChanged as DefinitionsChanged,
    OutputStyle as OutputStyle,
    OutputStyleError as OutputStyleError,
    claude_tool_ids as claude_tool_ids,
)
from ._parse import (
    parse_agent as parse_agent,
    parse_output_style as parse_output_style,
)
from ._plugin import (
    AGENT_BUDGET as AGENT_BUDGET,
    AgentEntry as AgentEntry,
    agents_index as agents_index,
    agents_of as agents_of,
    available_agents_xml as available_agents_xml,
    output_style_of as output_style_of,
    output_styles_of as output_styles_of,
    prepare as prepare,
    use_output_style as use_output_style,
)
from ._provider import (
    PROVIDER_NAME as PROVIDER_NAME,
    AgentsProvider as AgentsProvider,
)
from ._registry import (
    AgentRegistry as AgentRegistry,
    DefinitionRegistry as DefinitionRegistry,
    OutputStyleRegistry as OutputStyleRegistry,
)
