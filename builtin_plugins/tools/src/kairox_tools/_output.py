"""Keeping tool output within limits, and telling text from binary."""

from __future__ import annotations

__all__ = ["HeadTail", "cut_line", "head_tail", "image_type", "looks_binary", "omitted_marker", "safe_text"]

#: bytes looked at to decide whether a file is binary
SNIFF_BYTES = 8192

_TEXT_CONTROL = {7, 8, 9, 10, 11, 12, 13, 27}


def safe_text(text: str) -> str:
    """A file name as valid Unicode: bytes that are not UTF-8 (kept by the OS as lone
    surrogates) become U+FFFD, so results always encode as JSON/UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass").decode(
            "utf-8", errors="replace"
        )


def _only_escapes(text: str) -> bool:
    return all(not ("\ud800" <= c <= "\udfff") or "\udc80" <= c <= "\udcff" for c in text)


def omitted_marker(count: int, unit: str) -> str:
    return f"[... {count} {unit} omitted ...]"


def head_tail(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, keeping its head and tail around a marker."""
    if len(text) <= limit:
        return text, False
    head = limit // 2
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n{omitted_marker(omitted, 'characters')}\n{text[len(text) - tail :]}", True


def cut_line(line: str, limit: int) -> str:
    """One line cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} [... line cut: {len(line) - limit} more characters]"


class HeadTail:
    """A byte buffer that keeps the first and last ``limit // 2`` bytes of a stream.

    For what a command writes that *is* the tool's result (shell.exec's stdout and
    stderr): the kept bytes are shown as they were, ``\r``, long lines and all, around
    a byte count of what was left out. A child's diagnostics (ripgrep's stderr) go to
    :class:`kairox_process.OutputTail` instead, which keeps lines (cut to a maximum
    length, line endings dropped) for a message.
    """

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if not self.truncated:
            # head and tail are adjacent: decode them as one, or a character split between them breaks
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        # a cut may split a UTF-8 sequence: drop the broken ends instead of showing U+FFFD
        head = bytes(self.head).decode("utf-8", errors="ignore")
        tail = bytes(self.tail).decode("utf-8", errors="ignore")
        return f"{head}\n{omitted_marker(omitted, 'bytes')}\n{tail}"


def looks_binary(sample: bytes) -> bool:
    """Whether bytes from the start of a file look binary: a NUL byte, or many control bytes.

    Text in a legacy encoding (Latin-1, ...) is not binary: it is shown with
    replacement characters.
    """
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in _TEXT_CONTROL)
    return control / len(sample) > 0.3


def image_type(head: bytes) -> str | None:
    """The MIME type of an image, from its first bytes (PNG, JPEG, GIF, WebP)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None
