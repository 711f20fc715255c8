"""Errors and problems of plugin manifests."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kairox.errors import ConfigError

__all__ = ["ManifestError", "Problem"]


class ManifestError(ConfigError):
    """A plugin's manifest (or a file it names) is wrong; the plugin is not loaded.

    ``file`` is the file the bad value is in, ``path`` the field path inside it
    (``hooks[0].script``, ``mcpServers.git.args[1]``) and ``message`` what was
    expected. ``errors`` lists every problem found (the first is ``self``).
    """

    @classmethod
    def from_config_error(cls, exc: ConfigError) -> ManifestError:
        errors = list(exc.errors)
        first = errors[0]
        err = cls(first.message, file=first.file, path=first.path)
        err.errors = [err, *(cls(e.message, file=e.file, path=e.path) for e in errors[1:])]
        return err

    def to_dict(self) -> dict[str, str | None]:
        return {"file": self.file, "path": self.path, "message": self.message}


@attrs.frozen
class Problem:
    """Something wrong that did not stop the plugin (or did, when ``fatal``).

    ``severity`` is ``"warning"`` (unknown field, missing optional directory),
    ``"error"`` (the plugin or one contribution is not loaded). ``kind`` names a
    family of problems a reader may want to pick out: ``manifest-conflict`` (two
    manifests of one directory disagree), ``hook-event`` (a hook event kairox has
    no equivalent for), ``refused`` (a file of the bundle that was not read: it
    leads outside the bundle's folder, or is a device; ``file`` names it); empty
    for the others.
    """

    message: str
    file: str | None = None
    path: str = ""
    severity: str = "warning"
    kind: str = ""
    #: for a ``refused`` file, the contribution it would have been (``skill``, ``command``, ...)
    component: str = ""

    def render(self) -> str:
        where = ": ".join(p for p in (self.file, self.path) if p)
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {
            "severity": self.severity,
            "file": self.file,
            "path": self.path,
            "message": self.message,
        }
        if self.kind:
            out["kind"] = self.kind
        return out

    @classmethod
    def from_error(cls, exc: ConfigError) -> Problem:
        return cls(exc.message, file=exc.file, path=exc.path, severity="error")


def problems_from(errors: Iterable[ConfigError]) -> list[Problem]:
    return [Problem.from_error(e) for e in errors]
