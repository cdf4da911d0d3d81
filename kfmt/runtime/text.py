"""Strings on the wire: UTF-8 with surrogateescape (so any bytes round-trip), with small memo tables.

Header keys repeat in almost every record ("trace", "content-type"...), so the generated fast paths
look short strings up in a bounded table before decoding or encoding them.  The tables only ever hold
strings of at most ``MAX_LEN`` bytes and stop growing at ``MAX_ENTRIES``, so hostile input cannot make
them large; a miss costs one ordinary decode.
"""

from __future__ import annotations

from kfmt.runtime.varint import write_uvarint, write_varint

MAX_LEN = 64
MAX_ENTRIES = 4096

#: raw bytes -> str, for short strings seen before
DECODED: dict[bytes, str] = {}
#: str -> UTF-8 bytes, for short strings seen before
ENCODED: dict[str, bytes] = {}
#: str -> length prefix + UTF-8 bytes, one table per kind of varint prefix (the optimistic encoders
#: write a whole header key with one lookup)
ENCODED_VARINT: dict[str, bytes] = {}
ENCODED_VARLONG = ENCODED_VARINT  # a zigzag varlong of a length is the same bytes as a zigzag varint
ENCODED_UVARINT: dict[str, bytes] = {}


def decode(raw: bytes) -> str:
    s = str(raw, "utf-8", "surrogateescape")
    if len(raw) <= MAX_LEN and len(DECODED) < MAX_ENTRIES:
        DECODED[raw] = s
    return s


def encode(s: str) -> bytes:
    b = s.encode("utf-8", "surrogateescape")
    if len(b) <= MAX_LEN and len(ENCODED) < MAX_ENTRIES:
        ENCODED[s] = b
    return b


def _prefixed(s: str, table: dict, write) -> bytes:
    b = s.encode("utf-8", "surrogateescape")
    buf = bytearray()
    write(buf, len(b))
    buf += b
    out = bytes(buf)
    if len(b) <= MAX_LEN and len(table) < MAX_ENTRIES:
        table[s] = out
    return out


def encode_varint(s: str) -> bytes:
    """Zigzag-varint length prefix + UTF-8 bytes of ``s``."""
    return _prefixed(s, ENCODED_VARINT, write_varint)


encode_varlong = encode_varint


def encode_uvarint(s: str) -> bytes:
    """Unsigned-varint length prefix + UTF-8 bytes of ``s``."""
    return _prefixed(s, ENCODED_UVARINT, write_uvarint)
