"""Bounded YAML: ``yaml.safe_load`` for documents from outside, with limits.

A few hundred bytes of YAML can stand for gigabytes: an alias is a reference,
so nine levels of nine aliases (the "billion laughs") compose to ninety nodes
but expand to 9**9 copies as soon as anything walks the result (copying it,
writing it as JSON). :func:`safe_load_bounded` composes the document, measures
it with every alias counted as a copy of what it names, and refuses it with a
:class:`YamlLimitError` before anything is constructed when

- the text is longer than ``max_length`` characters,
- it uses more than ``max_aliases`` aliases,
- its aliases stand for more than ``max_nodes`` nodes or ``max_chars``
  characters of scalar text in all (nested aliases counted as copies too),
- its collections nest deeper than ``max_depth`` (also through aliases), or
- an alias names a collection that holds it (a recursive structure).

A document without aliases is bounded by its length alone. Every other
document gets exactly what ``yaml.safe_load`` returns, or the same
``yaml.YAMLError``. Two scalars whose construction is superlinear in their
length (a decimal integer of more than 4,300 digits, a base-60 integer of
more than 64 parts) are refused as well.

PyYAML is imported on the first call, never when this module is imported.
"""

from __future__ import annotations

import functools
from typing import Any

from kairox import KairoxError
from kairox.files import MAX_DOCUMENT_DEPTH

__all__ = [
    "MAX_ALIASES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "MAX_NODES",
    "YamlLimitError",
    "safe_load_bounded",
]

#: frontmatter and manifests use a handful of anchors, if any
MAX_ALIASES = 100
#: nodes that aliases may stand for, in all (the billion laughs passes it at its fifth level)
MAX_NODES = 10_000
#: characters of scalar text that aliases may stand for, in all
MAX_CHARS = 1 << 20
#: nested collections: the one bound of every document parser (:data:`kairox.files.MAX_DOCUMENT_DEPTH`)
MAX_DEPTH = MAX_DOCUMENT_DEPTH
#: characters of text
MAX_LENGTH = 1 << 20

_MAX_DECIMAL_DIGITS = 4300  # CPython's default int max str digits (3.11+); 3.10 converts in quadratic time
_MAX_BASE60_PARTS = 64


class YamlLimitError(KairoxError, ValueError):
    """A YAML document exceeds a limit of :func:`safe_load_bounded`.

    ``problem`` says which; ``problem_mark`` (a ``yaml.Mark`` with 0-based
    ``line`` and ``column``, or ``None``) says where, as a ``yaml.MarkedYAMLError`` does.
    """

    context: str | None = None
    context_mark: Any = None

    def __init__(self, problem: str, mark: Any = None) -> None:
        self.problem = problem
        self.problem_mark = mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        super().__init__(f"{problem}{where}")


def safe_load_bounded(
    text: str,
    *,
    max_aliases: int = MAX_ALIASES,
    max_nodes: int = MAX_NODES,
    max_chars: int = MAX_CHARS,
    max_depth: int = MAX_DEPTH,
    max_length: int = MAX_LENGTH,
) -> Any:
    """What ``yaml.safe_load(text)`` returns, or :class:`YamlLimitError` (see the module docstring).

    Parse errors are the ``yaml.YAMLError`` that ``yaml.safe_load`` raises.
    Time and memory are linear in ``len(text)`` plus the limits.
    """
    limits = _Limits(max_aliases, max_nodes, max_chars, max_depth)
    return _load(text, _loader_class(), limits, max_length)


@functools.lru_cache(maxsize=1)
def _loader_class() -> type[Any]:
    """libyaml's composer when it limits nesting itself (libyaml 0.2.5 and later), else
    a Python composer that counts the depth (over libyaml's events when there is libyaml)."""
    import yaml

    c_loader = getattr(yaml, "CSafeLoader", None)
    if c_loader is None:  # pragma: no cover - PyYAML without libyaml
        return _loader_classes()[0]
    try:
        yaml.load("[" * 1100 + "]" * 1100, Loader=c_loader)
    except yaml.YAMLError:
        return _loader_classes()[1]
    return _loader_classes()[2]  # pragma: no cover - an old libyaml


