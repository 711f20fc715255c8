"""Fetching catalog documents over HTTP with an on-disk cache.

HTTP is the standard library's ``urllib.request``, run in a worker thread
(``anyio.to_thread``): a catalog fetch is one GET of one JSON document, a
conditional GET needs two request headers, and this keeps the plugin free of
an HTTP client dependency (nothing to import lazily, nothing for the kernel to
avoid). The thread is abandoned on cancellation and bounded by the timeout.

The cache lives in ``$KAIROX_HOME/cache/catalog/``: one JSON record per URL
with the body, its SHA-256, ``ETag`` and ``Last-Modified``. Within the TTL the
cached copy is used without a request; after it, the document is revalidated
(``If-None-Match`` / ``If-Modified-Since``; a 304 refreshes the record). When
the network fails the cached copy is served with a warning; a corrupt record is
deleted and refetched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import attrs

from kairox.files import Refused, atomic_write_bytes, read_user_file

__all__ = ["MAX_BYTES", "DocumentCache", "FetchError", "FetchResult", "fetch_document", "is_remote", "read_capped"]

logger = logging.getLogger(__name__)

MAX_BYTES = 32 * 1024 * 1024
USER_AGENT = "kairox-catalog/0.1 (+https://github.com/kairox)"
_CACHE_VERSION = 1


class FetchError(Exception):
    """The document could not be fetched (and no usable cached copy exists)."""


@attrs.frozen
class FetchResult:
    """A document's bytes and how they were obtained.

    ``origin``: ``network`` (downloaded now), ``revalidated`` (304, cached copy
    still current), ``cache`` (fresh within the TTL, no request made),
    ``stale`` (network failed; cached copy served, see ``warning``), ``file``
    (a local path).
    """

    body: bytes
    origin: Literal["network", "revalidated", "cache", "stale", "file"]
    warning: str = ""
    fetched_at: float = 0.0


@attrs.frozen
class CacheRecord:
    url: str
    body: bytes
    fetched_at: float
    etag: str = ""
    last_modified: str = ""


def local_path(url: str) -> Path:
    """A ``file://`` URL or a path (``~`` expanded) as a path."""
    return Path(os.path.expanduser(url.removeprefix("file://")))


