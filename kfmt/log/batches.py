"""A log's batches: ``read_batches`` and ``scan``, over bytes, a path or a binary file, with transactions
resolved for read_committed; the loop itself is :mod:`kfmt.log.scanner`'s."""

from __future__ import annotations

import functools
import mmap
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

from kfmt.log.scanner import (  # the scan loop, and what its callers name through kfmt.log.batches
    _scan,
    _scan_stream,
)
from kfmt.runtime.errors import CodecError
from kfmt.runtime.model import Batch
from kfmt.runtime.options import options_for


def read_batches(
    data,
    *,
    verify_crc: bool = True,
    format: str | None = None,
    opts=None,
    backend: str | None = None,
    isolation: str = "read_uncommitted",
    partial_tail: str = "ignore",
    on_corrupt="fail",
) -> Iterator[Batch]:
    """Iterate the batches of a Kafka log: bytes-like data (segment bytes, a fetch payload), a path, or a
    binary file (read in chunks: memory does not grow with the file).

    The magic byte of each entry selects the codec (v0, v1 and v2 may be mixed).
    ``format`` forces one format for every entry (required for proposals that reuse a real magic);
    ``backend="construct"`` reads with the reference backend.  ``isolation="read_committed"`` leaves out
    the records of aborted (and still open) transactions, as a Kafka consumer does.  A truncated tail
    ends iteration quietly, as a fetch response's partial last batch does in Kafka (``partial_tail=
    "error"`` raises :class:`TruncatedError` instead, with the count of bytes not read); anything else
    wrong raises a :class:`CodecError` naming the byte offset.

    ``on_corrupt="skip"`` (or a function taking the error) goes on after damage instead: a corrupt batch
    or a damaged region (broken framing, a zero-filled hole or tail, bytes that hold no entry) is passed to
    the function, or logged as a warning, with ``batch_position`` and ``unread`` (the region's length) set,
    and reading resumes at the next position where a complete entry with a valid CRC starts. Every byte
    is then either in a batch or in a reported region, the incomplete tail included.
    """
    if partial_tail not in ("ignore", "error"):
        raise ValueError(f"partial_tail must be 'ignore' or 'error', not {partial_tail!r}")
    if on_corrupt == "fail":
        return _items(data, verify_crc, format, opts, backend, False, False, partial_tail == "error", isolation)
    if on_corrupt == "skip":
        on_corrupt = _log_damage
    if not callable(on_corrupt):
        raise ValueError(f"on_corrupt must be 'fail', 'skip' or a function taking the error, not {on_corrupt!r}")
    return _reporting(_items(data, verify_crc, format, opts, backend, True, True, True, isolation), on_corrupt)


def _log_damage(e: CodecError) -> None:
    import logging

    logging.getLogger("kfmt").warning("skipped %d byte(s) at byte %s: %s", e.unread or 0, e.batch_position, e)


def _reporting(items, report) -> Iterator[Batch]:
    for pos, end, b in items:
        if isinstance(b, CodecError):
            if b.unread is None:
                b.unread = end - pos
            report(b)
        else:
            yield b


def scan(
    data,
    *,
    verify_crc: bool = True,
    format: str | None = None,
    opts=None,
    backend: str | None = None,
    skip_corrupt: bool = False,
    isolation: str = "read_uncommitted",
    sink=None,
    run_limits: tuple[int, int] | None = None,
) -> Iterator[tuple[int, int, Batch | CodecError]]:
    """Yield ``(position, end, batch)`` for each entry of a log (bytes-like data, a path or a binary file).

    Every byte is accounted for: bytes at the end that do not hold a complete entry raise a
    :class:`TruncatedError` (``unread`` bytes from ``batch_position``).  With ``skip_corrupt`` a batch
    that fails to decode (bad CRC, bad record...) is yielded as its ``CodecError`` instead and reading
    goes on at the next entry, whose framing is intact; a broken entry framing (a size below the
    minimum) or an incomplete tail is yielded as the last item, ``(position, len(data), error)``.

    ``sink`` (a ``kfmt.runtime.native._columns.Columns``, as :mod:`kfmt.log.arrow` passes) has the native backend
    decode records straight into Arrow columns: a batch so decoded comes with ``records`` a :class:`Rows`
    (an empty list saying how many rows it appended), others with their records as usual.  With ``run_limits``
    (most rows, most bytes of data the sink may hold) too, consecutive batches the native backend decodes cleanly
    into the sink come as one item, ``(position, end, BatchRun)`` (control batches never do: they come alone).
    """
    into = ColumnsSink(sink, run_limits) if sink is not None else None
    return _items(data, verify_crc, format, opts, backend, skip_corrupt, True, True, isolation, into)


