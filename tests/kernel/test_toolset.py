"""kairox.declare.ToolSet: tools from functions, the schema from the signature, the descriptions
from the docstring, the arguments checked by the call pipeline before the function runs."""

from __future__ import annotations

import enum
import re
import subprocess
import sys
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, Optional, Union

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox import PolicyDenied, ToolContext, ToolResult
from kairox.declare import ToolSet, schema_from_signature, tools
from kairox.ext import Registrar, build_plugin_host
from kairox_testing import KairoxHarness, make_plugin

pytestmark = pytest.mark.anyio


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list, {"type": "array"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (dict, {"type": "object"}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (Mapping[str, Any], {"type": "object", "additionalProperties": {}}),
        (Optional[str], {"type": ["string", "null"]}),
        (Union[int, str], {"type": ["integer", "string"]}),
        (Optional[list[str]], {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (Color, {"type": "string", "enum": ["red", "blue"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
    ],
)
def test_each_annotation_s_schema(annotation: Any, schema: dict[str, Any]) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"x": annotation}
    assert schema_from_signature(fn)["properties"] == {"x": schema}


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | Y annotations")
def test_a_union_written_with_a_bar() -> None:
    def fn(x: int | None) -> None:
        pass

    assert schema_from_signature(fn)["properties"]["x"] == {"type": ["integer", "null"]}


def test_defaults_required_and_no_other_argument() -> None:
    def fn(path: str, color: Color = Color.BLUE, limit: int | None = None, context: Any = None) -> None:
        pass

    assert schema_from_signature(fn) == {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "limit": {"type": ["integer", "null"], "default": None},
        },
        "required": ["path"],
        "additionalProperties": False,
    }


def test_kwargs_accept_other_arguments_of_their_type() -> None:
    def fn(path: str, **more: int) -> None:
        pass

    assert schema_from_signature(fn)["additionalProperties"] == {"type": "integer"}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def fn(p: set[str]): pass", "fn: parameter 'p': no JSON schema for set"),
        ("def fn(p: dict[int, str]): pass", "fn: parameter 'p': the keys of a JSON object are strings"),
        ("def fn(p: 'Nowhere'): pass", "fn: cannot resolve its annotations: NameError"),
        ("def fn(p, /): pass", "fn: parameter 'p' cannot be passed by name"),
        ("def fn(*p): pass", "fn: parameter 'p' cannot be passed by name"),
        ("def fn(p: list = []): pass", "fn: parameter 'p': [] is not a JSON value"),
    ],
)
def test_a_signature_no_json_matches_is_refused_naming_the_parameter(source: str, message: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match=re.escape(message)):
        ToolSet("x").tool()(namespace["fn"])


def test_descriptions_from_a_google_docstring() -> None:
    toolset = ToolSet("notes")

    @toolset.tool(domain="local", capability="read")
    def count(text: str, unique: bool = False, context: ToolContext | None = None) -> int:
        """Count the words of a text.

        Splits on white space.

        Args:
            text: the text
                to count.
            unique (bool): count each word once.

        Returns:
            how many words.
        """
        return 0

    [tool] = toolset
    assert count.__name__ == "count"  # the function itself is returned
    assert tool.spec.description == "Count the words of a text.\n\nSplits on white space."
    assert tool.spec.input_schema["properties"] == {
        "text": {"type": "string", "description": "the text to count."},
        "unique": {"type": "boolean", "description": "count each word once.", "default": False},
    }
    assert (tool.spec.id, tool.spec.domain.value, tool.spec.capability.value) == ("notes.count", "local", "read")


def test_descriptions_from_a_numpy_docstring() -> None:
    def fn(a: int, b: str) -> None:
        """Add things.

        Parameters
        ----------
        a : int
            the first.
        b : str
            the second,
            on two lines.
        """

    assert schema_from_signature(fn)["properties"] == {
        "a": {"type": "integer", "description": "the first."},
        "b": {"type": "string", "description": "the second, on two lines."},
    }


@given(st.text(max_size=400))
def test_any_docstring_is_read_without_error(doc: str) -> None:
    def fn(a: int) -> None:
        pass

    fn.__doc__ = doc
    toolset = ToolSet("x")
    toolset.tool()(fn)
    [tool] = toolset
    jsonschema.Draft202012Validator.check_schema(tool.spec.input_schema)


def test_a_tool_set_refuses_two_tools_of_one_name() -> None:
    toolset = ToolSet("x")
    toolset.tool(name="same")(lambda: None)
    with pytest.raises(ValueError, match=re.escape("has a tool 'x.same' already")):
        toolset.tool(name="same")(lambda: None)


def test_a_decorator_used_twice_gives_each_function_its_own_schema() -> None:
    toolset = ToolSet("x")
    declare = toolset.tool(domain="local", capability="read")

    def first(a: int) -> None:
        pass

    def second(b: str) -> None:
        pass

    declare(first)
    declare(second)
    assert {tool.spec.id: list(tool.spec.input_schema["properties"]) for tool in toolset} == {
        "x.first": ["a"],
        "x.second": ["b"],
    }


def test_what_the_decorator_declares_is_checked_where_the_tool_is_declared() -> None:
    def fn() -> None:
        pass

    with pytest.raises(ValueError, match="'nowhere' is not a valid Domain"):
        ToolSet("x").tool(domain="nowhere")(fn)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        ToolSet("x").tool(colour="red")(fn)


DECLARE_THEN_READ = '''
import sys
from kairox.declare import ToolSet

tools = ToolSet("x")

@tools.tool()
def fn(a: int) -> None:
    """Do a thing.

    Args:
        a: how many.
    """

[tool] = tools
print("docstring_parser" in sys.modules)
print(tool.spec.description, "/", tool.spec.input_schema["properties"]["a"]["description"])
print("docstring_parser" in sys.modules)
'''


def test_the_docstring_is_read_when_the_spec_is_first_read() -> None:
    # kairox plugins imports the module that declares the tools and reads no spec: the
    # docstring parser stays out (a fresh interpreter: this one has imported it already)
    out = subprocess.run([sys.executable, "-c", DECLARE_THEN_READ], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["False", "Do a thing. / how many.", "True"]


# -- in a runtime -------------------------------------------------------------------------------
MODULE = "kairox_toolset_fixture"


@pytest.fixture
def notes() -> Iterator[types.ModuleType]:
    """A module holding a tool set, that records what its tools were given."""
    module = types.ModuleType(MODULE)
    module.calls = []  # type: ignore[attr-defined]
    toolset = ToolSet("notes")

    @toolset.tool(domain="local", capability="read")
    def count(text: str, color: Color = Color.RED, colors: Optional[list[Color]] = None) -> dict[str, Any]:
        """Count the words of a text."""
        module.calls.append((text, color, colors, threading.current_thread() is threading.main_thread()))  # type: ignore[attr-defined]
        return {"words": len(text.split()), "color": color.name}

    @toolset.tool(name="progress", domain="local", capability="read")
    async def report(steps: int, context: ToolContext) -> ToolResult:
        for step in range(steps):
            await context.report_progress(step + 1, steps)
        return ToolResult.from_text(f"{steps} steps", is_error=steps == 0)

    @toolset.tool()
    def undeclared() -> str:
        return "ran"

    module.tools = toolset  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    yield module
    sys.modules.pop(MODULE, None)


def hooks() -> object:
    return make_plugin("notes", kairox_register_tool_providers=tools(f"{MODULE}:tools"))


async def test_a_tool_set_registered_in_one_line(kairox_harness: KairoxHarness, notes: types.ModuleType) -> None:
    async with kairox_harness.open(plugins=[hooks()]) as rt:
        result = await rt.call_tool("notes.count", {"text": "one two three", "colors": ["blue"]})
        assert result.structured == {"words": 3, "color": "RED"}
        # the Enum's values arrive as its members; a plain def runs in a worker thread
        assert notes.calls == [("one two three", Color.RED, [Color.BLUE], False)]
        progress: list[tuple[float, float | None]] = []
        done = await rt.call_tool("notes_progress", {"steps": 2}, progress=lambda p, t, m: progress.append((p, t)))
        assert (done.text, progress) == ("2 steps", [(1, 2), (2, 2)])
        assert (await rt.call_tool("notes.progress", {"steps": 0})).is_error
        spec = rt.tools.get_spec("notes.undeclared")
        assert (spec.domain.value, spec.capability.value, spec.provider) == ("system", "execute", "notes")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"text": 3}, "text: 3 is not of type 'string'"),
        ({}, "'text' is a required property"),
        ({"text": "a", "color": "green"}, "color: 'green' is not one of ['red', 'blue']"),
        ({"text": "a", "extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
        ({"text": "a", "colors": ["red", 5]}, 'colors: ["red", 5] is not valid under any of the given schemas'),
    ],
)
async def test_arguments_that_do_not_match_never_reach_the_function(
    kairox_harness: KairoxHarness, notes: types.ModuleType, arguments: dict[str, Any], message: str
) -> None:
    async with kairox_harness.open(plugins=[hooks()]) as rt:
        result = await rt.call_tool("notes.count", arguments)
    assert result.is_error and notes.calls == []
    assert result.text.startswith("invalid arguments for notes.count: ")
    assert message.replace('"', "'") in result.text.replace('"', "'")


