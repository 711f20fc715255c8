"""The regular expressions a bundle's permission rules were matched with before issue "Trust by
construction" item 4 (they backtrack: a rule with a few stars against a long text that does not
match took seconds to hours).

Kept in one place for two readers: ``tests/plugins/test_rules.py`` checks that the linear
matcher agrees with them on ordinary rules and texts, and ``benchmarks/bench_outside_patterns.py``
times them as its baseline. Import as ``from old_patterns import ...`` (``tests/`` is on
``sys.path``, as for ``peers``).
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from kairox_manifests.rules import split_command

__all__ = ["old_command_matches", "old_glob", "old_path_matches"]


def old_glob(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern)), re.S)


def old_command_matches(spec: str, command: str) -> bool:
    spec = spec.strip()
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    if spec.endswith(" *"):
        pattern = re.compile(old_glob(spec[:-2].rstrip()).pattern + r"(?:\s.*)?", re.S)
    else:
        pattern = old_glob(spec)
    return any(pattern.fullmatch(c) for c in [command.strip(), *split_command(command)])


def _old_path_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.S)


def old_path_matches(spec: str, value: str, *, cwd: str, home: str) -> bool:
    spec = spec.strip()
    base, pattern = cwd, spec
    for lead, where in (("//", "/"), ("~/", home), ("/", cwd), ("./", cwd)):
        if spec.startswith(lead):
            base, pattern = where, spec[len(lead) :]
            break
    pattern = pattern.rstrip("/") or "**"
    target = value if value.startswith("/") else os.path.join(cwd, value)
    try:
        rel = PurePosixPath(os.path.normpath(target)).relative_to(base)
    except ValueError:
        return False
    regex = _old_path_regex(pattern if "/" in pattern else "**/" + pattern)
    parts = rel.parts
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))
