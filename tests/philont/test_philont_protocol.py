"""The JSON-lines protocol reader and the plugin.json fields kairox-philont reads: properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_manifests import ManifestError
from kairox_philont.adapt import bounded_stack, content_block, result_from, tool_spec
from kairox_philont.manifest import DEFAULT_MAINS, PhilontFormat, is_javascript
from kairox_philont.protocol import PREFIX, LineReader, Oversized, encode, id_of, parse


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


def expected_items(data: bytes, limit: int) -> tuple[list[bytes | tuple[int, bytes]], bytes]:
    """What a reader must give for ``data`` (the reference: split on newlines)."""
    *lines, rest = data.split(b"\n")
    out: list[bytes | tuple[int, bytes]] = []
    for line in lines:
        out.append((len(line), line[:PREFIX]) if len(line) > limit else line.rstrip(b"\r"))
    return out, rest


@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0, max_value=4000), max_size=20), st.integers(1, 200))
def test_any_bytes_split_anywhere_give_the_same_lines_and_stay_bounded(
    data: bytes, cuts: list[int], limit: int
) -> None:
    reader = LineReader(limit)
    got: list[bytes | tuple[int, bytes]] = []
    for chunk in split(data, cuts):
        for item in reader.feed(chunk):
            got.append((item.size, item.prefix) if isinstance(item, Oversized) else item)
        assert reader.buffered <= limit  # never grows past the limit
    want, rest = expected_items(data, limit)
    assert got == want
    assert reader.buffered == (len(rest) if len(rest) <= limit else 0)
    assert reader.oversized == sum(1 for w in want if isinstance(w, tuple))


@given(st.integers(2, 64), st.integers(0, 10), st.integers(1, 5000))
def test_an_endless_line_is_counted_not_kept(limit: int, lines: int, size: int) -> None:
    reader = LineReader(limit)
    for _ in range(lines):
        reader.feed(b"y" * size)
        assert reader.buffered <= limit
    items = reader.feed(b"\nok\n")
    total = lines * size
    if total > limit:
        assert items == [Oversized(b"y" * min(PREFIX, total), total), b"ok"]
    else:
        assert items == [b"y" * total, b"ok"]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_parse_takes_objects_only_and_never_raises(value: Any) -> None:
    line = json.dumps(value).encode()
    assert parse(line) == (value if isinstance(value, dict) else None)


@given(st.binary(max_size=300))
def test_parse_and_id_of_take_any_bytes(data: bytes) -> None:
    result = parse(data)
    assert result is None or isinstance(result, dict)
    mid = id_of(data)
    assert mid is None or mid >= 0


@given(st.integers(0, 10**15), st.dictionaries(st.sampled_from(["result", "value", "error"]), st.text(), max_size=3))
def test_every_answer_a_host_writes_names_its_id_first(mid: int, fields: dict[str, str]) -> None:
    line = encode({"id": mid, **fields})
    assert id_of(line[:PREFIX]) == mid
    assert parse(line.rstrip(b"\n")) == {"id": mid, **fields}


def test_a_deeply_nested_line_is_not_an_error() -> None:
    assert parse(b"[" * 100_000 + b"]" * 100_000) is None


def test_a_reader_needs_room_for_one_byte() -> None:
    with pytest.raises(ValueError):
        LineReader(0)


# -- results -----------------------------------------------------------------------------------
block = st.one_of(
    st.text(),
    st.dictionaries(
        st.sampled_from(["type", "text", "data", "mimeType", "uri", "resource", "name"]),
        st.text() | st.integers() | st.none(),
    ),
    st.integers(),
    st.none(),
)


@given(st.lists(block, max_size=6), st.booleans())
def test_any_content_list_becomes_a_result(blocks: list[Any], is_error: bool) -> None:
    result = result_from({"content": blocks, "is_error": is_error})
    assert result.is_error is is_error
    assert len(result.content) == sum(1 for b in blocks if isinstance(b, (str, dict)))
    for b in blocks:
        content_block(b)


@given(st.text(), st.text(max_size=20000))
def test_an_error_stack_is_bounded(error: str, stack: str) -> None:
    text = result_from({"error": error, "stack": stack}).text
    assert text.startswith(error) or text.startswith(bounded_stack(stack)[:20])
    assert len(text) <= len(error) + 4001


# -- plugin.json ---------------------------------------------------------------------------------
DOMAINS = ["local", "network", "system"]
CAPABILITIES = ["read", "write", "execute"]


def parse_manifest(root: Path, data: dict[str, Any]) -> Any:
    (root / "plugin.json").write_text(json.dumps(data))
    return PhilontFormat().parse(root, data, root / "plugin.json")


@given(
    st.one_of(st.none(), st.sampled_from(DOMAINS), st.text(max_size=8), st.integers()),
    st.one_of(st.none(), st.sampled_from(CAPABILITIES), st.text(max_size=8), st.booleans()),
)
def test_domain_and_capability_are_checked_and_become_the_tools_defaults(
    tmp_path_factory: pytest.TempPathFactory, domain: Any, capability: Any
) -> None:
    root = tmp_path_factory.mktemp("p")
    (root / "index.js").write_text("exports.register = () => {};\n")
    data: dict[str, Any] = {"id": "p"}
    if domain is not None:
        data["domain"] = domain
    if capability is not None:
        data["capability"] = capability
    valid = (domain is None or domain in DOMAINS) and (capability is None or capability in CAPABILITIES)
    if not valid:
        with pytest.raises(ManifestError) as info:
            parse_manifest(root, data)
        assert "plugin.json" in str(info.value)
        assert ("domain" in str(info.value)) or ("capability" in str(info.value))
        return
    manifest = parse_manifest(root, data)
    assert manifest.code.main == root / "index.js" and is_javascript(manifest.code.main)
    spec = tool_spec("p", {"name": "t"}, manifest.metadata)
    assert spec.domain.value == (domain or "system") and spec.capability.value == (capability or "execute")
    assert spec.undeclared == tuple(
        name for name, value in (("domain", domain), ("capability", capability)) if not value
    )
    own = tool_spec("p", {"name": "t", "domain": "network", "capability": "write"}, manifest.metadata)
    assert (own.domain.value, own.capability.value) == ("network", "write")  # a tool's own declaration wins
    assert own.undeclared == ()


@given(st.sampled_from(["index.js", "lib/main.mjs", "plugin.cjs", "src/index.ts", "dist/x.tsx", "main.py", "pkg.mod"]))
def test_main_of_any_language(tmp_path_factory: pytest.TempPathFactory, main: str) -> None:
    root = tmp_path_factory.mktemp("p")
    target = root / main
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("")
    if main.endswith((".ts", ".tsx")):
        with pytest.raises(ManifestError, match="TypeScript"):
            parse_manifest(root, {"id": "p", "main": main})
        return
    if main == "pkg.mod":
        (root / "pkg").mkdir(exist_ok=True)
        (root / "pkg" / "mod.py").write_text("")
    manifest = parse_manifest(root, {"id": "p", "main": main})
    assert is_javascript(manifest.code.main) == main.endswith((".js", ".mjs", ".cjs"))
    assert manifest.metadata["language"] == ("javascript" if is_javascript(manifest.code.main) else "python")


@given(st.sets(st.sampled_from(DEFAULT_MAINS), min_size=1))
def test_without_main_index_js_comes_first(tmp_path_factory: pytest.TempPathFactory, present: set[str]) -> None:
    root = tmp_path_factory.mktemp("p")
    for name in present:
        (root / name).write_text("")
    manifest = parse_manifest(root, {"id": "p"})
    assert manifest.code.main.name == next(name for name in DEFAULT_MAINS if name in present)


# -- the [philont] section -------------------------------------------------------------------------
@given(
    st.one_of(st.integers(-3, 10), st.floats(allow_nan=False), st.text(max_size=3), st.booleans()),
    st.one_of(st.floats(-1, 100, allow_nan=False), st.integers(-2, 5), st.text(max_size=3)),
    st.one_of(st.text(max_size=10), st.integers()),
)
def test_the_restart_and_node_settings_are_checked(max_restarts: Any, backoff: Any, node: Any) -> None:
    from kairox import ConfigError
    from kairox.ext import structure
    from kairox_philont.config import PhilontConfig

    data = {"max_restarts": max_restarts, "restart_backoff": backoff, "node": node}
    ok_restarts = isinstance(max_restarts, int) and not isinstance(max_restarts, bool) and max_restarts >= 0
    ok_backoff = isinstance(backoff, (int, float)) and not isinstance(backoff, bool) and backoff > 0
    ok_node = isinstance(node, str) and bool(node.strip())
    try:
        config = structure(data, PhilontConfig, path="philont", file="kairox.toml")
    except ConfigError as exc:
        assert not (ok_restarts and ok_backoff and ok_node)
        assert "kairox.toml" in str(exc) and "philont" in str(exc)
        return
    # the converter may coerce what it can (an integral float, a number as text): never a bad value
    assert config.max_restarts >= 0 and config.restart_backoff > 0 and config.node.strip()


def test_a_variable_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    """A pattern ending in ``$`` matches before a final newline: ``requiresEnv`` names are checked to their end."""
    (tmp_path / "index.js").write_text("exports.register = () => {};\n")
    with pytest.raises(ManifestError) as info:
        parse_manifest(tmp_path, {"id": "p", "requiresEnv": ["API_KEY\n"]})
    assert "plugin.json" in str(info.value) and "requiresEnv[0]" in str(info.value)
