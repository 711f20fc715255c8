"""Property tests of the output style file parser (outside input: any bundle's ``output-styles/*.md``);
any text against it is in ``test_agents_properties.py``, with the agent parser's."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kairox.ext import OutputStyleError, parse_output_style

FILE = "/work/.claude/output-styles/my-style.md"

texts = st.text(
    st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1
)
bodies = st.text(st.characters(codec="utf-8"), min_size=1, max_size=300).filter(
    lambda b: b.strip() and not b.lstrip("\ufeff").startswith("---")
)


@given(
    st.one_of(st.none(), st.from_regex(r"[A-Za-z][A-Za-z0-9 _-]{0,20}", fullmatch=True)),
    st.one_of(st.none(), texts),
    st.one_of(st.none(), st.booleans()),
    bodies,
)
@settings(max_examples=300)
def test_a_valid_style_reads_as_written(
    name: str | None, description: str | None, keep: bool | None, body: str
) -> None:
    fields = {
        k: v
        for k, v in {"name": name, "description": description, "keep-coding-instructions": keep}.items()
        if v is not None
    }
    head = ["---", *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()), "---"] if fields else []
    style = parse_output_style("\n".join([*head, body]), FILE)
    assert style.name == ((name or "").strip() or "my-style")
    assert style.description == (description or "").strip()
    assert style.keep_coding_instructions is bool(keep)
    assert style.text == body.strip()


@given(st.one_of(st.integers(), st.text(max_size=8), st.lists(st.booleans(), max_size=2), st.floats(allow_nan=False)))
def test_keep_coding_instructions_must_be_a_boolean(value: object) -> None:
    text = f"---\nkeep-coding-instructions: {json.dumps(value)}\n---\nstyle\n"
    try:
        style = parse_output_style(text, FILE)
    except OutputStyleError as exc:
        assert exc.field == "keep-coding-instructions" and exc.file == FILE
        return
    assert isinstance(style.keep_coding_instructions, bool)
    assert str(value).strip().lower() in {"true", "yes", "on", "1", "false", "no", "off", "0", ""}


@given(st.text(max_size=300), st.text(max_size=100))
@settings(max_examples=400)
def test_any_frontmatter_is_a_style_or_an_error_naming_the_file(frontmatter: str, body: str) -> None:
    try:
        style = parse_output_style(f"---\n{frontmatter}\n---\n{body}", FILE)
    except OutputStyleError as exc:
        assert exc.file == FILE and str(exc).startswith(FILE)
        return
    assert style.text.strip()
    assert all(w.startswith(FILE) for w in style.warnings)
