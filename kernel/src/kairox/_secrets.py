"""Which config values are secrets (never printed, logged or echoed in an error)."""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["REDACTED", "SECRET_TABLES", "is_secret", "redact_args", "redact_argv", "redact_url"]

#: tables whose every value is a secret (environment variables, HTTP headers)
SECRET_TABLES = frozenset({"env", "headers", "http_headers", "env_http_headers"})
_SECRET_KEY = re.compile(r"(token|secret|password|passwd|api[_-]?key|authorization|credential)", re.I)
#: keys that name an environment variable rather than hold a secret
_NAMES_A_VARIABLE = ("_env", "_env_var", "_env_vars")
REDACTED = "<redacted>"


def is_secret(key: str, parent: str = "") -> bool:
    """Is the value at ``parent.key`` a secret?"""
    if parent in SECRET_TABLES and key:
        return True
    return bool(key) and bool(_SECRET_KEY.search(key)) and not key.endswith(_NAMES_A_VARIABLE)


_SECRET_PARAM = re.compile(
    # session_id: the legacy SSE transport's message endpoint, which lets whoever has it post into the session
    r"(token|secret|password|passwd|api[_-]?key|auth|key|sig|signature|credential|^code$|^session_?id$)",
    re.I,
)


def redact_url(url: str) -> str:
    """A URL safe to print: the userinfo password and secret-looking query values hidden."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        query = urllib.parse.urlencode([(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="<>")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_SECRET_WORD = r"[\w.-]*(?:token|secret|password|passwd|api[_-]?key|apikey|auth|credential)[\w.-]*"
# ``token=X``, ``password: X``, ``"api_key": "X"``, ``api_key = 'X'``
_SECRET_ASSIGN = re.compile(rf"(?i)(\b{_SECRET_WORD}[\"']?\s*[=:]\s*[\"']?)(?!(?:bearer|basic)\s)([^\s'\"&,}}]+)")
# ``Authorization: Bearer X`` (the word before it may be anything: a server's own message)
_BEARER = re.compile(r"(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{6,})")
_SECRET_FLAG = re.compile(rf"(?i)((?:^|\s)--?{_SECRET_WORD})(\s+)([^\s-][^\s]*)")
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]+")


def redact_args(command_line: str) -> str:
    """A command line safe to print: ``--token=X``, ``--api-key X``, ``PASSWORD=X`` and URL
    secrets hidden."""
    text = _URL.sub(lambda m: redact_url(m.group(0)), command_line)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _SECRET_ASSIGN.sub(lambda m: m.group(1) + REDACTED if m.group(2) != REDACTED else m.group(0), text)
    return _SECRET_FLAG.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


_SECRET_FLAG_ALONE = re.compile(rf"(?i)--?{_SECRET_WORD}")


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
        hide_next = bool(_SECRET_FLAG_ALONE.fullmatch(arg))
    return out
