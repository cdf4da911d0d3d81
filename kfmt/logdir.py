"""Kafka log directories on disk: segments in offset order.

Layout (Kafka's LocalLog): ``<log dir>/<topic>-<partition>/<20-digit base offset>.log``; the files beside
each segment (indexes, snapshots, checkpoints) are read by :mod:`kfmt.logfiles`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")  # <20-digit base offset>.log
_PARTITION = re.compile(r"^(.+)-(\d+)$")


@dataclass(frozen=True, order=True)
class Segment:
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int


def _segment(path: Path, topic: str, partition: int) -> Segment:
    m = SEGMENT_NAME.match(path.name)
    base = int(m.group(1)) if m else 0
    return Segment(topic, partition, base, str(path), path.stat().st_size)


def topic_partition(d: Path) -> tuple[str, int]:
    """``(topic, partition)`` of a ``<topic>-<partition>`` folder (else the folder's name and -1)."""
    m = _PARTITION.match(d.name)
    return (m.group(1), int(m.group(2))) if m else (d.name, -1)


def find_segments(paths) -> list[Segment]:
    """Segments under the given files / partition folders / log directories, sorted by topic, partition, offset."""
    out: list[Segment] = []
    for raw in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        p = Path(raw)
        if p.is_file():
            topic, part = topic_partition(p.parent)
            out.append(_segment(p, topic, part))
        elif p.is_dir():
            logs = sorted(x for x in p.iterdir() if x.is_file() and x.suffix == ".log")
            if logs:
                topic, part = topic_partition(p)
                out.extend(_segment(x, topic, part) for x in logs)
            for d in sorted(x for x in p.iterdir() if x.is_dir()):
                segs = [x for x in d.iterdir() if x.is_file() and x.suffix == ".log"]
                topic, part = topic_partition(d)
                out.extend(_segment(x, topic, part) for x in segs)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return sorted(set(out))
