"""Redacting one adversarial line of 1 to 64 KB, against the patterns before issue "Trust by construction" item 4.

    uv run python benchmarks/bench_redaction.py [--sizes 1,4,16,64] [--reps 5] [--old-budget 2]

A server's stderr, a log record's data and an error message from a server are
redacted (``kairox.ext.redact``) before they are shown. The baseline is the
redaction as it was (``old_redact_args`` below, kept here only for this
comparison): its key, flag and URL patterns backtrack, so one 16 KB line from a
backend took seconds. A URL the old pattern finds is redacted by today's
``kairox.ext.redact_url`` (the URL's own redaction never backtracked; finding it
did). Each shape is a line built to make one of them backtrack, or to give the
scan the most work per character. Columns: the median time of
the current redaction, of the old one, and old / new. The old one is run at a
size only while its previous size took less than ``--old-budget`` seconds (it
grows quadratically); "-" marks a size it was not run at.
"""

from __future__ import annotations

import functools
import re

from _common import Row, parse_options, print_table

from kairox.ext import redact, redact_url

# -- the redaction before (kernel/src/kairox/_secrets.py), for comparison only -----------------

_OLD_REDACTED = "<redacted>"
_OLD_SECRET_WORD = r"[\w.-]*(?:token|secret|password|passwd|api[_-]?key|apikey|auth|credential)[\w.-]*"
_OLD_SECRET_ASSIGN = re.compile(
    rf"(?i)(\b{_OLD_SECRET_WORD}[\"']?\s*[=:]\s*[\"']?)(?!(?:bearer|basic)\s)([^\s'\"&,}}]+)"
)
_OLD_BEARER = re.compile(r"(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{6,})")
_OLD_SECRET_FLAG = re.compile(rf"(?i)((?:^|\s)--?{_OLD_SECRET_WORD})(\s+)([^\s-][^\s]*)")
_OLD_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]+")


def old_redact_args(command_line: str) -> str:
    text = _OLD_URL.sub(lambda m: redact_url(m.group(0)), command_line)
    text = _OLD_BEARER.sub(lambda m: m.group(1) + _OLD_REDACTED, text)
    text = _OLD_SECRET_ASSIGN.sub(
        lambda m: m.group(1) + _OLD_REDACTED if m.group(2) != _OLD_REDACTED else m.group(0), text
    )
    return _OLD_SECRET_FLAG.sub(lambda m: m.group(1) + m.group(2) + _OLD_REDACTED, text)


# -- the lines ------------------------------------------------------------------------------------

#: name -> (what it stresses, the unit repeated to the size)
SHAPES: dict[str, tuple[str, str]] = {
    "a.a.a.": ("a word boundary at every character (the old key pattern started at each)", "a."),
    "tokentoken": ("one endless key full of secret words, no '='", "token"),
    "letters": ("a run of letters that never reaches '://' (the old URL pattern)", "a"),
    " -tokentoken": ("a flag full of secret words that never gets a value", " -" + "token" * 8),
    "token=a,": ("an assignment every 8 characters", "token=a,"),
    "--token x": ("a secret flag and its value every 10 characters", "--token x "),
    " -a": ("a flag every 3 characters", " -a"),
    "token: ": ("a key, ':' and blanks with no value", "token:" + " " * 58),
    "bearer ": ("'bearer' and a short word, again and again", "bearer b "),
    "x://y@z ": ("a URL with userinfo every 8 characters", "x://y@z "),
    "?a=b&": ("one URL with a query of 4-character pairs", "a=b&"),
}


def line(shape: str, size: int) -> str:
    unit = SHAPES[shape][1]
    text = unit * (size // len(unit) + 1)
    return ("http://h/?" + text)[:size] if shape == "?a=b&" else text[:size]


def main() -> None:
    opts = parse_options(__doc__, input_name="line", reps=5)
    rows = {
        name: Row(stresses, functools.partial(line, name), redact, old_redact_args)
        for name, (stresses, _) in SHAPES.items()
    }
    print_table(
        "Redacting one line: kairox.ext.redact now vs the old patterns",
        rows,
        opts,
        old_reps=lambda size: 1 if size > 4096 else opts.reps,
    )


if __name__ == "__main__":
    main()
