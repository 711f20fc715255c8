"""Output styles: ``[instructions] output_style`` (or ``kairox_agents.use_output_style``) adds the
style's text to each turn's context, labelled with its source; unknown names are config problems."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kairox import ConfigError, ContextPiece
from kairox_agents import output_styles_of, use_output_style
from kairox_testing import KairoxHarness

BUNDLE = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "claude" / "agents-and-styles"
PLUGIN = "agents-and-styles"
TEACHING = BUNDLE / "output-styles" / "teaching.md"


def install_bundle(harness: KairoxHarness) -> Path:
    (harness.home / "plugins").mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(BUNDLE, harness.home / "plugins" / PLUGIN))


def style_of(tc: Any) -> ContextPiece | None:
    """The output style piece of a turn context (``None``: no style)."""
    found = [p for p in tc.injected if p.title.startswith("output style ")]
    assert len(found) <= 1
    return found[0] if found else None


def write_style(harness: KairoxHarness, name: str, text: str) -> Path:
    folder = harness.workspace / ".claude" / "output-styles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.anyio
async def test_the_configured_style_ends_the_instructions_with_its_source(kairox_harness: KairoxHarness) -> None:
    root = install_bundle(kairox_harness)
    (kairox_harness.workspace / "AGENTS.md").write_text("Run the tests.\n")
    kairox_harness.write_config('[instructions]\noutput_style = "teaching"\n')
    async with kairox_harness.open(start=False) as rt:
        styles = {s.name: s for s in output_styles_of(rt).all()}
        assert sorted(styles) == [f"{PLUGIN}:Teaching", f"{PLUGIN}:terse"]  # frontmatter name, else the file's
        teaching = styles[f"{PLUGIN}:Teaching"]
        assert teaching.keep_coding_instructions is True
        assert teaching.description == "Explains the why behind each change, with short insights"
        assert (
            styles[f"{PLUGIN}:terse"].description == "" and styles[f"{PLUGIN}:terse"].keep_coding_instructions is False
        )
        assert rt.config.errors == []
        async with rt.session() as session:
            tc = await session.turn_context("add a cache")
    assert [i.scope for i in tc.instructions] == ["workspace"]
    style = style_of(tc)
    assert style is not None and style.text.startswith("# Teaching style")
    assert (style.source, style.title) == (
        str(root / "output-styles" / "teaching.md"),
        f"output style {PLUGIN}:Teaching",
    )
    assert f"<!-- context from {style.source} output style {PLUGIN}:Teaching -->\n# Teaching style" in tc.render()


@pytest.mark.anyio
async def test_a_session_chooses_its_own_style(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    path = write_style(kairox_harness, "pirate", "Answer like a pirate.\n")
    kairox_harness.write_config('[instructions]\noutput_style = "teaching"\n', where="user")
    async with kairox_harness.open(start=False) as rt:
        async with rt.session() as session:
            assert use_output_style(session, "pirate") is not None
            style = style_of(await session.turn_context("hi"))
            assert style is not None and (style.title, style.text) == ("output style pirate", "Answer like a pirate.")
            assert style.source == str(path)
        async with rt.session() as session:  # Claude Code's Default: no style
            assert use_output_style(session, "default") is None
            assert style_of(await session.turn_context("hi")) is None
        async with rt.session() as session:  # the user's configured one
            style = style_of(await session.turn_context("hi"))
            assert style is not None and style.title == f"output style {PLUGIN}:Teaching"


@pytest.mark.anyio
async def test_an_unknown_style_in_the_config_is_a_config_problem(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    toml = kairox_harness.write_config('[instructions]\noutput_style = "teachng"\n')
    async with kairox_harness.open() as rt:  # checked as the runtime starts, once every bundle is read
        errors = [e for e in rt.config.errors if e.path == "instructions.output_style"]
        assert len(errors) == 1
        assert errors[0].file == str(toml)
        assert f"no output style named 'teachng'; did you mean '{PLUGIN}:Teaching'?" in errors[0].message
        assert f"known: {PLUGIN}:Teaching, {PLUGIN}:terse" in errors[0].message
        async with rt.session() as session:
            tc = await session.turn_context("hi")
    assert style_of(tc) is None
    assert any("instructions.output_style" in p and "teachng" in p for p in tc.problems)


@pytest.mark.anyio
async def test_an_unknown_style_for_a_session_raises_naming_the_known_styles(kairox_harness: KairoxHarness) -> None:
    write_style(kairox_harness, "pirate", "Arr.\n")
    async with kairox_harness.open(start=False) as rt:
        async with rt.session() as session:
            with pytest.raises(ConfigError) as err:
                use_output_style(session, "ninja")
            assert style_of(await session.turn_context("hi")) is None  # the session keeps what it had
    assert err.value.path == "output_style"
    assert "no output style named 'ninja'" in str(err.value) and "known: pirate" in str(err.value)


@pytest.mark.anyio
async def test_a_broken_style_file_names_the_file_and_field(kairox_harness: KairoxHarness) -> None:
    bad = write_style(kairox_harness, "loud", "---\nkeep-coding-instructions: maybe\n---\nSHOUT.\n")
    empty = write_style(kairox_harness, "empty", "---\nname: empty\n---\n\n")
    write_style(kairox_harness, "calm", "Stay calm.\n")
    async with kairox_harness.open(start=False) as rt:
        assert output_styles_of(rt).names() == ["calm"]
        errors = {e.file: e for e in output_styles_of(rt).errors}
    assert errors[str(bad)].field == "keep-coding-instructions"
    assert str(bad) in str(errors[str(bad)]) and "maybe" in str(errors[str(bad)])
    assert "no text" in str(errors[str(empty)])


def test_kairox_context_shows_the_style(kairox_harness: KairoxHarness) -> None:
    install_bundle(kairox_harness)
    kairox_harness.write_config('[instructions]\noutput_style = "terse"\n')
    result = kairox_harness.cli("context", "hello")
    assert result.exit_code == 0, result.stderr
    assert f" output style {PLUGIN}:terse -->\nAnswer in as few words as the task allows." in result.stdout
    data = json.loads(kairox_harness.cli("context", "hello", "--json").stdout)
    assert f"output style {PLUGIN}:terse" in [p["title"] for p in data["injected"]]


def test_kairox_status_fails_on_an_unknown_style(kairox_harness: KairoxHarness) -> None:
    kairox_harness.write_config('[instructions]\noutput_style = "nope"\n')
    result = kairox_harness.cli("status", "--json")
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["config_errors"]
    assert any("instructions.output_style: no output style named 'nope' (known: none)" in e for e in errors)
