"""Directory sources: both shapes, depth, skipped folders, scope from location,
namespaces, bad files, and a corpus of realistic Agent Skills folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from skills_helpers import write

from kairox.ext import SkillDef, SkillError, SkillRegistry, SkillScope, SkillWarning
from kairox_skills import DirectorySkillSource, bundle_skill_source
from kairox_skills._cache import ScanCache
from kairox_skills._sources import parse_file

CORPUS = Path(__file__).parent / "corpus"


def md(name: str, description: str = "does things", extra: str = "", body: str = "body\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def scan(*dirs: Path, scope: SkillScope | str = "user", **kw: object) -> list[object]:
    source = DirectorySkillSource("test", scope, list(dirs), cache=ScanCache(), **kw)  # type: ignore[arg-type]
    return list(source.scan())


def skills_of(items: list[object]) -> dict[str, SkillDef]:
    return {i.name: i for i in items if isinstance(i, SkillDef)}


def errors_of(items: list[object]) -> list[SkillError]:
    return [i for i in items if isinstance(i, SkillError)]


# -- shapes -------------------------------------------------------------------------------------


def test_kairox_files_and_agent_skills_folders(tmp_path: Path) -> None:
    write(tmp_path / "commit.md", md("commit"))
    write(tmp_path / "git" / "rebase.md", md("rebase"))
    write(tmp_path / "pdf" / "SKILL.md", md("pdf"))
    write(tmp_path / "pdf" / "forms.md", md("not-a-skill"))  # a resource of the pdf skill
    write(tmp_path / "pdf" / "references" / "api.md", "# API\n")
    write(tmp_path / "README.md", "# My skills\n")
    found = skills_of(scan(tmp_path))
    assert sorted(found) == ["commit", "pdf", "rebase"]
    assert (found["pdf"].kind, found["commit"].kind) == ("folder", "file")
    assert found["pdf"].resources() == {".": ["forms.md"], "references": ["references/api.md"]}
    assert found["rebase"].body() == "body\n"
    assert all(s.source == "test" and s.scope is SkillScope.USER for s in found.values())


def test_a_directory_that_is_itself_a_skill_folder(tmp_path: Path) -> None:
    write(tmp_path / "solo" / "SKILL.md", md("solo"))
    assert sorted(skills_of(scan(tmp_path / "solo"))) == ["solo"]


def test_depth_is_at_most_six_and_git_and_node_modules_are_skipped(tmp_path: Path) -> None:
    deep = tmp_path
    for level in range(1, 8):
        deep = deep / f"d{level}"
        write(deep / f"at{level}.md", md(f"at{level}"))
    write(tmp_path / ".git" / "hooks.md", md("in-git"))
    write(tmp_path / "node_modules" / "pkg" / "SKILL.md", md("in-node-modules"))
    write(tmp_path / "top.md", md("top"))
    assert sorted(skills_of(scan(tmp_path))) == ["at1", "at2", "at3", "at4", "at5", "at6", "top"]


def test_missing_directories_are_fine_and_a_file_is_a_warning(tmp_path: Path) -> None:
    assert scan(tmp_path / "nope") == []
    not_dir = write(tmp_path / "file", "x")
    items = scan(not_dir)
    assert [type(i) for i in items] == [SkillWarning]


def test_scope_comes_from_where_the_file_was_found(tmp_path: Path) -> None:
    write(tmp_path / "a.md", md("a", extra="scope: user\n"))
    write(tmp_path / "b.md", md("b"))
    found = skills_of(scan(tmp_path, scope="workspace"))
    assert {s.scope for s in found.values()} == {SkillScope.WORKSPACE}
    assert [w.field for w in found["a"].warnings] == ["scope"]
    assert "declares scope user but was found in a workspace directory" in found["a"].warnings[0].message
    assert found["b"].warnings == ()


def test_plugin_skills_are_namespaced(tmp_path: Path) -> None:
    write(tmp_path / "lint" / "SKILL.md", md("lint"))
    source = bundle_skill_source("acme", tmp_path, cache=ScanCache())
    (skill,) = list(source.scan())
    assert isinstance(skill, SkillDef)
    assert (skill.name, skill.scope, skill.source, skill.namespace) == (
        "acme:lint",
        SkillScope.PLUGIN,
        "plugin:acme",
        "acme",
    )


# -- bad input ----------------------------------------------------------------------------------


def test_one_bad_file_never_hides_the_others(tmp_path: Path) -> None:
    write(tmp_path / "a.md", md("a"))
    write(tmp_path / "b.md", "---\nname: b\ndescription: [unclosed\n---\n")
    write(tmp_path / "c.md", "---\nname: c\n---\nno description\n")
    write(tmp_path / "d.md", "just notes, no frontmatter\n")
    write(tmp_path / "e.md", md("e"))
    items = scan(tmp_path)
    assert sorted(skills_of(items)) == ["a", "e"]
    errors = {Path(e.file or "").name: (e.line, e.field) for e in errors_of(items)}
    assert errors == {"b.md": (4, "description"), "c.md": (1, "description"), "d.md": (1, "")}


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    err = parse_file(str(tmp_path), folder=None)
    assert isinstance(err, SkillError)
    assert err.file == str(tmp_path) and "not a regular file" in err.message
    err = parse_file(str(tmp_path / "gone.md"), folder=None)
    assert isinstance(err, SkillError) and "cannot read" in err.message


def test_special_files_are_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    write(tmp_path / "a.md", md("a"))
    assert sorted(skills_of(scan(tmp_path))) == ["a"]


# -- the corpus of realistic Agent Skills folders --------------------------------------------------


def test_corpus_loads_leniently() -> None:
    items = scan(CORPUS, scope="user")
    found = skills_of(items)
    assert sorted(found) == [
        "brand",
        "canvas-design",
        "docx",
        "internal-comms",
        "mcp-builder",
        "pdf",
        "skill-creator",
        "webapp-testing",
        "x-research",
        "xlsx",
    ]
    pdf = found["pdf"]
    assert pdf.description.startswith("Use when tasks involve reading, creating, or reviewing PDF files: extract")
    assert pdf.frontmatter.license == "Proprietary. LICENSE.txt has complete terms"
    assert pdf.resources() == {
        ".": ["LICENSE.txt", "forms.md", "reference.md"],
        "scripts": ["scripts/check_fields.py", "scripts/fill_form.py"],
    }
    assert found["skill-creator"].description.startswith("Guide for creating effective skills. Use this skill when")
    assert "\n" in found["skill-creator"].description
    assert found["skill-creator"].resources().keys() == {"assets", "references", "scripts"}
    assert found["mcp-builder"].description.startswith("Guide for creating high-quality MCP (Model Context Protocol)")
    assert "\n" not in found["mcp-builder"].description
    assert found["mcp-builder"].resources().keys() == {"reference", "scripts"}
    assert found["webapp-testing"].description.startswith("Toolkit for testing local web applications: uses")
    assert found["webapp-testing"].frontmatter.allowed_tools == ("Bash(python:*)", "Read")
    assert found["brand"].description == "Applies the brand's official colours and typography to any artifact " + (
        "that should look on-brand."
    )
    assert dict(found["brand"].frontmatter.metadata) == {
        "short-description": "Brand colours and type",
        "version": "1.0",
        "updated": "2025-01-15",
    }
    assert found["x-research"].description == "| Use when this capability is needed."
    assert found["canvas-design"].keywords == ("poster", "art", "design")
    assert dict(found["canvas-design"].frontmatter.extra) == {"user-invocable": True, "argument-hint": "[subject]"}
    assert found["xlsx"].tools == ("shell.exec", "fs.read")
    assert found["docx"].resources() == {"ooxml": ["ooxml/unpack.py"]}
    assert found["internal-comms"].body().startswith("\n# Internal comms")

    warned = {name: [w.field for w in s.warnings] for name, s in found.items() if s.warnings}
    assert warned == {
        "brand": ["name"],  # does not match its folder
        "internal-comms": ["description"],  # over 1024 characters
        "webapp-testing": ["description"],  # unquoted colon
        "x-research": ["description"],  # "| text" is not a block scalar header
    }
    errors = {Path(e.file or "").parent.name: (e.line, e.field, e.message) for e in errors_of(items)}
    assert set(errors) == {"broken-yaml", "no-description"}
    assert errors["no-description"][:2] == (1, "description")
    assert errors["broken-yaml"][1] == "description"
    assert "not valid YAML" in errors["broken-yaml"][2]


def test_corpus_with_windows_line_endings_and_bom(tmp_path: Path) -> None:
    copy = tmp_path / "corpus"
    shutil.copytree(CORPUS, copy)
    for skill_md in copy.rglob("SKILL.md"):
        text = skill_md.read_text(encoding="utf-8").replace("\n", "\r\n")
        skill_md.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    plain = skills_of(scan(CORPUS))
    crlf = skills_of(scan(copy))
    assert sorted(crlf) == sorted(plain)
    for name, skill in plain.items():
        assert crlf[name].frontmatter == skill.frontmatter, name
        assert crlf[name].body() == skill.body().replace("\n", "\r\n")


@pytest.mark.anyio
async def test_corpus_through_the_registry_keeps_going_after_errors() -> None:
    reg = SkillRegistry()
    await reg.scan([DirectorySkillSource("user", "user", [CORPUS], cache=ScanCache())], None)
    assert len(reg) == 10
    assert len(reg.errors) == 2
    assert len(reg.warnings) == 4
    assert reg.match("fill a pdf form")[0].skill.name == "pdf"