@functools.lru_cache(maxsize=1)
def _loader_classes() -> tuple[type[Any], type[Any], type[Any]]:
    """``(pure Python, libyaml, libyaml events with the Python composer)`` loader classes."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.resolver import Resolver
    from yaml.scanner import Scanner

    class _Constructor(SafeConstructor):
        def construct_yaml_int(self, node: Any) -> Any:
            value = str(node.value)
            if len(value) > _MAX_DECIMAL_DIGITS or value.count(":") >= _MAX_BASE60_PARTS:
                raise YamlLimitError("an integer too long to convert in bounded time", node.start_mark)
            return super().construct_yaml_int(node)

    _Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # type: ignore[type-var]

    class _DepthComposer(Composer):
        """PyYAML's composer, refusing collections nested deeper than ``max_depth``
        (it recurses once per level: a deep document would exhaust the stack)."""

        max_depth = MAX_DEPTH
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            events: Any = self  # the parser's methods, mixed in beside this class
            if self._depth >= self.max_depth and not events.check_event(yaml.ScalarEvent, yaml.AliasEvent):
                mark = events.peek_event().start_mark
                raise YamlLimitError(f"collections nest deeper than {self.max_depth} levels", mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    class PythonLoader(Reader, Scanner, Parser, _DepthComposer, _Constructor, Resolver):
        def __init__(self, stream: Any) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            _DepthComposer.__init__(self)
            _Constructor.__init__(self)
            Resolver.__init__(self)

    c_parser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None)
    if c_parser is None:  # pragma: no cover - PyYAML without libyaml
        return PythonLoader, PythonLoader, PythonLoader

    class CLoader(c_parser, _Constructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: Any) -> None:
            c_parser.__init__(self, stream)
            _Constructor.__init__(self)
            Resolver.__init__(self)

    class CEventsLoader(_DepthComposer, c_parser, _Constructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: Any) -> None:
            c_parser.__init__(self, stream)
            _DepthComposer.__init__(self)
            _Constructor.__init__(self)
            Resolver.__init__(self)

    return PythonLoader, CLoader, CEventsLoader


class _Limits:
    __slots__ = ("aliases", "chars", "depth", "nodes")

    def __init__(self, aliases: int, nodes: int, chars: int, depth: int) -> None:
        self.aliases = aliases
        self.nodes = nodes
        self.chars = chars
        self.depth = depth


def _load(text: str, loader_class: type[Any], limits: _Limits, max_length: int) -> Any:
    if len(text) > max_length:
        raise YamlLimitError(f"the document is longer than {max_length} characters")
    loader = loader_class(text)
    loader.max_depth = limits.depth
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, limits)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _measure(root: Any, limits: _Limits) -> None:
    """Refuse the composed graph at ``root`` if, expanded, it exceeds ``limits``.

    Iterative and memoised per node, so linear in the composed graph: a node
    met a second time is an alias, and its expanded size is already known.
    """
    from yaml.nodes import MappingNode, ScalarNode

    # id(node) -> (nodes, characters, height) of its expansion
    sizes: dict[int, tuple[int, int, int]] = {}
    open_: set[int] = set()  # the collections on the current path
    used = [0, 0, 0]  # aliases, the nodes and the characters they stand for

    def alias(node: Any, size: tuple[int, int, int]) -> None:
        used[0] += 1
        used[1] += size[0]
        used[2] += size[1]
        if used[0] > limits.aliases:
            raise YamlLimitError(f"the document uses more than {limits.aliases} aliases", node.start_mark)
        if used[1] > limits.nodes:
            problem = f"aliases stand for more than {limits.nodes} nodes (each alias counts as a copy)"
            raise YamlLimitError(problem, node.start_mark)
        if used[2] > limits.chars:
            problem = f"aliases stand for more than {limits.chars} characters of text (each alias counts as a copy)"
            raise YamlLimitError(problem, node.start_mark)

    if isinstance(root, ScalarNode):
        return
    # (collection, None) to enter it; (collection, its children) to leave it
    stack: list[tuple[Any, list[Any] | None]] = [(root, None)]
    while stack:
        node, children = stack.pop()
        key = id(node)
        if children is not None:
            open_.discard(key)
            nodes, chars, height = 1, 0, 0
            for child in children:
                n, c, h = sizes[id(child)]
                nodes += n
                chars += c
                if h > height:
                    height = h
            height += 1
            if height > limits.depth:
                raise YamlLimitError(f"collections nest deeper than {limits.depth} levels", node.start_mark)
            sizes[key] = (nodes, chars, height)
            continue
        seen = sizes.get(key)
        if seen is not None:
            alias(node, seen)
            continue
        if key in open_:
            raise YamlLimitError("an alias names a collection that holds it (a recursive structure)", node.start_mark)
        open_.add(key)
        children = [n for pair in node.value for n in pair] if isinstance(node, MappingNode) else list(node.value)
        stack.append((node, children))
        for child in reversed(children):
            if isinstance(child, ScalarNode):  # measured here (which occurrence counts as the alias is all one)
                size = sizes.get(id(child))
                if size is None:
                    sizes[id(child)] = (1, len(child.value), 0)
                else:
                    alias(child, size)
            else:
                stack.append((child, None))
