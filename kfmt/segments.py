"""Kafka's sparse segment indexes, built from a segment's bytes as the broker rebuilds them.

``LogSegment.recover`` walks the batches of a segment and, whenever more than ``index.interval.bytes``
(4096 by default) were appended since the last entry, adds an ``.index`` entry (relative last offset of
the batch, its file position) and a ``.timeindex`` entry (largest timestamp so far, and the offset of
that batch) if the timestamp grew; a closed segment's time index also ends with the largest timestamp
seen.  Only batch headers are read: a v2 batch's lastOffsetDelta and maxTimestamp, a legacy entry's
offset (a wrapper carries its last inner offset) and v1 timestamp.
"""

from __future__ import annotations

import struct
from pathlib import Path

INDEX_INTERVAL_BYTES = 4096
_ENTRY = struct.Struct(">qi")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def entry_facts(buf, pos: int) -> tuple[int, int, int]:
    """``(end, last_offset, max_timestamp)`` of the complete log entry at ``pos`` (headers only)."""
    offset, size = _ENTRY.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic >= 2:
        (last_delta,) = struct.unpack_from(">i", buf, pos + 23)
        (max_ts,) = struct.unpack_from(">q", buf, pos + 35)
        return pos + 12 + size, offset + last_delta, max_ts
    max_ts = struct.unpack_from(">q", buf, pos + 18)[0] if magic == 1 else -1
    return pos + 12 + size, offset, max_ts


def build_indexes(data, base_offset: int, interval: int = INDEX_INTERVAL_BYTES) -> tuple[bytes, bytes]:
    """The ``.index`` and ``.timeindex`` bytes a broker's recovery writes for a segment holding ``data``."""
    index, timeindex = bytearray(), bytearray()
    valid = last_entry = 0
    max_ts, max_ts_offset = -1, base_offset
    last_indexed, last_time = None, (-1, base_offset)
    n = len(data)
    while valid + 17 <= n:
        end, last_offset, ts = entry_facts(data, valid)
        if end > n:
            break
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last_offset
        if valid - last_entry > interval:
            if last_indexed is None or last_offset > last_indexed:
                index += _OFFSET_ENTRY.pack(last_offset - base_offset, valid)
                last_indexed = last_offset
            if max_ts > last_time[0]:
                timeindex += _TIME_ENTRY.pack(max_ts, max_ts_offset - base_offset)
                last_time = (max_ts, max_ts_offset)
            last_entry = valid
        valid = end
    if max_ts > last_time[0]:  # a closed segment ends its time index with the largest timestamp
        timeindex += _TIME_ENTRY.pack(max_ts, max_ts_offset - base_offset)
    return bytes(index), bytes(timeindex)


def segment_files(log: Path, data, base_offset: int) -> list[tuple[Path, bytes]]:
    """A segment ``log`` (``<base offset>.log``) holding ``data``, with the ``.index`` and ``.timeindex``
    a broker writes beside it: ``[(path, bytes), ...]``, the log first."""
    index, timeindex = build_indexes(data, base_offset)
    return [(log, bytes(data)), (log.with_suffix(".index"), index), (log.with_suffix(".timeindex"), timeindex)]
