"""Offsets of a topic-partition's segments, found by reading them (locally or in a store): the last one,
and the one a broker answers for a timestamp."""

from __future__ import annotations

from kfmt.logdir.layout import Segment


def _batches(seg: Segment, options: dict | None):
    """The batches of a segment that decode (damage is the readers' to report)."""
    from kfmt.log.arrow import _Range
    from kfmt.log.batches import scan
    from kfmt.storage import open_input

    with open_input(seg.path, options) as f:
        yield from (b for _, _, b in scan(_Range(f, 0, seg.size), skip_corrupt=True) if not isinstance(b, Exception))


def offset_for_timestamp(segments: list[Segment], timestamp: int, options: dict | None = None) -> int | None:
    """The earliest offset of a partition's ``segments`` (in offset order) whose record timestamp is at least
    ``timestamp`` (ms), as a broker answers a ListOffsets request by timestamp (``offsetsForTimes``):
    control records count, v2 batches whose max timestamp is below are passed over. None: no such record."""
    for seg in segments:
        for b in _batches(seg, options):
            if getattr(b, "max_timestamp", timestamp) >= timestamp:
                for r in b.records:
                    if r.timestamp >= timestamp:
                        return r.offset
    return None


def last_offset(seg: Segment, options: dict | None = None) -> int:
    """The last offset in the segment (its base offset - 1 when it holds no readable batch)."""
    return max((b.last_offset for b in _batches(seg, options)), default=seg.base_offset - 1)
