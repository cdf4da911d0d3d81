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


REPLACEMENT = "\ufffd"


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def java_utf8(raw: bytes) -> str:
    """``raw`` decoded as Java's ``new String(bytes, UTF_8)`` decodes it, as Kafka reads header keys: each
    ill-formed sequence becomes U+FFFD by Java's rules, which differ from Python's "replace" on encoded
    surrogates (``ED A0 80``: one U+FFFD, where Python gives three) and some cut sequences. Held to Java's own
    output in tests/test_runtime.py."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    sp, n = 0, len(raw)
    while sp < n:
        sp = _java_step(raw, sp, n, out)
    return "".join(out)


def _java_step(raw: bytes, sp: int, n: int, out: list[str]) -> int:
    """One character (or one U+FFFD) from ``raw[sp:]``; the position after what it took."""
    b1 = raw[sp]
    if b1 < 0x80:
        out.append(chr(b1))
        return sp + 1
    if 0xC2 <= b1 <= 0xDF:
        if sp + 1 < n and _cont(raw[sp + 1]):
            out.append(chr(((b1 & 0x1F) << 6) | (raw[sp + 1] & 0x3F)))
            return sp + 2
        out.append(REPLACEMENT)
        return sp + 1
    if 0xE0 <= b1 <= 0xEF:
        return _java_three(raw, sp, n, out)
    if 0xF0 <= b1 <= 0xF7:
        return _java_four(raw, sp, n, out)
    out.append(REPLACEMENT)  # 80..C1, F8..FF: never a lead byte
    return sp + 1


def _java_three(raw: bytes, sp: int, n: int, out: list[str]) -> int:
    b1 = raw[sp]
    out.append(REPLACEMENT)
    if sp + 2 >= n:  # cut short by the end
        if sp + 1 < n and ((b1 == 0xE0 and raw[sp + 1] & 0xE0 == 0x80) or not _cont(raw[sp + 1])):
            return sp + 1
        return n
    b2, b3 = raw[sp + 1], raw[sp + 2]
    if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2):
        return sp + 1
    if not _cont(b3):
        return sp + 2
    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    if not 0xD800 <= c <= 0xDFFF:  # an encoded surrogate is one U+FFFD for its three bytes
        out[-1] = chr(c)
    return sp + 3


def _java_four(raw: bytes, sp: int, n: int, out: list[str]) -> int:
    b1 = raw[sp]
    out.append(REPLACEMENT)
    if b1 > 0xF4 or sp + 1 >= n:
        return sp + 1
    b2 = raw[sp + 1]
    if (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _cont(b2):
        return sp + 1
    if sp + 2 >= n:
        return n
    if not _cont(raw[sp + 2]):
        return sp + 2
    if sp + 3 >= n:
        return n
    if not _cont(raw[sp + 3]):
        return sp + 3
    c = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((raw[sp + 2] & 0x3F) << 6) | (raw[sp + 3] & 0x3F)
    out[-1] = chr(c)
    return sp + 4
