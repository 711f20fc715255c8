"""Typed registrars handed to the ``kairox_register_*`` hooks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import RegistrationError

__all__ = ["Registrar"]

T = TypeVar("T")


def _name_of(item: object) -> str:
    name = getattr(item, "name", None)
    if not isinstance(name, str) or not name:
        raise RegistrationError(f"{item!r} has no non-empty string `name`")
    return name


class Registrar(Generic[T]):
    """Collects one kind of extension (transports, config sections, ...).

    ``add`` refuses a second object under a name that is taken and names both
    plugins; nothing is ever overwritten silently. The plugin host sets
    :attr:`owner` to the plugin whose hook is running, so each entry knows who
    registered it.
    """

    def __init__(self, kind: str, key: Callable[[T], str] = _name_of) -> None:
        self.kind = kind
        self._key = key
        self._items: dict[str, T] = {}
        self._owners: dict[str, str] = {}
        self.owner = "<code>"

    def add(self, item: T) -> T:
        """Register ``item`` under its name; raise :class:`RegistrationError` on a clash."""
        name = self._key(item)
        if name in self._items:
            raise RegistrationError(
                f'{self.kind} "{name}" is registered twice: by {self._owners[name]} and by {self.owner}'
            )
        self._items[name] = item
        self._owners[name] = self.owner
        return item

    def discard(self, names: set[str]) -> None:
        """Take back registrations (the plugin host does, when the hook that made them raised)."""
        for name in names:
            self._items.pop(name, None)
            self._owners.pop(name, None)

    def get(self, name: str) -> T | None:
        return self._items.get(name)

    def owner_of(self, name: str) -> str | None:
        return self._owners.get(name)

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[T]:
        return iter([self._items[n] for n in sorted(self._items)])

    def __len__(self) -> int:
        return len(self._items)
