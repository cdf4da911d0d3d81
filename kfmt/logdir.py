"""Kafka log directories on disk: segments in offset order.

Layouts read:

- Kafka's LocalLog: ``<log dir>/<topic>-<partition>/<20-digit base offset>.log``;
- tiered storage (KIP-405) as the common remote storage plugins write it:
  ``<topic>-<topicId>/<partition>/<20-digit base offset>-<segmentId>.log``;
- Kafka's own LocalTieredStorage: ``<topic>-<partition>-<topicId>/<base offset>-<segmentId>.log``.

A topic id is Kafka's ``Uuid`` as text (22 characters of URL-safe base64). The files beside each segment
(indexes, snapshots, checkpoints) are read by :mod:`kfmt.logfiles`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

#: a segment's name: ``<base offset>.log``, or ``<base offset>-<segmentId>.log`` in tiered storage
SEGMENT_NAME = re.compile(r"^(\d{1,20})(?:-([A-Za-z0-9_-]+))?\.log$")
_PARTITION = re.compile(r"^(.+)-(\d+)$")
_TOPIC_ID = r"[A-Za-z0-9_-]{22}"
_PARTITION_ID = re.compile(rf"^(.+)-(\d+)-{_TOPIC_ID}$")  # LocalTieredStorage: <topic>-<partition>-<topicId>
_TOPIC_WITH_ID = re.compile(rf"^(.+)-{_TOPIC_ID}$")  # remote storage plugins: <topic>-<topicId>/<partition>

#: how objects stored compressed whole begin (a remote storage plugin with compression on), by name
COMPRESSED_OBJECTS = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x1f\x8b", "gzip"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"\xff\x06\x00\x00sNaPpY", "snappy (framed)"),
)


def compressed_object(head: bytes) -> str | None:
    """The compression a file starting with ``head`` is stored with as a whole, if it is one of those."""
    return next((name for magic, name in COMPRESSED_OBJECTS if bytes(head[: len(magic)]) == magic), None)


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


def topic_partition(d: Path | PurePosixPath) -> tuple[str, int]:
    """``(topic, partition)`` of the folder holding a segment: ``<topic>-<partition>``,
    ``<topic>-<partition>-<topicId>``, or ``<partition>`` inside ``<topic>-<topicId>`` (else the folder's
    name and -1)."""
    name = d.name
    m = _PARTITION_ID.match(name)
    if m:
        return m.group(1), int(m.group(2))
    if name.isdigit():
        t = _TOPIC_WITH_ID.match(d.parent.name)
        return (t.group(1) if t else d.parent.name), int(name)
    m = _PARTITION.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def find_segments(paths, options: dict | None = None) -> list[Segment]:
    """Segments under the given files / partition folders / log directories, local or URIs (``s3://...``,
    see :mod:`kfmt.storage`; ``options`` configure the store), sorted by topic, partition, offset."""
    out: list[Segment] = []
    for raw in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        from kfmt.storage import is_uri, list_logs

        if is_uri(raw):
            for uri, size in list_logs(str(raw), options):
                topic, part = topic_partition(PurePosixPath(uri.split("://", 1)[1]).parent)
                m = SEGMENT_NAME.match(uri.rsplit("/", 1)[1])
                out.append(Segment(topic, part, int(m.group(1)) if m else 0, uri, size))
            continue
        p = Path(raw)
        if p.is_file():
            topic, part = topic_partition(p.parent)
            out.append(_segment(p, topic, part))
        elif p.is_dir():
            # a partition folder, a log directory, or a tiered-storage prefix (<topic>-<topicId>/<partition>/)
            for d in [p, *sorted(x for x in p.iterdir() if x.is_dir())]:
                numbered = sorted(x for x in d.iterdir() if x.is_dir() and x.name.isdigit()) if d != p else []
                for sub in [d, *numbered]:
                    segs = [x for x in sub.iterdir() if x.is_file() and x.suffix == ".log"]
                    if segs:
                        topic, part = topic_partition(sub)
                        out.extend(_segment(x, topic, part) for x in segs)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return sorted(set(out))
