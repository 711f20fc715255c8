"""An author or publisher written as ``"Name <email> (url)"`` in a bundle manifest.

Manifests are read before anything is trusted, so the string is outside input: it is
split in one pass (the regex it replaced took 1.6 s for a 200-character author of blanks
and 28 s for 400; at 10,000 this test would outlive pytest's timeout).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairox_manifests.formats._meta import person_from


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Ada Lovelace <ada@example.com> (https://ada.example)",
            ("Ada Lovelace", "ada@example.com", "https://ada.example"),
        ),
        ("  Ada  ", ("Ada", None, None)),
        ("Ada (https://ada.example)", ("Ada", None, "https://ada.example")),
        ("Ada <ada@example.com> trailing", ("Ada <ada@example.com> trailing", None, None)),
        ("<ada@example.com>", ("<ada@example.com>", None, None)),
    ],
)
def test_a_person_string_is_split_into_name_email_and_url(
    text: str, expected: tuple[str, str | None, str | None]
) -> None:
    person = person_from(text, file="plugin.json", path="author", problems=[])
    assert person is not None and (person.name, person.email, person.url) == expected


@pytest.mark.parametrize(
    "text", ["a" + " " * 10_000 + "(x", "a" + " " * 10_000 + "x)", "a" + " \t" * 5_000 + "<b" + " " * 5_000 + "c"]
)
def test_a_long_author_of_blanks_is_read_in_one_pass(text: str) -> None:
    person = person_from(text, file="plugin.json", path="author", problems=[])
    assert person is not None and person.name == text.strip()


@given(st.text(alphabet="ab <>()@\t", max_size=40))
def test_every_author_string_gives_a_name(text: str) -> None:
    person = person_from(text, file="plugin.json", path="author", problems=[])
    assert person is not None and "\n" not in person.name and person.name == person.name.strip()