def is_remote(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https")


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them: a local
    catalog source or bundle the user's (or a trusted workspace's) config names, read as
    :func:`kairox.files.read_user_file` reads it. Anything but a regular file, and a file
    larger than the cap (the same as an HTTP download's), is :class:`~kairox.files.Refused`
    (an ``OSError``) before more than the cap is read."""
    return read_user_file(path, max_bytes=max_bytes)


class DocumentCache:
    """One file per URL under ``directory``; writes are atomic (temp file + ``os.replace``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.warnings: list[str] = []

    def path_for(self, url: str) -> Path:
        return self.directory / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")

    def read(self, url: str) -> CacheRecord | None:
        path = self.path_for(url)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.warnings.append(f"cannot read the cached copy of {url}: {exc}")
            return None
        try:
            data = json.loads(raw)
            body = data["body"].encode("utf-8")
            if data["version"] != _CACHE_VERSION or data["url"] != url:
                raise ValueError("written for another URL or cache version")
            if hashlib.sha256(body).hexdigest() != data["sha256"]:
                raise ValueError("checksum mismatch")
            record = CacheRecord(
                url=url,
                body=body,
                fetched_at=float(data["fetched_at"]),
                etag=str(data.get("etag") or ""),
                last_modified=str(data.get("last_modified") or ""),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self.warnings.append(f"discarded a corrupt cached copy of {url} ({exc})")
            logger.warning("discarding corrupt catalog cache %s: %s", path, exc)
            path.unlink(missing_ok=True)
            return None
        return record

    def write(self, record: CacheRecord) -> None:
        data = {
            "version": _CACHE_VERSION,
            "url": record.url,
            "fetched_at": record.fetched_at,
            "etag": record.etag,
            "last_modified": record.last_modified,
            "sha256": hashlib.sha256(record.body).hexdigest(),
            "body": record.body.decode("utf-8"),
        }
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path_for(record.url), json.dumps(data).encode("utf-8"))
        except OSError as exc:  # a read-only home must not break the catalog
            self.warnings.append(f"cannot write the catalog cache: {exc}")


@attrs.frozen
class _Response:
    status: int
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


def _http_get(url: str, headers: dict[str, str], timeout: float, max_bytes: int) -> _Response:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(max_bytes + 1)
            if len(body) > max_bytes:
                raise FetchError(f"the document is larger than {max_bytes} bytes")
            return _Response(
                status=response.status,
                body=body,
                etag=response.headers.get("ETag") or "",
                last_modified=response.headers.get("Last-Modified") or "",
            )
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return _Response(status=304)
        raise FetchError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot reach {urlsplit(url).netloc}: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise FetchError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None


async def fetch_document(
    url: str,
    *,
    cache: DocumentCache | None,
    ttl: float = 3600.0,
    timeout: float = 10.0,
    refresh: bool = False,
    max_bytes: int = MAX_BYTES,
    clock: Callable[[], float] = time.time,
    validate: Callable[[bytes], str | None] | None = None,
) -> FetchResult:
    """The document at ``url`` (http(s), ``file://`` or a path), using and updating the cache.

    ``validate(body)`` returns why a downloaded body is unusable (or ``None``):
    an unusable body never replaces a cached copy, which is served instead.
    Raises :class:`FetchError` only when the network failed and no cached copy exists.
    """
    if not is_remote(url):
        path = local_path(url)
        try:
            body = await anyio.to_thread.run_sync(read_capped, path, max_bytes)
        except Refused as exc:
            raise FetchError(f"cannot read {path}: {exc.reason}") from None
        except OSError as exc:
            raise FetchError(f"cannot read {path}: {exc.strerror or exc}") from None
        return FetchResult(body=body, origin="file")
    record = cache.read(url) if cache is not None else None
    now = clock()
    if record is not None and not refresh and 0 <= now - record.fetched_at < ttl:
        return FetchResult(body=record.body, origin="cache", fetched_at=record.fetched_at)
    headers: dict[str, str] = {}
    if record is not None:
        if record.etag:
            headers["If-None-Match"] = record.etag
        if record.last_modified:
            headers["If-Modified-Since"] = record.last_modified
    try:
        with anyio.fail_after(timeout + 1.0):
            response = await anyio.to_thread.run_sync(
                _http_get, url, headers, timeout, max_bytes, abandon_on_cancel=True
            )
    except (FetchError, TimeoutError) as exc:
        reason = str(exc) if isinstance(exc, FetchError) else f"timed out after {timeout:g} s"
        if record is None:
            raise FetchError(reason) from None
        return _stale(url, record, reason, now)
    if response.status == 304 and record is not None:
        fresh = attrs.evolve(record, fetched_at=now)
        if cache is not None:
            cache.write(fresh)
        return FetchResult(body=record.body, origin="revalidated", fetched_at=now)
    if response.status == 304:
        raise FetchError("the server answered 304 Not Modified to an unconditional request")
    problem = _problem(response.body, validate)
    if problem is not None and record is not None:
        return _stale(url, record, f"the server sent an unusable document ({problem})", now)
    if cache is not None and problem is None:
        cache.write(CacheRecord(url, response.body, now, response.etag, response.last_modified))
    return FetchResult(body=response.body, origin="network", fetched_at=now)


def _problem(body: bytes, validate: Callable[[bytes], str | None] | None) -> str | None:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8: {exc}"
    return validate(body) if validate is not None else None


def _stale(url: str, record: CacheRecord, reason: str, now: float) -> FetchResult:
    return FetchResult(
        body=record.body,
        origin="stale",
        warning=f"{url}: {reason}; using the cached copy from {_age(now - record.fetched_at)} ago",
        fetched_at=record.fetched_at,
    )


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
