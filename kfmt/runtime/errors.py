"""The one error hierarchy every decoder and encoder raises.

Each error carries ``offset`` (byte position in the buffer being read, or None),
``path`` (field path such as ``batch.records[3].key``) and ``reason``; its
message reads ``<path> at byte <offset>: <reason>``.
"""

from __future__ import annotations


class CodecError(ValueError):
    """Base class: the bytes (or the values to encode) are not a valid instance of the format."""

    #: start of the log entry (batch) that holds the error, set by kfmt.read_batches / kfmt.log.batches.scan
    batch_position: int | None = None
    #: input bytes left unread because of this error (framing errors and incomplete tails), set by scan
    unread: int | None = None
    #: the damaged region holds only zero bytes (a preallocated tail or a zeroed hole), set by scan
    zero_filled: bool = False
    #: the bytes from ``batch_position`` to the end of the data hold an entry whose framing runs past that end
    #: (or too few bytes for a header): what a batch being written leaves, set by scan (an entry whose framing
    #: is complete but whose fields run past its end is not one: it was written whole, and is damaged)
    cut_entry: bool = False
    #: located exactly where it was raised (a decompression limit): an optimistic decoder re-raises it
    #: instead of having the checked decoder decompress the same bomb again
    final: bool = False

    def __init__(self, reason: str, *, offset: int | None = None, path: str | None = None):
        self.reason = reason
        self.offset = offset
        self.path = path
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.offset is not None:
            where.append(f"at byte {self.offset}")
        prefix = " ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def at(self, *, offset: int | None = None, path: str | None = None) -> CodecError:
        """Return a copy located somewhere else (used when re-raising from a nested buffer)."""
        return type(self)(self.reason, offset=self.offset if offset is None else offset, path=path or self.path)

    def within(self, path: str, index: int, elem: str) -> CodecError:
        """Re-locate an error raised inside element ``index`` of array ``path`` (whose structs are ``elem``)."""
        inner = self.path or elem
        rest = inner[len(elem) :] if inner.startswith(elem) else "." + inner
        return type(self)(self.reason, offset=self.offset, path=f"{path}[{index}]{rest}")

    def under(self, prefix: str) -> CodecError:
        """The error located under ``prefix`` (a record's ``key`` or ``value``)."""
        return type(self)(self.reason, offset=self.offset, path=f"{prefix}.{self.path}" if self.path else prefix)

    def in_stream(self, codec: str, offset: int) -> CodecError:
        """Re-locate an error raised while reading a decompressed stream that starts at ``offset``."""
        where = f" (at byte {self.offset} of the decompressed {codec} stream)" if self.offset is not None else ""
        return type(self)(self.reason + where, offset=offset, path=self.path)


class TruncatedError(CodecError):
    """The input ends before the structure it announces."""


class ChecksumError(CodecError):
    """A stored CRC does not match the bytes it covers (corrupt data)."""


class InvalidValueError(CodecError):
    """A field holds a value the format does not allow (wrong magic, negative count, bad length...)."""


class LimitExceededError(CodecError):
    """A length, count or decompressed size is above the configured limit."""


class UnsupportedCodecError(CodecError):
    """The compression codec id is unknown, or not allowed with this magic."""
