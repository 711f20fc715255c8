"""Which config values are secrets (never printed, logged or echoed in an error).

:func:`redact_args` reads text from outside (a server's stderr, a log record, an
error message a server sent), so it runs in time linear in the text's length.
It is a scan, not a set of patterns that can backtrack: each regex below is one
character class repeated (``[\\w.-]*``: the length of the run it reads), a fixed
word list (``token|secret|...``: a few characters at each position), or
:data:`_BEARER`, whose only backtracking gives back the blanks after one fixed
word. Every scan step moves forward past what it read, and a run read backwards
(a URL's scheme, a flag's leading dash) ends at the previous run's separator, so
no character is read more than a constant number of times.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator

__all__ = [
    "REDACTED",
    "SECRET_TABLES",
    "cut_at_word",
    "is_secret",
    "redact_args",
    "redact_argv",
    "redact_text",
    "redact_url",
]

#: tables whose every value is a secret (environment variables, HTTP headers)
SECRET_TABLES = frozenset({"env", "headers", "http_headers", "env_http_headers"})
#: words that make a config key, a URL parameter or a command line's key or flag secret;
#: each pattern below adds its own
_WORDS = r"token|secret|password|passwd|api[_-]?key|credential"
_SECRET_KEY = re.compile(f"{_WORDS}|authorization", re.I)
#: keys that name an environment variable rather than hold a secret
_NAMES_A_VARIABLE = ("_env", "_env_var", "_env_vars")
REDACTED = "<redacted>"


def is_secret(key: str, parent: str = "") -> bool:
    """Is the value at ``parent.key`` a secret?"""
    if parent in SECRET_TABLES and key:
        return True
    return bool(key) and bool(_SECRET_KEY.search(key)) and not key.endswith(_NAMES_A_VARIABLE)


# session_id: the legacy SSE transport's message endpoint, which lets whoever has it post into the session
_SECRET_PARAM = re.compile(f"{_WORDS}|auth|key|sig|^code$|^session_?id$", re.I)


def redact_url(url: str) -> str:
    """A URL safe to print: the userinfo password and secret-looking query values hidden."""
    if "@" not in url and "?" not in url and "#" not in url:
        return url  # nothing to hide
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{REDACTED}@{host}"
    query = _hide_param_values(parts.query)
    fragment = _hide_param_values(parts.fragment)  # an OAuth implicit grant's #access_token=...
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _hide_param_values(query: str) -> str:
    """``a=1&token=X`` -> ``a=1&token=<redacted>``; the other pairs are kept as written."""
    if "=" not in query:
        return query
    pairs = query.split("&")
    for i, pair in enumerate(pairs):
        name, eq, _ = pair.partition("=")
        plain = urllib.parse.unquote_plus(name) if "%" in name or "+" in name else name
        if eq and _SECRET_PARAM.search(plain):
            pairs[i] = f"{name}={REDACTED}"
    return "&".join(pairs)


#: a word that makes the word around it secret-looking (``X_API_TOKEN``, ``--db-password``)
_SECRET_WORD = re.compile(f"{_WORDS}|auth", re.I)
#: a key or flag: the whole run of these characters around a secret word
_RUN = re.compile(r"[\w.-]*")
_SCHEME = re.compile(r"[a-zA-Z0-9+.-]*")
_LETTER = re.compile(r"[a-zA-Z]")
#: ``://`` with a URL's next character after it, and the rest of a URL: up to a blank or a quote
_URL_SEPARATOR = re.compile(r"://(?=[^\s'\"])")
_URL_REST = re.compile(r"[^\s'\"]*")
#: after a key: ``=``, ``:`` or ``": "``, then the value (it ends at a blank, a quote, ``&``,
#: ``,`` or ``}``), unless that is ``Bearer X`` (:data:`_BEARER` hides X). What a failed try
#: gives back is the blanks around the ``=`` after this one key.
_ASSIGNED = re.compile(r"""["']?\s*[=:]\s*["']?(?!(?:bearer|basic)\s)(?=[^\s'"&,}])""", re.I)
#: a value: up to a blank, a quote, ``&``, ``,`` or ``}``
_VALUE = re.compile(r"""[^\s'"&,}]*""")
#: a flag: a run that starts with ``-``, at the text's start or after a blank
_FLAG = re.compile(r"(?:^|(?<=\s))-[\w.-]*")
#: blanks, then a flag's value: one word that is not the next flag (a failed try gives back
#: the blanks after this one flag)
_FLAG_VALUE = re.compile(r"\s+(?!-)(\S+)")
# ``Authorization: Bearer X`` (the word before it may be anything: a server's own message).
# It starts only at the word "bearer" or "basic", and what a failed try gives back is the
# blanks right after that word, which no other try reads.
_BEARER = re.compile(r"(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{6,})")


