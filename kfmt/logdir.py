"""Kafka log directories on disk: segments in offset order, and their .index / .timeindex files.

Layout (Kafka's LocalLog): ``<log dir>/<topic>-<partition>/<20-digit base offset>.log``, with
``.index`` (8-byte entries: int32 relative offset, int32 file position) and ``.timeindex``
(12-byte entries: int64 timestamp, int32 relative offset) beside each segment. Index files are
preallocated, so trailing all-zero entries are not entries.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_PARTITION = re.compile(r"^(.+)-(\d+)$")


@dataclass(frozen=True, order=True)
class Segment:
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int


def _segment(path: Path, topic: str, partition: int) -> Segment:
    m = _SEGMENT.match(path.name)
    base = int(m.group(1)) if m else 0
    return Segment(topic, partition, base, str(path), path.stat().st_size)


def _topic_partition(d: Path) -> tuple[str, int]:
    m = _PARTITION.match(d.name)
    return (m.group(1), int(m.group(2))) if m else (d.name, -1)


def find_segments(paths) -> list[Segment]:
    """Segments under the given files / partition folders / log directories, sorted by topic, partition, offset."""
    out: list[Segment] = []
    for raw in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        p = Path(raw)
        if p.is_file():
            topic, part = _topic_partition(p.parent)
            out.append(_segment(p, topic, part))
        elif p.is_dir():
            logs = sorted(x for x in p.iterdir() if x.is_file() and x.suffix == ".log")
            if logs:
                topic, part = _topic_partition(p)
                out.extend(_segment(x, topic, part) for x in logs)
            for d in sorted(x for x in p.iterdir() if x.is_dir()):
                segs = [x for x in d.iterdir() if x.is_file() and x.suffix == ".log"]
                topic, part = _topic_partition(d)
                out.extend(_segment(x, topic, part) for x in segs)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return sorted(set(out))


def read_offset_index(path) -> list[tuple[int, int]]:
    """Entries ``(relative_offset, position)`` of a .index file."""
    return _entries(path, ">ii")


def read_time_index(path) -> list[tuple[int, int]]:
    """Entries ``(timestamp, relative_offset)`` of a .timeindex file."""
    return _entries(path, ">qi")


def _entries(path, fmt: str) -> list[tuple[int, int]]:
    st = struct.Struct(fmt)
    p = Path(path)
    if not p.is_file():
        return []
    data = p.read_bytes()
    out = []
    for i in range(0, len(data) - st.size + 1, st.size):
        entry = st.unpack_from(data, i)
        if entry == (0, 0) and i > 0:
            break
        out.append(entry)
    return out


def check_indexes(segment: Segment, batches: list[tuple[int, int, int, int]]) -> list[str]:
    """Compare a segment's indexes with its batches ``(position, base_offset, last_offset, max_timestamp)``.

    Kafka indexes an append by its largest offset and the file position where the append starts, and the
    time index by the largest timestamp so far and its offset; every entry must point at a real batch.
    """
    problems = []
    stem = Path(segment.path).with_suffix("")
    by_pos = {pos: (base, last) for pos, base, last, _ in batches}
    for rel, pos in read_offset_index(f"{stem}.index"):
        off = segment.base_offset + rel
        # an entry says "offset `off` is found at or after file position `pos`" (the start of the append)
        if pos not in by_pos:
            problems.append(f".index entry offset {off} -> position {pos}: no batch starts there")
        elif by_pos[pos][0] > off or not any(p >= pos and b <= off <= last for p, b, last, _ in batches):
            problems.append(f".index entry offset {off} -> position {pos}: offset not found from that position on "
                            f"(batch there holds {by_pos[pos][0]}-{by_pos[pos][1]})")  # fmt: skip
    last_ts = None
    for ts, rel in read_time_index(f"{stem}.timeindex"):
        off = segment.base_offset + rel
        hit = [b for b in batches if b[1] <= off <= b[2]]
        if not hit:
            problems.append(f".timeindex entry ({ts}, offset {off}): no batch holds that offset")
        elif hit[0][3] > ts:
            problems.append(f".timeindex entry ({ts}, offset {off}): the batch's max timestamp is {hit[0][3]}")
        if last_ts is not None and ts < last_ts:
            problems.append(f".timeindex entry ({ts}, offset {off}): timestamps go backwards")
        last_ts = ts
    return problems