class ColumnsSink(NamedTuple):
    """Where the readers below ``scan`` decode records straight into Arrow columns: the native column buffers,
    and the limits of a run of batches decoded in one call (None: batch by batch)."""

    columns: Any
    run_limits: tuple[int, int] | None = None


ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def _items(data, verify_crc, format, opts, backend, skip_corrupt, positions, strict_tail, isolation, sink=None):
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_LEVELS)}, not {isolation!r}")
    opts = opts or options_for(verify_crc)
    committed = isolation == "read_committed"
    # transactions are resolved first (a pass over batch headers), so batches come out in log order
    args = (opts, format, backend, skip_corrupt, strict_tail, positions or committed)
    if sink is not None and committed:
        raise ValueError("decoding into columns reads every batch: resolve isolation on the rows")
    if isinstance(data, (str, os.PathLike)):
        return _from_path(os.fspath(data), args, positions, committed, sink)
    if hasattr(data, "read") and not isinstance(data, (bytes, bytearray, memoryview)):
        _check_binary(data)
        if committed:
            raise ValueError("isolation='read_committed' needs a path or bytes (transactions are resolved first)")
        return _scan_stream(data, *args, sink=sink)
    try:
        # bytes and mmap objects are read in place (slicing either gives bytes); others are copied once
        buf = data if type(data) in (bytes, mmap.mmap) else bytes(memoryview(data))
    except TypeError:
        raise TypeError(f"a Kafka log is bytes-like data, a path or a binary file, not {type(data).__name__}") from None
    # bytes are judged as a file's are: a first entry that runs past the end is damage, never 0 batches
    items = _scan(buf, 0, len(buf), *args, True, sink, True)
    if committed:
        from kfmt.log.txn import committed_only, transactions

        return committed_only(items, transactions(buf, format=format), positions)
    return items


def _check_binary(f) -> None:
    """A file opened in text mode cannot hold a log: say so in one line (not a UnicodeDecodeError later)."""
    import io

    if isinstance(f, io.TextIOBase) or "b" not in getattr(f, "mode", "b"):
        raise TypeError(f"a Kafka log file must be opened in binary mode: open({getattr(f, 'name', '...')!r}, 'rb')")


def _from_path(path, args, positions, committed, sink=None):
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"{path} is a folder: read_batches reads one segment file (<offset>.log); for a partition folder or a"
            " log directory use kfmt.read_arrow(path) or kfmt.logdir.layout.find_segments(path), or kfmt dump"
        )
    f = open(path, "rb")  # noqa: SIM115 - opened now (a missing file fails here), closed by _closing
    items = _scan_stream(f, *args, sink=sink)
    if committed:
        from kfmt.log.txn import committed_only, transactions

        with open(path, "rb") as g:
            items = committed_only(items, transactions(g, format=args[1]), positions)
    return _closing(items, f)


def _closing(items, f):
    with f:
        yield from items


__all__ = ["ISOLATION_LEVELS", "ColumnsSink", "read_batches", "scan"]


class Written(NamedTuple):
    """What a writer's check needs of an entry it wrote: its offsets, records and leader epoch."""

    magic: int
    base_offset: int
    last_offset: int
    records: int
    partition_leader_epoch: int


def written_entries(data) -> list[tuple[int, int, Written]]:
    """``(start, end, facts)`` of every entry of bytes a writer wrote (staged files, segments being published),
    each checked whole: v2 batches by their CRC-32C over everything after the CRC, and their headers (the bytes
    are the ones encoded: their records need not be decoded again); anything else decoded. Raises the
    :class:`CodecError` of the first entry that is not so."""
    v2 = written_entries_v2(data)
    if v2 is not None:
        return v2
    out = []
    for pos, end, b in scan(data):
        if isinstance(b, CodecError):  # (scan without skip_corrupt raises; kept for the type checker)
            raise b
        magic = -1 if b.magic is None else b.magic
        out.append((pos, end, Written(magic, b.base_offset, b.last_offset, len(b.records), b.partition_leader_epoch)))
    return out


def written_entries_v2(data) -> list[tuple[int, int, Written]] | None:
    """The entries of ``data`` when every one is a v2 batch, each checked by its CRC-32C and its length (None when
    one is not a v2 batch; a CodecError raised for the first that does not check). Its records are not read.
    Where every entry is a sound v2 batch, kfmt.runtime.native._sealed finds them (where built); else this."""
    import struct

    native = _native_sealed()
    found = None if native is None else native.entries(data)
    if found is not None:
        return [(pos, end, Written(2, base, base + delta, records, epoch)) for pos, end, base, delta, records, epoch
                in found]  # fmt: skip

    from kfmt.log.resync import LOG_OVERHEAD, MIN_SIZE
    from kfmt.runtime.checksums import crc32c
    from kfmt.runtime.errors import ChecksumError, TruncatedError

    out: list[tuple[int, int, Written]] = []
    pos, n = 0, len(data)
    view = memoryview(data)
    while pos < n:
        if n - pos < LOG_OVERHEAD + MIN_SIZE[2] or data[pos + 16] != 2:
            return None
        base, length, epoch, _, crc = struct.unpack_from(">qiibI", data, pos)
        end = pos + LOG_OVERHEAD + length
        if length < MIN_SIZE[2] or end > n:
            raise TruncatedError(f"batch_length {length} runs past the end ({n - pos - LOG_OVERHEAD} bytes left)",
                                 offset=pos + 8, path="batch.batch_length")  # fmt: skip
        computed = crc32c(view[pos + 21 : end])
        if computed != crc:
            raise ChecksumError(f"stored crc32c {crc:#010x} != computed {computed:#010x} (corrupt data)", offset=pos + 21,
                                path="batch.crc")  # fmt: skip
        delta, records = struct.unpack_from(">i", data, pos + 23)[0], struct.unpack_from(">i", data, pos + 57)[0]
        out.append((pos, end, Written(2, base, base + delta, records, epoch)))
        pos = end
    return out


@functools.lru_cache(maxsize=1)
def _native_sealed():
    """kfmt.runtime.native._sealed where it is built and the native backend is not turned off, else None."""
    from kfmt.runtime.native import extension

    return extension("_sealed")
