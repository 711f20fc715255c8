"""A stand-in for the system keychain of a dashboard process: chosen with
``PYTHON_KEYRING_BACKEND=file_keyring.FileKeyring`` (keyring's documented switch), its
entries in the JSON file ``$TEST_KEYRING_FILE``, outside the kairox home and workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @staticmethod
    def _file() -> Path:
        return Path(os.environ["TEST_KEYRING_FILE"])

    def _entries(self) -> dict[str, str]:
        path = self._file()
        return json.loads(path.read_text()) if path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._entries().get(f"{service}|{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        entries = self._entries()
        entries[f"{service}|{username}"] = password
        self._file().write_text(json.dumps(entries))

    def delete_password(self, service: str, username: str) -> None:
        entries = self._entries()
        if entries.pop(f"{service}|{username}", None) is None:
            raise PasswordDeleteError("not found")
        self._file().write_text(json.dumps(entries))