async def test_a_tool_that_declares_nothing_is_asked_about(
    kairox_harness: KairoxHarness, notes: types.ModuleType
) -> None:
    async with kairox_harness.open(plugins=[hooks()]) as rt:
        with pytest.raises(PolicyDenied):  # system/execute: asked, and nobody can be asked here
            await rt.call_tool("notes.undeclared", {})


def test_a_target_that_does_not_load_or_is_no_tool_set_is_that_plugin_s_failure(notes: types.ModuleType) -> None:
    missing = make_plugin("missing", kairox_register_tool_providers=tools("kairox_toolset_missing_fixture:tools"))
    wrong = make_plugin("wrong", kairox_register_tool_providers=tools(f"{MODULE}:calls"))
    good = make_plugin("good", kairox_register_tool_providers=tools(f"{MODULE}:tools"))
    host = build_plugin_host(plugins=[missing, wrong, good], load_entrypoints=False)
    assert host.failures == []  # declaring imports nothing: the hook does, when it runs
    registrar: Registrar[Any] = host.dispatch.register_tool_providers(Registrar("tool provider"), None)  # type: ignore[arg-type]
    assert "notes" in [p.name for p in registrar]
    errors = sorted(f.error for f in host.failures)
    assert "No module named 'kairox_toolset_missing_fixture'" in errors[0]
    assert "kairox_toolset_fixture:calls is a list, not a kairox.declare.ToolSet" in errors[1]
    with pytest.raises(ValueError, match="at least one target"):
        tools()
