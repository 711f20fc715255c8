"""Ranked search over names, titles, tags and descriptions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kairox_catalog.builtin import BUILTIN_ENTRIES
from kairox_catalog.model import CatalogEntry, InstallSource, LaunchRecipe
from kairox_catalog.search import SearchIndex, tokenize

RECIPE = LaunchRecipe(command="x")


def entry(name: str, title: str = "", description: str = "", tags: tuple[str, ...] = (), **kw: object) -> CatalogEntry:
    return CatalogEntry(name=name, title=title, description=description, tags=tags, launch=RECIPE, **kw)  # type: ignore[arg-type]


def names(index: SearchIndex, query: str, **kw: object) -> list[str]:
    return [h.entry.name for h in index.search(query, **kw)]  # type: ignore[arg-type]


def test_exact_name_beats_prefix_beats_substring_beats_description() -> None:
    index = SearchIndex(
        [
            entry("notes", description="keeps your git notes"),
            entry("gitlab", title="GitLab"),
            entry("git"),
            entry("legit-tool"),
            entry("vcs", tags=("git",)),
        ]
    )
    assert names(index, "git") == ["git", "gitlab", "vcs", "legit-tool", "notes"]


def test_every_term_must_match_somewhere() -> None:
    index = SearchIndex(
        [entry("github", description="issues and pull requests"), entry("gitlab", description="issues")]
    )
    assert names(index, "git pull") == ["github"]
    assert names(index, "issues") == ["github", "gitlab"]
    assert names(index, "git zebra") == []


def test_search_is_case_and_punctuation_insensitive() -> None:
    index = SearchIndex([entry("sequential-thinking", title="Sequential Thinking")])
    assert names(index, "SEQUENTIAL") == ["sequential-thinking"]
    assert names(index, "sequential thinking") == ["sequential-thinking"]
    assert names(index, "sequential-thinking!") == ["sequential-thinking"]
    assert tokenize("Foo-Bar  baz!") == ["foo", "bar", "baz"]


def test_a_term_spanning_two_fields_does_not_match() -> None:
    index = SearchIndex([entry("abc", title="def")])
    assert names(index, "cd") == []


def test_empty_query_lists_everything_by_name_and_kinds_filter() -> None:
    skill = CatalogEntry(name="a-skill", kind="skill", install=InstallSource(type="url", url="https://x/SKILL.md"))
    index = SearchIndex([entry("b"), skill, entry("a")])
    assert names(index, "") == ["a", "a-skill", "b"]
    assert names(index, "", kinds=["skill"]) == ["a-skill"]
    assert names(index, "", limit=1) == ["a"]


def test_builtin_catalog_finds_the_obvious_server() -> None:
    index = SearchIndex(BUILTIN_ENTRIES)
    assert names(index, "time")[0] == "time"
    assert names(index, "browser")[0] == "playwright"
    assert names(index, "knowledge graph") == ["memory"]
    assert names(index, "files")[0] == "filesystem"
    assert set(names(index, "github")) == {"github", "github-remote"}


words = st.text(alphabet="abcdefghij -", max_size=12)


@given(st.lists(st.tuples(words, words, words), min_size=1, max_size=20), words)
def test_results_are_exactly_the_entries_containing_every_term(rows: list[tuple[str, str, str]], query: str) -> None:
    entries = [entry(f"e{i}-{n.strip() or 'x'}", title=t, description=d) for i, (n, t, d) in enumerate(rows)]
    hits = SearchIndex(entries).search(query)
    terms = tokenize(query)

    def fields(e: CatalogEntry) -> list[str]:
        return [e.name.lower(), e.title.lower(), e.description.lower()]

    expected = {e.name for e in entries if all(any(t in f for f in fields(e)) for t in terms)}
    assert {h.entry.name for h in hits} == expected
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
