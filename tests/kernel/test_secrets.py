"""Redaction of outside text (:mod:`kairox._secrets`): nothing secret survives, in linear time.

Time is measured by counting, never by a clock: every regex of the module is wrapped so
that each call adds the characters it was given to read (a whole text for ``finditer``
and ``sub``, the window for ``search``, what it matched for ``match``), and each copy of
the text the scan makes is counted too. A scan that reads a run again for each secret word
in it, or a URL body again for each ``://`` in it, reads quadratically many characters.
That each regex itself cannot backtrack over more than what it is given is argued in the
module's docstring and shown by ``benchmarks/bench_redaction.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kairox._secrets as secrets_module
from kairox._secrets import REDACTED, redact_args
from kairox.ext import redact


class _Reads:
    """Characters handed to the module's regexes and copied by its scan."""

    def __init__(self) -> None:
        self.count = 0


class _CountedPattern:
    def __init__(self, pattern: re.Pattern[str], reads: _Reads) -> None:
        self.pattern = pattern
        self.reads = reads

    def _window(self, text: str, pos: int, endpos: int | None) -> int:
        return max(0, min(len(text), len(text) if endpos is None else endpos) - pos) + 1

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        m = self.pattern.match(text, pos, len(text) if endpos is None else endpos)
        self.reads.count += (m.end() - pos if m else 0) + 1
        return m

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        self.reads.count += self._window(text, pos, endpos)
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        self.reads.count += self._window(text, pos, endpos)
        return self.pattern.finditer(text, pos, len(text) if endpos is None else endpos)

    def sub(self, repl: Any, text: str) -> str:
        self.reads.count += len(text) + 1
        return self.pattern.sub(repl, text)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> _Reads:
    counter = _Reads()
    for name, value in vars(secrets_module).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(secrets_module, name, _CountedPattern(value, counter))
    real_redact_url = secrets_module.redact_url

    def counted_redact_url(url: str) -> str:
        counter.count += len(url)
        return real_redact_url(url)

    monkeypatch.setattr(secrets_module, "redact_url", counted_redact_url)
    return counter


def _read(reads: _Reads, text: str) -> int:
    reads.count = 0
    redact_args(text)
    return reads.count + 2 * len(text)  # the scans' copies: one reversed text for URLs, one output


#: pieces that made the old patterns backtrack, and pieces of every form the scan looks for
_PIECES = st.sampled_from(
    [
        "a", ".", "-", "--", "_", "token", "TOKEN", "api_key", "password", "auth", "secret", "=", ":", " ",
        "\t", '"', "'", "&", ",", "}", "Bearer", "basic ", "://", "http", "https://", "u:p@h", "?", "#", "/",
        "%41", "<redacted>", "é", "\u00a0", "0",
    ]
)  # fmt: skip


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # _read starts each count at 0
@given(unit=st.lists(_PIECES, min_size=1, max_size=8).map("".join), copies=st.integers(8, 40))
def test_redaction_reads_each_character_a_bounded_number_of_times(reads: _Reads, unit: str, copies: int) -> None:
    once, twice = unit * copies, unit * (2 * copies)
    read_once, read_twice = _read(reads, once), _read(reads, twice)
    assert read_once <= 16 * len(once) + 64
    assert read_twice <= 16 * len(twice) + 64
    # twice the text, (about) twice the reading; a quadratic scan reads four times as much
    assert read_twice <= 2 * read_once + 16 * len(unit) + 64, (unit, read_once, read_twice)


@pytest.mark.parametrize(
    "unit",
    [
        "a.",  # word boundaries everywhere: the old assignment pattern started at each one
        "token",  # one endless key: the old patterns split it at every secret word
        " -tokentoken",  # a flag that never gets a value
        "a",  # letters that never reach "://": the old URL pattern started at each one
        "://",  # separators with no scheme
        "x://y",  # URLs inside one URL
        "token=",  # assignments with no value
        "bearer ",  # schemes with no token
    ],
)
def test_the_old_backtracking_shapes_are_read_linearly(reads: _Reads, unit: str) -> None:
    small, large = unit * 500, unit * 4000
    assert _read(reads, large) <= 8 * _read(reads, small) + 1000


_NAMES = st.sampled_from(
    ["token", "api_key", "api-key", "apikey", "password", "passwd", "secret", "auth", "credential"]
)
_AFFIX = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", max_size=6)
_KEYS = st.tuples(_AFFIX, _NAMES.map(lambda n: n.upper() if len(n) % 2 else n), _AFFIX).map("".join)
#: a secret as it appears in a value: no blank, quote, "&", "," or "}" (they end a value)
_SECRETS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~+/=-", min_size=8, max_size=40
)
_ALNUM = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=40)
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
#: text around the secret: anything, the tricky pieces included, then a blank
_AROUND = st.lists(_PIECES | st.text(max_size=6), max_size=12).map("".join)


@st.composite
def _secret_in_text(draw: st.DrawFn) -> tuple[str, str]:
    key, secret, alnum = draw(_KEYS), draw(_SECRETS), draw(_ALNUM)
    user, host = draw(_WORDS), draw(_WORDS)
    forms = [
        (f"{key}={secret}", secret),
        (f"{key}: {secret}", secret),
        (f'"{key}": "{secret}"', secret),
        (f"{{'{key}': '{secret}'}}", secret),
        (f"{key} = {secret}", secret),
        (f"--{key} {alnum}", alnum),
        (f"-{key}\t{alnum}", alnum),
        (f"--{key}={secret}", secret),
        (f"Authorization: Bearer {secret}", secret),
        (f"{key}: Basic {secret}", secret),
        (f"https://{user}:{alnum}@{host}.example/mcp", alnum),
        (f"http://{host}:8080/sse?x=1&{key}={alnum}#top", alnum),
        (f"GET https://{host}.example/cb#access_token={alnum}", alnum),
    ]
    text, value = draw(st.sampled_from(forms))
    return f"{draw(_AROUND)} {text} {draw(_AROUND)}", value


@given(_secret_in_text())
@example(("Bearer --TOKEN 00000000 ", "00000000"))  # hypothesis found it: the flag was Bearer's value
@example(("token= TOKEN: 00000000 ", "00000000"))  # and this: a key inside the value before
def test_no_secret_survives_whatever_surrounds_it(case: tuple[str, str]) -> None:
    text, secret = case
    for shown in (redact_args(text), redact(text)):
        assert secret not in shown, shown
        assert REDACTED in shown


def test_what_the_old_patterns_hid_is_hidden_the_same_way() -> None:
    assert redact_args("run --api-key K123456 --token=T1 PASSWORD=p2 -v") == (
        "run --api-key <redacted> --token=<redacted> PASSWORD=<redacted> -v"
    )
    assert redact_args('{"token": "abc", "name": "x"}') == '{"token": "<redacted>", "name": "x"}'
    assert redact_args("Authorization: Bearer abc123xyz") == "Authorization: Bearer <redacted>"
    assert redact_args("--token --verbose") == "--token --verbose"  # a flag is no value
    assert redact_args("see https://u:pw@h.example/x?api_key=k&page=2 now") == (
        "see https://u:<redacted>@h.example/x?api_key=<redacted>&page=2 now"
    )
    # a URL is shown as written, only its secrets replaced (it was re-encoded before)
    assert redact_args("https://h.example/a%20b?q=a+b&x=%41") == "https://h.example/a%20b?q=a+b&x=%41"
