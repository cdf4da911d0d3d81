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
from pathlib import Path, PurePath
from typing import TypeVar

from kfmt.logdir.layout import SEGMENT_NAME

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


class IndexBuilder:
    """The ``.index`` and ``.timeindex`` of a segment built as its entries are appended (``add``), so a
    segment written as a stream never has to be held whole."""

    def __init__(self, base_offset: int, interval: int = INDEX_INTERVAL_BYTES):
        self.base, self.interval = base_offset, interval
        self.index, self.timeindex = bytearray(), bytearray()
        self.size = 0  # bytes appended so far: the file position of the next entry
        self.last_entry = 0
        self.max_ts, self.max_ts_offset = -1, base_offset
        self.last_indexed: int | None = None
        self.last_time = (-1, base_offset)

    def add(self, data) -> None:
        """Append ``data``: whole log entries (a trailing incomplete one is not indexed, as in recovery)."""
        pos, n = 0, len(data)
        while pos + 17 <= n:
            end, last_offset, ts = entry_facts(data, pos)
            if end > n:
                break
            valid = self.size + pos
            if ts > self.max_ts:
                self.max_ts, self.max_ts_offset = ts, last_offset
            if valid - self.last_entry > self.interval:
                if self.last_indexed is None or last_offset > self.last_indexed:
                    self.index += _OFFSET_ENTRY.pack(last_offset - self.base, valid)
                    self.last_indexed = last_offset
                if self.max_ts > self.last_time[0]:
                    self.timeindex += _TIME_ENTRY.pack(self.max_ts, self.max_ts_offset - self.base)
                    self.last_time = (self.max_ts, self.max_ts_offset)
                self.last_entry = valid
            pos = end
        self.size += n

    def finish(self) -> tuple[bytes, bytes]:
        timeindex = bytes(self.timeindex)
        if self.max_ts > self.last_time[0]:  # a closed segment ends its time index with the largest timestamp
            timeindex += _TIME_ENTRY.pack(self.max_ts, self.max_ts_offset - self.base)
        return bytes(self.index), timeindex


def build_indexes(data, base_offset: int, interval: int = INDEX_INTERVAL_BYTES) -> tuple[bytes, bytes]:
    """The ``.index`` and ``.timeindex`` bytes a broker's recovery writes for a segment holding ``data``."""
    b = IndexBuilder(base_offset, interval)
    b.add(data)
    return b.finish()


_P = TypeVar("_P", bound=PurePath)


def segment_files(log: _P, data, base_offset: int) -> list[tuple[_P, bytes]]:
    """A segment ``log`` (``<base offset>.log``) holding ``data``, with the ``.index`` and ``.timeindex``
    a broker writes beside it: ``[(path, bytes), ...]``, the log first."""
    index, timeindex = build_indexes(data, base_offset)
    return [(log, bytes(data)), (log.with_suffix(".index"), index), (log.with_suffix(".timeindex"), timeindex)]


class SegmentWriter:
    """Writes a segment as a stream of whole entries (``write``), with its indexes when its name is a base
    offset (``<offset>.log``); ``close`` writes the indexes. Memory holds the indexes only."""

    def __init__(self, log: Path):
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log
        named = SEGMENT_NAME.match(log.name) is not None
        self.indexes = IndexBuilder(int(log.stem)) if named else None
        self.file = open(log, "wb")  # noqa: SIM115 - closed by close()

    def write(self, blob) -> None:
        self.file.write(blob)
        if self.indexes is not None:
            self.indexes.add(blob)

    def close(self) -> None:
        self.file.close()
        if self.indexes is not None:
            index, timeindex = self.indexes.finish()
            self.log.with_suffix(".index").write_bytes(index)
            self.log.with_suffix(".timeindex").write_bytes(timeindex)
