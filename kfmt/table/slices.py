"""A slice of a segment (a byte range at batch boundaries, with the offsets and transactions it resolves) and
its reading into Arrow batches: the code the Spark source's executors run, and read_arrow through it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kfmt.log.arrow import (
    _Range,
    arrow_schema,
)

log = logging.getLogger("kfmt.spark")


@dataclass(frozen=True)
class SegmentSlice:
    """One input partition: a segment file, or a range of it cut at batch boundaries."""

    path: str
    topic: str
    partition: int
    start: int
    end: int
    #: offsets to return, [first, stop) (None: unbounded)
    first_offset: int | None = None
    stop_offset: int | None = None
    #: read_committed: the partition's aborted transactions ``(producer id, first, last)`` and open ones
    aborted: tuple | None = None
    open_txns: tuple | None = None
    #: the slice ends where its partition's last segment ended when planned: an incomplete last batch there
    #: is one being written (not yet data, as Kafka's fetch leaves it out), not damage
    live_end: bool = False


def read_slice(part: SegmentSlice, verify_crc=True, include_control=False, on_corrupt="fail", columns=None,
               backend=None, storage=None, decompress=False, format=None, raw_errors=False):  # fmt: skip
    """Yield Arrow record batches for one input partition (runs on executors); ``columns`` projects. The
    slice's byte range is read from its file or object (``storage``: options of kfmt.storage).
    ``decompress``: an object stored compressed whole is decompressed and read (the slice then covers it
    all; such an object is never cut into several slices)."""
    import dataclasses

    from kfmt.storage import open_input, open_segment

    if not decompress:
        with open_input(part.path, storage) as f:
            yield from _read_range(
                f, part, verify_crc, include_control, on_corrupt, columns, backend, format, raw_errors
            )
        return
    f, size, packed = open_segment(part.path, storage)
    with f:
        if packed:
            if part.start:
                return  # the object's bytes are not entries: the slice from byte 0 reads it all
            log.info(
                "kafka-log: %s is stored %s-compressed whole: read decompressed (%d bytes)", part.path, packed, size
            )
            part = dataclasses.replace(part, start=0, end=size)
        yield from _read_range(f, part, verify_crc, include_control, on_corrupt, columns, backend, format, raw_errors)


def _read_range(
    f, part: SegmentSlice, verify_crc, include_control, on_corrupt, columns, backend=None, format=None, raw_errors=False
):
    """Arrow batches of one slice (:func:`kfmt.log.arrow.rows`). A corrupt batch (``on_corrupt="fail"``) is a one-line
    ValueError naming the file for Spark, or with ``raw_errors`` the :class:`kfmt.CodecError` itself (``read_arrow``)."""
    import pyarrow as pa

    from kfmt.log.arrow import Reading, rows
    from kfmt.runtime.errors import CodecError

    dropped = None
    if part.aborted is not None:
        from kfmt.log.txn import Transactions

        dropped = Transactions(list(part.aborted), dict(part.open_txns or ())).is_dropped
    reading = Reading(tuple(columns or arrow_schema(pa).names), verify_crc, format, backend, on_corrupt,
                      include_control, dropped, part.first_offset, part.stop_offset, part.start, part.live_end)  # fmt: skip
    try:
        yield from rows(_Range(f, part.start, part.end), part, reading)
    except CodecError as e:
        if raw_errors:
            raise
        at = part.start + (getattr(e, "batch_position", None) or 0)
        raise ValueError(f"kafka-log: corrupt batch in {part.path} at byte {at}: {e} "
                         "(option on_corrupt=skip or quarantine to go on)") from None  # fmt: skip
