"""Varint slow paths (the 1-byte fast path is inlined in generated code).

Kafka's rules (ByteUtils.java): base-128 little-endian groups, continuation in
the high bit; at most 5 bytes for a 32-bit varint and 10 for a 64-bit varlong;
non-minimal encodings are accepted; excess high bits of the last byte are
dropped (the value is masked to 32/64 bits before zigzag decoding).
"""

from __future__ import annotations

from kfmt.runtime.errors import InvalidValueError, TruncatedError

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def read_uvarint32(buf, pos: int, end: int, path: str) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes, masked to 32 bits."""
    return _read(buf, pos, end, 5, _MASK32, path)


def read_uvarint64(buf, pos: int, end: int, path: str) -> tuple[int, int]:
    """Read an unsigned varlong of at most 10 bytes, masked to 64 bits."""
    return _read(buf, pos, end, 10, _MASK64, path)


def _read(buf, pos, end, max_len, mask, path):
    start = pos
    result = 0
    shift = 0
    limit = min(end, pos + max_len)
    while pos < limit:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & mask, pos
        shift += 7
    if pos - start >= max_len:
        kind = "varint" if max_len == 5 else "varlong"
        raise InvalidValueError(f"{kind} is too long: continuation bit set on byte {max_len}", offset=start, path=path)
    # (the generated decoders' words: no byte of it there, or some)
    raise TruncatedError(
        "input ends before a varint" if pos == start else "input ends inside a varint", offset=start, path=path
    )


def zigzag32(v: int) -> int:
    """Decode a masked 32-bit zigzag value."""
    return (v >> 1) ^ -(v & 1)


def write_varint(out: bytearray, v: int, path: str = "varint") -> None:
    """Append a signed 32-bit value as a zigzag varint."""
    if not -0x80000000 <= v <= 0x7FFFFFFF:
        raise InvalidValueError(f"{v} does not fit a signed 32-bit varint", path=path)
    _write(out, ((v << 1) ^ (v >> 31)) & _MASK32)


def write_varlong(out: bytearray, v: int, path: str = "varlong") -> None:
    """Append a signed 64-bit value as a zigzag varlong."""
    if not -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        raise InvalidValueError(f"{v} does not fit a signed 64-bit varlong", path=path)
    _write(out, ((v << 1) ^ (v >> 63)) & _MASK64)


def write_uvarint(out: bytearray, v: int, path: str = "uvarint") -> None:
    """Append an unsigned 32-bit value as a varint."""
    if not 0 <= v <= _MASK32:
        raise InvalidValueError(f"{v} does not fit an unsigned 32-bit varint", path=path)
    _write(out, v)


def _write(out: bytearray, v: int) -> None:
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def size_of_uvarint(v: int) -> int:
    n = 1
    while v > 0x7F:
        v >>= 7
        n += 1
    return n


# ---------------------------------------------------------------- tables for the generated fast paths
#: zigzag value of every one-byte varint
ZZ1 = tuple(zigzag32(v) for v in range(0x80))


def _zz2() -> tuple:
    # index (b0 << 7) + b1 for a two-byte varint b0 b1 (b0 >= 0x80 > b1); lower half unused
    t: list[int | None] = [None] * 0x8000
    for b0 in range(0x80, 0x100):
        for b1 in range(0x80):
            t[(b0 << 7) + b1] = zigzag32((b0 & 0x7F) | (b1 << 7))
    return tuple(t)


#: zigzag value of every two-byte varint, indexed by ``(first << 7) + second``
ZZ2 = _zz2()


def _uvarint_bytes(v: int) -> bytes:
    out = bytearray()
    _write(out, v)
    return bytes(out)


#: varint bytes of every unsigned value below 16384 (the one- and two-byte ones)
UV_BYTES = tuple(_uvarint_bytes(v) for v in range(0x4000))
#: varint bytes of every zigzag value in [-8192, 8192), indexed by value + 8192: the same bytes objects,
#: since zigzag maps that range onto [0, 16384)
ZZ_BYTES = tuple(UV_BYTES[(v << 1) ^ (v >> 63)] for v in range(-8192, 8192))
#: zigzag varint bytes of every value in [0, 8192), indexed by the value (lengths and counts, never negative)
ZZ_POS = ZZ_BYTES[8192:]
