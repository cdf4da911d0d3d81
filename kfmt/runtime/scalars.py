"""Kafka's message-encoding scalars that are not integers: what the generated codecs need at run time."""

from __future__ import annotations

import base64

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
    return memoryview(buf).toreadonly()[pos : pos + n]
