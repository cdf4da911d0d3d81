"""The JSON lines of the tools' ``--json`` outputs: one object per line, compact, written by orjson where it can
write the object (fast; UTF-8 text as is) and by the standard library's encoder where it cannot (a string with a
lone surrogate, an integer past 64 bits: non-ASCII escaped there). The same values either way."""

from __future__ import annotations

import json

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; this keeps a bare install working
    orjson = None  # type: ignore[assignment]


def encoded(obj) -> bytes:
    """``obj`` as one line of JSON in UTF-8, its newline included (what is not JSON's, such as bytes, as ``str()``
    says)."""
    return _dumped(obj, newline=True)


def text(obj) -> bytes:
    """``obj`` as JSON in UTF-8, without a newline."""
    return _dumped(obj, newline=False)


def _dumped(obj, newline: bool) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(obj, default=str, option=orjson.OPT_APPEND_NEWLINE if newline else None)
        except TypeError:
            pass
    return (json.dumps(obj, default=str, separators=(",", ":")) + ("\n" if newline else "")).encode("ascii")


def fragment(data: bytes):
    """JSON text that :func:`encoded` writes inside an object as is (orjson's Fragment); None without orjson."""
    return orjson.Fragment(data) if orjson is not None else None


def line(obj) -> str:
    """``obj`` as one line of JSON, its newline included."""
    return encoded(obj).decode()


class Lines:
    """Where a tool's JSON lines go: the bytes under a text stream (flushed first: what it holds goes before), or
    the stream itself where it has none (a StringIO)."""

    def __init__(self, out):
        out.flush()
        self._raw = getattr(out, "buffer", None)
        self._out = out

    def put(self, obj) -> None:
        self.put_bytes(encoded(obj))

    def put_bytes(self, data: bytes) -> None:
        """Lines already encoded (:func:`encoded`)."""
        if self._raw is not None:
            self._raw.write(data)
        else:
            self._out.write(data.decode())

    def has_file(self) -> bool:
        """Whether the lines go to a file descriptor (which another process can write to in turn)."""
        try:
            return self._raw is not None and self._raw.fileno() >= 0
        except (OSError, ValueError, AttributeError):
            return False

    def flush(self) -> None:
        (self._raw or self._out).flush()
