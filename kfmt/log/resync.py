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

from kfmt.runtime import checksums
from kfmt.runtime.checksums import crc32

# Every entry of a Kafka log, whatever its magic, starts with offset (int64) and size (int32); the magic
# byte is always at entry offset 16 (Records.MAGIC_OFFSET). kfmt.log.batches frames entries with these too.
LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0
MIN_SIZE = {0: 14, 1: 22, 2: 49}  # LegacyRecord.RECORD_OVERHEAD_V0/V1, DefaultRecordBatch.RECORD_BATCH_OVERHEAD - 12
_NONZERO = re.compile(rb"[^\x00]")
_MAGIC = re.compile(rb"[\x00-\x02]")
# The largest entry a reader finds after damage (and the longest batch being written it leaves out at a log's
# end). Kafka's default message.max.bytes is 1 MiB; a larger entry right after damage is counted in the
# damaged region. A reader holds at most this much of a damaged region, whatever the region's length.
RESYNC_MAX_ENTRY = 64 << 20
_SIZE = struct.Struct(">i")
_U32 = struct.Struct(">I")


_ZEROS = bytes(1 << 16)


def zero_run_end(buf, pos: int, n: int) -> int:
    """End of the run of zero bytes starting at ``pos`` (``pos`` itself if that byte is not zero); a long run is
    compared block by block (a memory comparison, many times faster than a pattern search)."""
    m = _NONZERO.search(buf, pos, min(n, pos + 256))
    if m:
        return m.start()
    pos = min(n, pos + 256)
    block = len(_ZEROS)
    while pos + block <= n and buf[pos : pos + block] == _ZEROS:
        pos += block
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
        return checksums.crc32c(buf[p + 21 : end]) == _U32.unpack_from(buf, p + 17)[0]
    return crc32(buf[p + 16 : end]) == _U32.unpack_from(buf, p + 12)[0]


def next_entry(buf, pos: int, n: int, decode=None) -> int:
    """The first position after ``pos`` where a valid entry starts, or ``n`` if there is none."""
    return find_entry(buf, pos + 1, n, True, decode)[0]


def find_entry(buf, p: int, n: int, final: bool, decode=None) -> tuple[int, int]:
    """Resynchronise: ``(q, hold)``, ``q`` the first position from ``p`` where a valid entry of at most
    :data:`RESYNC_MAX_ENTRY` bytes starts (``n``: none in ``buf[:n]``).

    Unless ``final`` (``n`` is the end of the data), an entry may still start where its bytes run past ``n``:
    then ``q`` is ``n`` and ``hold`` the first such position, from where the search goes on once more bytes
    are in (every position before ``hold`` is judged: nothing there). A reader holds at most
    ``RESYNC_MAX_ENTRY`` bytes of a damaged region, whatever its length, and crosses it in linear time.

    Only positions whose magic byte is a log's (0, 1, 2) are tried, and zero runs are skipped at C speed (an
    entry never starts inside one more than 16 bytes before its first non-zero byte: its offset's high bytes
    may be zero, its size and magic-or-CRC are not all zero).
    """
    while p < n:
        z = zero_run_end(buf, p, n)
        if z - p > 16:
            p = z - 16
        if n - p < HEADER_SIZE_UP_TO_MAGIC:
            break
        if decode is None:  # the next position with a log's magic byte
            m = _MAGIC.search(buf, p + 16, n)
            if m is None:
                p = n - 16
                break
            p = m.start() - 16
        size = _SIZE.unpack_from(buf, p + 8)[0]
        if MIN_ENTRY_SIZE <= size <= RESYNC_MAX_ENTRY:
            if p + LOG_OVERHEAD + size > n:
                if not final:
                    return n, p
            elif valid_entry_at(buf, p, n, decode):
                return p, n
        p += 1
    return n, (n if final else max(p, 0))


def describe(length: int, zero_filled: bool) -> str:
    """Words for a damaged region: zero-filled, or how many bytes could not be read."""
    if zero_filled:
        return f"{length} zero byte(s) (a zero-filled region, as a preallocated segment or an unclean shutdown leaves)"
    return f"{length} byte(s) hold no valid entry"