def _run_end(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run of ``run``'s characters (a class repeated) that starts at ``pos`` ends."""
    m = run.match(text, pos)
    return m.end() if m else pos


def redact_args(command_line: str) -> str:
    """A command line (or a line of a log, an error message) safe to print: ``--token=X``,
    ``--api-key X``, ``PASSWORD=X``, ``Bearer X`` and URL secrets hidden. Linear time."""
    text = _hide_url_secrets(command_line)
    # all three read the same text: hiding one's value must not hide another's key
    # (``token= --password X``, ``Bearer --token X``: the first value is the flag that says X is a secret)
    bearers = (m.span(2) for m in _BEARER.finditer(text))
    return _hide(text, sorted([*bearers, *_assigned_values(text), *_flag_values(text)]))


def _hide(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the sorted ``spans`` (or their union, where they overlap) hidden."""
    out: list[str] = []
    last = 0
    for start, end in spans:
        if end <= last:  # inside a span already hidden
            continue
        if text[max(start, last) : end] != REDACTED:
            out += (text[last : max(start, last)], REDACTED)
            last = end
    out.append(text[last:])
    return "".join(out)


def _hide_url_secrets(text: str) -> str:
    """Each ``scheme://...`` (up to a blank or a quote) as :func:`redact_url` shows it."""
    if "://" not in text:
        return text
    backwards = text[::-1]  # a scheme is the run of scheme characters before "://"
    n = len(text)
    out: list[str] = []
    last = 0
    for separator in _URL_SEPARATOR.finditer(text):
        found = separator.start()
        if found < last:  # "://" inside the URL before
            continue
        run_start = n - _run_end(_SCHEME, backwards, n - found)
        letter = _LETTER.search(text, run_start, found)  # a scheme starts with a letter
        if letter is not None:
            end = _run_end(_URL_REST, text, found + 3)
            out += (text[last : letter.start()], redact_url(text[letter.start() : end]))
            last = end
    out.append(text[last:])
    return "".join(out)


def _assigned_values(text: str) -> Iterator[tuple[int, int]]:
    """Where the values of ``token=X``, ``password: X``, ``"api_key": "X"``, ``api_key = 'X'``
    are (not ``Authorization: Bearer X``: the scheme stays readable, :data:`_BEARER` hides X)."""
    done = 0
    # the value run last found: a value starting anywhere in it ends where it ends, so no
    # character of a value is read twice, whatever keys stand inside values
    run_start, run_end = -1, -1
    for word in _SECRET_WORD.finditer(text):
        if word.start() < done:  # in a key already looked at
            continue
        done = _run_end(_RUN, text, word.end())  # the key's end
        assigned = _ASSIGNED.match(text, done)
        if assigned is None:
            continue
        start = assigned.end()
        if not run_start <= start < run_end:
            run_start, run_end = start, _run_end(_VALUE, text, start)
        # the value is hidden; a secret word inside it may start an assignment of its own
        # (``token= TOKEN: X``), so the scan goes on from the key's end, not the value's
        yield start, run_end


def _flag_values(text: str) -> Iterator[tuple[int, int]]:
    """Where the values of ``--api-key X``, ``-password X`` are: the word after a
    secret-looking flag (not one that starts with ``-``: that is the next flag)."""
    done = 0
    for flag in _FLAG.finditer(text):
        if flag.start() < done or _SECRET_WORD.search(text, flag.start() + 1, flag.end()) is None:
            continue
        value = _FLAG_VALUE.match(text, flag.end())
        if value is not None:
            yield value.span(1)
            done = value.end()


def _is_secret_flag(arg: str) -> bool:
    """``--token``, ``-api-key``: a flag alone whose value is the next argument."""
    return arg.startswith("-") and _run_end(_RUN, arg, 0) == len(arg) and _SECRET_WORD.search(arg, 1) is not None


def redact_argv(argv: list[str]) -> list[str]:
    """An argument list safe to print: each argument as :func:`redact_args` makes it, and
    the value after a secret-looking flag given on its own (``["--token", "X"]``) hidden."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("-"):
            out.append(REDACTED)
        else:
            out.append(redact_args(arg))
        hide_next = _is_secret_flag(arg)
    return out


def cut_at_word(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, less the word the limit cuts in two: a
    secret shown in part (``https://u:S3CR``, ``token=S3CR``) is no longer recognised as one,
    so what redaction cannot read whole is not shown."""
    if len(text) <= limit:
        return text
    kept = text[:limit]
    if not kept or kept[-1].isspace() or text[limit].isspace():
        return kept
    words = kept.rsplit(None, 1)
    return words[0] if len(words) == 2 else ""


def redact_text(text: str, max_length: int) -> str:
    """Outside text (a log record's data, a server's message) safe to print and bounded: at
    most ``max_length`` characters of it (cut by :func:`cut_at_word` before it is read, so a
    megabyte costs no more than ``max_length``), redacted as :func:`redact_args` does,
    followed by ``... [N more characters]`` when it was cut."""
    shown = cut_at_word(text, max_length)
    safe = redact_args(shown)[:max_length]  # a hidden value can be longer than the value
    return safe if len(shown) == len(text) else f"{safe}... [{len(text) - len(shown)} more characters]"
