"""Finding the next good log entry after damage, as a reader that keeps going must.

Kafka's own recovery (``LogSegment.recover``) stops at the first invalid batch and truncates the rest of
the segment. kfmt reads everything valid before the damage, reports the damaged region, and then
resynchronises: it looks for the next position where a complete entry with a valid CRC starts, and goes
on from there. Zero-filled stretches (a preallocated segment tail after an unclean shutdown, a zeroed hole)
are told apart from other damage.

A candidate position must hold a plausible size, a known magic byte and a CRC that matches:
CRC-32C over the v2 batch after its CRC field, CRC-32 over a v0/v1 message from its magic byte. A forced
format (a proposal) is checked by decoding the candidate with that format.
"""

from __future__ import annotations

import re
import struct

from kfmt.runtime.checksums import crc32, crc32c

# Every entry of a Kafka log, whatever its magic, starts with offset (int64) and size (int32); the magic
# byte is always at entry offset 16 (Records.MAGIC_OFFSET). kfmt.api frames entries with these too.
LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0
MIN_SIZE = {0: 14, 1: 22, 2: 49}  # LegacyRecord.RECORD_OVERHEAD_V0/V1, DefaultRecordBatch.RECORD_BATCH_OVERHEAD - 12
_NONZERO = re.compile(rb"[^\x00]")
_SIZE = struct.Struct(">i")
_U32 = struct.Struct(">I")


def zero_run_end(buf, pos: int, n: int) -> int:
    """End of the run of zero bytes starting at ``pos`` (``pos`` itself if that byte is not zero)."""
    m = _NONZERO.search(buf, pos, n)
    return m.start() if m else n


def valid_entry_at(buf, p: int, n: int, decode=None) -> bool:
    """True if a complete entry whose checksum matches starts at ``p`` (``decode``: a forced format's
    ``decode_from``, used instead of the built-in v0/v1/v2 checks)."""
    if n - p < HEADER_SIZE_UP_TO_MAGIC:
        return False
    size = _SIZE.unpack_from(buf, p + 8)[0]
    end = p + LOG_OVERHEAD + size
    if size < MIN_ENTRY_SIZE or end > n:
        return False
    if decode is not None:
        try:
            decode(buf, p, end)
        except Exception:  # noqa: BLE001 - any failure means "not an entry here"
            return False
        return True
    magic = buf[p + 16]
    if magic not in MIN_SIZE or size < MIN_SIZE[magic]:
        return False
    if magic == 2:
        return crc32c(buf[p + 21 : end]) == _U32.unpack_from(buf, p + 17)[0]
    return crc32(buf[p + 16 : end]) == _U32.unpack_from(buf, p + 12)[0]


def next_entry(buf, pos: int, n: int, decode=None) -> int:
    """The first position after ``pos`` where a valid entry starts, or ``n`` if there is none.

    Zero runs are skipped at C speed (an entry never starts inside one more than 8 bytes before its
    first non-zero byte: its offset's high bytes may be zero, its size and magic-or-CRC are not all zero).
    """
    p = pos + 1
    while p < n:
        z = zero_run_end(buf, p, n)
        if z >= n:
            return n
        if z - p > 16:
            p = z - 16  # an entry may begin with up to 11 zero bytes (offset high bytes, size high byte)
        if n - p < HEADER_SIZE_UP_TO_MAGIC:
            return n
        size = _SIZE.unpack_from(buf, p + 8)[0]
        if MIN_ENTRY_SIZE <= size <= n - p - LOG_OVERHEAD and (decode is not None or buf[p + 16] in MIN_SIZE):
            if valid_entry_at(buf, p, n, decode):
                return p
        p += 1
    return n


def describe(buf, pos: int, end: int) -> str:
    """Words for a damaged region: zero-filled, or how many bytes could not be read."""
    length = end - pos
    if zero_run_end(buf, pos, end) >= end:
        return f"{length} zero byte(s) (a zero-filled region, as a preallocated segment or an unclean shutdown leaves)"
    return f"{length} byte(s) hold no valid entry"
