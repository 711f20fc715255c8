"""Registrars: typed, refuse duplicates naming both plugins, never overwrite."""

from __future__ import annotations

import attrs
import pytest

from kairox import RegistrationError
from kairox.ext import Registrar


@attrs.frozen
class Thing:
    name: str
    value: int = 0


def test_add_get_and_iterate_sorted() -> None:
    reg: Registrar[Thing] = Registrar("thing")
    reg.owner = "kairox-b"
    b = reg.add(Thing("b"))
    reg.owner = "kairox-a"
    reg.add(Thing("a"))
    assert b == Thing("b")
    assert reg.names() == ["a", "b"]
    assert [t.name for t in reg] == ["a", "b"]
    assert reg.items() == [("a", Thing("a")), ("b", Thing("b"))]
    assert reg.get("a") == reg["a"] == Thing("a")
    assert reg.get("zzz") is None
    assert "a" in reg and "zzz" not in reg and len(reg) == 2
    assert reg.owner_of("b") == "kairox-b" and reg.owner_of("zzz") is None


def test_duplicate_is_refused_and_names_both() -> None:
    reg: Registrar[Thing] = Registrar("transport")
    reg.owner = "kairox-stdio"
    reg.add(Thing("stdio", 1))
    reg.owner = "kairox-fancy"
    with pytest.raises(
        RegistrationError, match='transport "stdio" is registered twice: by kairox-stdio and by kairox-fancy'
    ):
        reg.add(Thing("stdio", 2))
    assert reg["stdio"].value == 1
    assert reg.owner_of("stdio") == "kairox-stdio"


@pytest.mark.parametrize("bad", [object(), Thing(""), attrs.evolve(Thing("x"), name=3)])
def test_items_need_a_name(bad: object) -> None:
    with pytest.raises(RegistrationError, match="has no non-empty string `name`"):
        Registrar("thing").add(bad)


def test_custom_key() -> None:
    reg: Registrar[tuple[str, int]] = Registrar("pair", key=lambda item: item[0])
    reg.add(("x", 1))
    with pytest.raises(RegistrationError):
        reg.add(("x", 2))
