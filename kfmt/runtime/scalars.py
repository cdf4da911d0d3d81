"""Kafka's message-encoding scalars that are not integers: what the generated codecs need at run time."""

from __future__ import annotations

import base64
import struct

from kfmt.runtime.errors import InvalidValueError

ZERO_UUID = bytes(16)


def uuid16(value) -> bytes:
    """A uuid field's 16 bytes to write: ``bytes`` (or a bytearray/memoryview) of exactly 16, or a
    ``uuid.UUID``; anything else is refused rather than padded or cut."""
    if hasattr(value, "bytes") and not isinstance(value, (bytes, bytearray, memoryview)):
        value = value.bytes  # uuid.UUID
    b = bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
    if b is None or len(b) != 16:
        raise InvalidValueError(f"a uuid is 16 bytes, not {value!r}")
    return b


def kafka_uuid(value: bytes) -> str:
    """A uuid as Kafka prints one (``Uuid.toString``): URL-safe base64 of its 16 bytes, without padding."""
    return base64.urlsafe_b64encode(bytes(value)).rstrip(b"=").decode()


def view(buf, pos: int, n: int) -> memoryview:
    """A record set read (a field of Kafka's ``records`` type): the ``n`` bytes at ``pos`` of ``buf`` as a read-only
    view that keeps ``buf`` alive, not a copy (record sets are most of a Produce request's or Fetch response's
    bytes, and are read again only by the record codecs, if at all). ``bytes(v)`` copies one out."""
    v = memoryview(buf)  # a view of bytes is read-only already; of anything else, made so
    return v[pos : pos + n] if type(buf) is bytes else v.toreadonly()[pos : pos + n]


def byte_view(data) -> memoryview:
    """A record set given to a writer as any contiguous buffer, as a view of its bytes (a view of bytes as it is):
    its length is then its bytes, as the C writer takes it. Anything else fails (a TypeError the writers report)."""
    if type(data) is memoryview and data.itemsize == 1 and data.ndim == 1:
        return data
    return memoryview(data).cast("B")


#: a record set at least this long is handed out by reference by a gather writer (as the C writer's KF_GATHER_MIN)
GATHER_MIN = 4096


class Gather(bytearray):
    """A gather writer's output: the bytes written since the last record set handed out, and ``parts``, the pieces
    before them (bytes, and record sets as they were given). Only formats whose writers patch nothing already
    written use one (the generator's ``FormatIR.gathers``)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        super().__init__()
        self.parts: list = []

    def cut(self) -> None:
        """The bytes written so far appended to the pieces, and the buffer emptied."""
        self.parts.append(bytes(self))
        del self[:]

    def done(self) -> list:
        """The pieces, the last bytes written included: ``b"".join`` of them is what a bytearray would hold."""
        if self or not self.parts:
            self.cut()
        return self.parts


def put_set(out: bytearray, data) -> None:
    """A record set written: into ``out``, or (``out`` a :class:`Gather`, the set large) handed out after it."""
    if type(out) is Gather and len(data) >= GATHER_MIN:
        if out:
            out.cut()
        out.parts.append(data)
    else:
        out += data


def matches(frame: bytes, parts: list) -> bool:
    """Whether ``parts`` joined are ``frame``'s bytes, each compared where it lies (none copied)."""
    pos = 0
    for p in parts:
        if not frame.startswith(p, pos):
            return False
        pos += p.nbytes if type(p) is memoryview else len(p)
    return pos == len(frame)


#: arrays of plain integers up to this long are written in one call (the python backend's encoders)
PACKED_MAX = 16
#: struct code -> element count -> the Struct writing that many big-endian (``PACKED["i"][3]``: three int32s)
PACKED = {c: tuple(struct.Struct(f">{n}{c}") for n in range(PACKED_MAX + 1)) for c in "bhiqBHI"}
