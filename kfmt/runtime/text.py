"""Strings on the wire: UTF-8 with surrogateescape (so any bytes round-trip), with small memo tables.

Header keys repeat in almost every record ("trace", "content-type"...), so the generated fast paths
look short strings up in a bounded table before decoding or encoding them.  The tables only ever hold
strings of at most ``MAX_LEN`` bytes and stop growing at ``MAX_ENTRIES``, so hostile input cannot make
them large; a miss costs one ordinary decode.
"""

from __future__ import annotations

MAX_LEN = 64
MAX_ENTRIES = 4096

#: raw bytes -> str, for short strings seen before
DECODED: dict[bytes, str] = {}
#: str -> UTF-8 bytes, for short strings seen before
ENCODED: dict[str, bytes] = {}


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
