"""What the python backend's check walks (generator.ir.walk, rendered as ``_check_<struct>``) share: the decline
and the reads a walk makes without building a value."""

from __future__ import annotations

import struct as _struct


class Decline(Exception):
    """The walk stops: the value is not in the plain form it answers for (it is decoded to know)."""


I16 = _struct.Struct(">h").unpack_from
I32 = _struct.Struct(">i").unpack_from


def uvarint(buf: bytes, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """An unsigned varint at ``pos`` of at most ``max_bytes`` bytes (more, or the input ending, declines):
    (value, the position after it), as the decoders read one."""
    value = shift = 0
    for i in range(max_bytes):
        if pos + i >= end:
            raise Decline
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & (0xFFFFFFFF if max_bytes == 5 else 0xFFFFFFFFFFFFFFFF), pos + i + 1
        shift += 7
    raise Decline
