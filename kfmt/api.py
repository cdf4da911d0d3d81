"""Reading and writing Kafka logs with the generated codecs."""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from kfmt.formats import backend_module, default_backend, format_ids, get_format
from kfmt.formats import by_magic as _by_magic
from kfmt.resync import (  # the entry framing constants live beside the resynchronisation that uses them
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MIN_ENTRY_SIZE,
    describe,
    find_entry,
    valid_entry_at,
    zero_run_end,
)
from kfmt.runtime.errors import CodecError, InvalidValueError, TruncatedError, UnsupportedCodecError
from kfmt.runtime.model import Batch, Record
from kfmt.runtime.options import options_for
from kfmt.storage import compressed_object

_ENTRY = struct.Struct(">qi")


def _entry_end(buf, pos: int, n: int) -> int:
    """End of the log entry at ``pos``, or -1 at a truncated tail (Kafka stops there quietly)."""
    if n - pos < HEADER_SIZE_UP_TO_MAGIC:
        return -1
    _, size = _ENTRY.unpack_from(buf, pos)
    if size < MIN_ENTRY_SIZE:
        raise InvalidValueError(
            f"entry size {size} is less than the minimum record overhead ({MIN_ENTRY_SIZE})",
            offset=pos + 8,
            path="log.entry.size",
        )
    end = pos + LOG_OVERHEAD + size
    return end if end <= n else -1


def packed_hint(head) -> str:
    """What to add to an error at the start of a file that begins as a compressed stream ('' otherwise)."""
    packed = compressed_object(head)
    if not packed:
        return ""
    return (f"; the file starts as a {packed}-compressed stream: a segment object stored compressed whole (as a"
            " remote storage plugin does with compression on), not a Kafka segment: decompress it first"
            " (the Spark source and read_arrow(compressed_objects='read') do)")  # fmt: skip


def tail_error(buf, pos: int, n: int, total: int | None = None, file_pos: int | None = None) -> TruncatedError:
    """The error describing the bytes from ``pos`` to the end of the data (``total``, when ``buf`` holds only
    the first ``n``) that do not hold a complete entry; ``file_pos``: where ``pos`` is in the file (the start
    of a file gets a hint when it is a compressed stream), if not ``pos``."""
    left = (n if total is None else total) - pos
    if n - pos < HEADER_SIZE_UP_TO_MAGIC:
        why = f"too short for an entry header ({HEADER_SIZE_UP_TO_MAGIC} bytes up to the magic)"
    else:
        size = _ENTRY.unpack_from(buf, pos)[1]
        why = f"the entry there declares size {size}, which runs {LOG_OVERHEAD + size - left} bytes past the end"
    if (pos if file_pos is None else file_pos) == 0:
        why += packed_hint(buf[pos : pos + 16])
    e = TruncatedError(f"{left} byte(s) not read: {why}", offset=pos, path="log.entry")
    e.batch_position = pos
    e.unread = left
    return e


def iter_entries(buf, *, start: int = 0) -> Iterator[tuple[int, int, int]]:
    """Yield ``(position, end, magic)`` for each complete log entry; stop quietly at a truncated tail."""
    n = len(buf)
    pos = start
    while (end := _entry_end(buf, pos, n)) >= 0:
        yield pos, end, buf[pos + 16]
        pos = end


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

    ``sink`` (a ``kfmt.runtime.native._columns.Columns``, as :mod:`kfmt.arrow` passes) has the native backend
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
CHUNK = 8 << 20
RUN_BYTES = 256 << 10  # input bytes of legacy entries decoded per decode_run call


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
        from kfmt.txn import committed_only, transactions

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
            " log directory use kfmt.read_arrow(path) or kfmt.logdir.find_segments(path), or kfmt dump"
        )
    f = open(path, "rb")  # noqa: SIM115 - opened now (a missing file fails here), closed by _closing
    items = _scan_stream(f, *args, sink=sink)
    if committed:
        from kfmt.txn import committed_only, transactions

        with open(path, "rb") as g:
            items = committed_only(items, transactions(g, format=args[1]), positions)
    return _closing(items, f)


def _closing(items, f):
    with f:
        yield from items


def _scan_stream(f, opts, format, backend, skip_corrupt, strict_tail, positions, *, sink=None):
    """``_scan`` over a binary file read in chunks: memory holds a chunk and an entry, and at most
    ``RESYNC_MAX_ENTRY`` bytes of a damaged region however long it is (a :class:`_Search` carries it on)."""
    total = _size_left(f)
    check = _forced_check(format, backend, opts)
    base, buf, eof = 0, b"", False
    search = None
    while True:
        if not eof:  # more is needed: the stream's start, an incomplete entry, or a search going on
            chunk = f.read(_wanted(buf, total, search))
            eof = not chunk
            buf = buf + chunk if buf else chunk
        start = 0
        if search is not None:
            q, hold = find_entry(buf, search.at - base, len(buf), eof, check)
            if q >= len(buf) and not eof:
                search.held(buf, base, hold)
                base, buf = base + hold, buf[hold:]
                continue
            item = search.ends(buf, base, q, eof)
            if item is not None:
                yield item if positions else item[2]
            search, start = None, q
        limit = None if total is None else total - base
        items = _scan(buf, start, len(buf), opts, format, backend, skip_corrupt, strict_tail, positions, eof,
                      sink, base == 0, limit, base)  # fmt: skip
        stop = yield from _shifted(items, base)
        if stop is None:
            return
        if type(stop) is _Search:
            search = stop.moved(base)
            stop = search.at - base
        base, buf = base + stop, buf[stop:]


def _size_left(f) -> int | None:
    """How many bytes are left to read in ``f`` (None: unknown, as in a pipe)."""
    left = getattr(f, "left", None)  # kfmt.arrow._Range
    if callable(left):
        return left()
    try:
        if f.seekable():
            here = f.tell()
            return max(0, os.fstat(f.fileno()).st_size - here) if hasattr(f, "fileno") else None
    except (OSError, ValueError, AttributeError):
        return None
    return None


def _wanted(buf, total: int | None, search) -> int:
    """How much to read next: a chunk, or the rest of the entry starting ``buf`` when that is longer and can
    be all there (a size running past the end of the file is never read for)."""
    if search is not None or len(buf) < LOG_OVERHEAD:
        return CHUNK
    size = _ENTRY.unpack_from(buf, 0)[1]
    if total is not None and LOG_OVERHEAD + size > total:
        return CHUNK
    return max(CHUNK, LOG_OVERHEAD + size - len(buf))


class _Search:
    """A damaged region being crossed in a stream: where it starts (relative to the buffer until ``moved``),
    the error that began it, where the search goes on, whether its bytes so far are all zero (judged up to
    ``judged``), and whether it began at an incomplete tail that ends quietly if nothing follows."""

    __slots__ = ("start", "err", "at", "zero", "judged", "quiet")

    def __init__(self, start: int, err: CodecError, quiet: bool = False):
        self.start, self.err, self.at = start, err, start + 1
        self.zero, self.judged, self.quiet = True, start, quiet

    def searched(self, buf, hold: int) -> _Search:
        """Searched up to ``hold`` of ``buf`` (nothing there); the search goes on from there."""
        self.held(buf, 0, hold)
        return self

    def moved(self, base: int) -> _Search:
        self.start, self.at, self.judged = self.start + base, self.at + base, self.judged + base
        self.err = _moved(self.err, base)
        return self

    def held(self, buf, base: int, hold: int) -> None:
        """The search goes on from ``base + hold``: the bytes before it leave the buffer."""
        self._judge(buf, base, hold)
        self.at = base + hold

    def _judge(self, buf, base: int, q: int) -> None:
        if self.zero and self.judged < base + q:
            a = max(self.judged - base, 0)
            self.zero = zero_run_end(buf, a, q) >= q
        self.judged = max(self.judged, base + q)

    def ends(self, buf, base: int, q: int, eof: bool):
        """The item reporting the region, which ends at ``base + q`` (the next valid entry, or the end)."""
        self._judge(buf, base, q)
        end = base + q
        if eof and q >= len(buf) and not self.zero and type(self.err) is TruncatedError:
            if self.quiet:
                return None
            return self.start, end, self.err  # an incomplete tail and nothing valid after it
        return self.start, end, _damaged(self.err, self.start, end, self.zero)


def _shifted(items, base):
    """Items of a chunk with positions (and error offsets) made file-relative; returns the chunk's stop."""
    if not base:
        return (yield from items)
    while True:
        try:
            item = next(items)
        except StopIteration as s:
            return s.value
        except CodecError as e:
            raise _moved(e, base) from None
        if type(item) is tuple:
            pos, end, b = item
            if type(b) is BatchRun:
                b.starts = [x + base for x in b.starts]
            item = (pos + base, end + base, _moved(b, base) if isinstance(b, CodecError) else b)
        yield item


def _moved(e: CodecError, base: int) -> CodecError:
    m = e.at(offset=None if e.offset is None else e.offset + base)
    m.batch_position = None if e.batch_position is None else e.batch_position + base
    m.unread = e.unread
    m.zero_filled = e.zero_filled
    return m


class Rows(list):
    """The records of a batch decoded straight into Arrow columns (``scan(..., sink=)``): an empty list
    standing in for them, with the number of rows appended (``n``) and the columns' state before (``mark``,
    to drop the batch again)."""

    __slots__ = ("n", "mark")

    def __init__(self, n: int, mark: bytes):
        super().__init__()
        self.n = n
        self.mark = mark


class BatchRun:
    """Consecutive batches decoded straight into Arrow columns by one native call (``scan(..., run_limits=)``):
    the batches (their records in the columns, in order), where each starts and how many rows each appended."""

    __slots__ = ("batches", "starts", "counts")

    def __init__(self, batches: list, starts: list, counts: list):
        self.batches = batches
        self.starts = starts
        self.counts = counts


@lru_cache(maxsize=None)
def _decoders(backend: str | None, _default: str) -> dict:
    """The module of ``backend`` (None: the default, ``_default`` now) for each auto-detected magic, resolved
    once per backend."""
    return {m: backend_module(mod.FORMAT_ID, backend) for m, mod in _by_magic().items()}


def _scan(  # noqa: C901 - older than the rule; to be split (#33: one scanner)
    buf,
    pos,
    n,
    opts,
    format,
    backend,
    skip_corrupt,
    strict_tail,
    positions,
    eof,
    sink=None,
    file_start=False,
    limit=None,
    base=0,
):
    """The one loop behind ``read_batches`` and ``scan``, yielding ``(position, end, batch)`` (one generator,
    not one per layer: with one small message per entry, as in v0/v1 logs, each layer costs about as much
    as decoding it).  Returns where it stopped: None once everything is accounted for, the position of an
    incomplete entry (more data may complete it, unless ``eof``), or a :class:`_Search` across a damaged region
    that goes on past ``n``.  ``limit``: how many bytes the data holds from ``buf``'s start, when ``buf`` holds
    only part of it (an entry whose size runs past it never completes); ``base``: ``buf``'s position in the file,
    for the positions named in messages."""
    forced = backend_module(format, backend) if format else None
    table = _decoders(backend, default_backend())
    sink, limits = sink if sink is not None else (None, None)
    check = _forced_check(format, backend, opts)
    whole = n if limit is None else limit
    while True:
        try:
            end = _entry_end(buf, pos, n)
        except CodecError as err:  # broken framing: the next valid entry, if any, is searched for
            hint = packed_hint(buf[:16]) if file_start and pos == 0 else ""
            e = InvalidValueError(f"{err.reason}{hint}", offset=err.offset, path=err.path) if hint else err
            if not skip_corrupt:
                e.batch_position = pos
                e.unread = whole - pos
                raise e from None
            q, hold = find_entry(buf, pos + 1, n, eof, check)
            if q >= n and not eof:
                return _Search(pos, e).searched(buf, hold)
            yield pos, q, _damaged(e, pos, q, zero_run_end(buf, pos, q) >= q, base)
            pos = q
            continue
        if end < 0:
            past = (
                limit is not None
                and n - pos >= LOG_OVERHEAD
                and _ENTRY.unpack_from(buf, pos)[1] > limit - pos - LOG_OVERHEAD
            )
            if not eof and not past:
                return pos  # more of the stream may complete it
            quiet = not (strict_tail or (file_start and pos == 0))
            if skip_corrupt and n - pos >= LOG_OVERHEAD:
                q, hold = find_entry(
                    buf, pos + 1, n, eof, check
                )  # a size running past the end: good entries may follow
                if q < n:
                    e = tail_error(buf, pos, n, limit, base + pos)
                    yield pos, q, _damaged(e, pos, q, False, base)
                    pos = q
                    continue
                if not eof:
                    return _Search(pos, tail_error(buf, pos, n, limit, base + pos), quiet).searched(buf, hold)
            if eof:
                break
            if quiet:  # past the end of the data: nothing more is read
                return None
            raise tail_error(buf, pos, n, limit, base + pos)
        mod = forced or table.get(buf[pos + 16])
        many = getattr(mod, "decode_columns_run", None) if limits is not None else None
        if many is not None and limits is not None:  # as many clean batches as the sink takes, in one call
            batches, starts, counts, stop = many(buf, pos, n, opts, sink, *limits)
            if batches:
                yield pos, stop, BatchRun(batches, starts, counts)
                pos = stop
                continue
        run = getattr(mod, "decode_run", None)
        if run is not None:
            # legacy entries: decode as many as decode cleanly in one call, then go on below with the
            # entry the run stopped at (another magic, a truncated tail, or an error to report)
            # at most RUN_BYTES of input per call, so batches come out as they are read (400 compressed
            # wrappers are not all decompressed before the first is yielded)
            values, starts, stop = run(buf, pos, min(n, pos + RUN_BYTES), opts)
            if values:
                if positions:
                    starts.append(stop)
                    yield from zip(starts, starts[1:], values)
                else:
                    yield from values
                pos = stop
                continue
        try:
            if mod is None:
                raise InvalidValueError(
                    f"invalid magic {buf[pos + 16]} found in record", offset=pos + 16, path="log.entry.magic"
                )
            into = getattr(mod, "decode_columns", None) if sink is not None else None
            got = into(buf, pos, end, opts, sink) if into is not None else None
            if got is None:
                batch, _ = mod.decode_from(buf, pos, end, opts)
            else:
                batch, _, rows, mark = got
                batch.records = Rows(rows, mark)
        except CodecError as e:
            e.batch_position = pos  # where the entry holding the error starts
            if not skip_corrupt:
                raise
            if not eof and not _judgeable(buf, end, n, limit):
                return pos  # whether the framing after it holds needs more of the stream
            if end >= n or valid_entry_at(buf, end, n, check):
                yield pos, end, e
                pos = end
                continue
            q, hold = find_entry(buf, pos + 1, n, eof, check)  # its size may be damaged too: resynchronise
            if q >= n and not eof:
                return _Search(pos, e).searched(buf, hold)
            yield pos, q, _damaged(e, pos, q, zero_run_end(buf, pos, q) >= q, base)
            pos = q
            continue
        yield (pos, end, batch) if positions else batch
        pos = end
    if not eof:
        return pos
    # a file whose first entry already runs past its end holds no entry at all: damage, never 0 batches
    if pos < n and (strict_tail or (file_start and pos == 0)):
        tail: CodecError = tail_error(buf, pos, n, None, base + pos)
        if zero_run_end(buf, pos, n) >= n:
            tail = _damaged(tail, pos, n, True, base)
        if not skip_corrupt:
            raise tail
        yield pos, n, tail
    return None


def _forced_check(format, backend, opts):
    """How a candidate entry is checked when resynchronising a forced format: decoded with it (None: the
    built-in v0/v1/v2 checks)."""
    if not format:
        return None
    forced = backend_module(format, backend)
    return lambda b, p, e: forced.decode_from(b, p, e, opts)


def _judgeable(buf, p: int, n: int, limit: int | None = None) -> bool:
    """Whether the bytes in hand tell if a valid entry starts at ``p`` (its framing is broken, it is complete,
    or its size runs past the end of the data, ``limit``)."""
    if n - p < HEADER_SIZE_UP_TO_MAGIC:
        return False
    size = _ENTRY.unpack_from(buf, p)[1]
    end = p + LOG_OVERHEAD + size
    return size < MIN_ENTRY_SIZE or end <= n or (limit is not None and end > limit)


def _damaged(e: CodecError, pos: int, q: int, zero_filled: bool, base: int = 0) -> CodecError:
    """The error for the damaged region ``[pos, q)`` that began with ``e``: what was wrong first, and what
    the region holds (zero fill, or bytes with no valid entry); ``unread`` is its length. Positions are in the
    coordinates of ``e``'s offset; ``base`` is added to name the end in the message."""
    d = type(e)(f"{e.reason}; {describe(q - pos, zero_filled)} up to byte {base + q}", offset=e.offset, path=e.path)
    d.batch_position = pos
    d.unread = q - pos
    d.zero_filled = zero_filled
    return d


def _as_record(r) -> Record:
    if isinstance(r, Record):
        return r
    if isinstance(r, Mapping):
        unknown = set(r) - {"key", "value", "headers", "timestamp", "offset", "control"}
        if unknown:
            raise InvalidValueError(f"unknown record field(s) {sorted(unknown)}", path="record")
        return Record(
            key=r.get("key"),
            value=r.get("value"),
            headers=r.get("headers") or (),
            timestamp=r.get("timestamp"),
            offset=r.get("offset"),
        )
    raise InvalidValueError(f"a record must be a kfmt.Record or a mapping, not {type(r).__name__}", path="record")


def encode_batch(
    records: Iterable,
    *,
    magic: int = 2,
    codec: str = "none",
    format: str | None = None,
    keep_offsets: bool = False,
    backend: str | None = None,
    **batch_fields,
) -> bytes:
    """Encode ``records`` as one batch of the format for ``magic`` (or ``format``).

    Records are numbered from the batch's base offset (``keep_offsets=True``
    keeps each record's own ``offset`` instead).  A record without a timestamp
    gets the current time, as the Java producer does.  ``batch_fields`` are the
    format's batch fields (``base_offset``, ``producer_id``, ``is_transactional``...).
    """
    if format:
        mod = get_format(format)
    else:
        mod = _by_magic().get(magic)
        if mod is None:
            raise UnsupportedCodecError(f"no format for magic {magic}")
    # a missing timestamp becomes the current time, in formats that have timestamps (not magic 0)
    stamp = "timestamp" in mod.CARRIES
    impl = backend_module(mod, backend)
    plain = getattr(impl, "records_plain", None)  # the native backend checks a list of Records in C
    recs: list[Record]
    if plain is not None and plain(records, stamp, not keep_offsets):
        recs = records  # type: ignore[assignment]  # a list of kfmt.Records with what they need: as they are
    else:
        recs = _prepared(records, stamp, keep_offsets)
    if not recs:
        raise InvalidValueError(
            "a batch with no records: Kafka's producer never writes one (the log cleaner keeps an emptied v2 batch"
            " only to retain producer state); to build that, encode the format's batch object directly"
            " (kfmt.get_format('kafka_v2').encode(...))",
            path="batch.records",
        )
    _refuse_uncarried(mod, recs)
    if mod.ROLE == "message":
        return _encode_message_set(mod, impl, recs, codec, dict(batch_fields, keep_offsets=keep_offsets))
    try:
        batch = mod.ROOT(records=recs, codec=codec, **batch_fields)
    except TypeError as e:
        allowed = ", ".join(f for f in mod.ROOT._fields if f != "records")
        raise InvalidValueError(f"{e}; batch fields of {mod.FORMAT_ID}: {allowed}", path="batch") from None
    return impl.encode(batch)


def _prepared(records: Iterable, stamp: bool, keep_offsets: bool) -> list[Record]:
    """The records as kfmt.Records: a missing timestamp the current time (``stamp``), offsets dropped unless
    kept; records already so are taken as they are."""
    now = None
    recs: list[Record] = []
    append = recs.append
    for r in records:
        if not isinstance(r, Record):
            r = _as_record(r)
        if (r.timestamp is None and stamp) or (r.offset is not None and not keep_offsets):
            if now is None:
                now = int(time.time() * 1000)
            r = Record(
                key=r.key,
                value=r.value,
                headers=r.headers,
                timestamp=now if r.timestamp is None else r.timestamp,
                offset=r.offset if keep_offsets else None,
                control=r.control,
            )
        append(r)
    return recs


# what a kfmt.Record can hold that a format's record may lack, with the values that mean "nothing to carry".
# As Kafka's producer: headers and control records are refused below v2; a timestamp given for magic 0
# is not written (MemoryRecordsBuilder ignores it), and kfmt.convert reports timestamps lost to v0.
_CARRIED = (
    ("headers", lambda r: not r.headers, "record headers"),
    ("control", lambda r: r.control is None, "control records"),
)


def _refuse_uncarried(mod, recs) -> None:
    """Nothing is dropped silently: a record holding what the format cannot carry is refused, naming it."""
    for name, empty, what in _CARRIED:
        if name in mod.CARRIES:
            continue
        for i, r in enumerate(recs):
            if not empty(r):
                raise InvalidValueError(f"{mod.FORMAT_ID} cannot carry {what}", path=f"records[{i}].{name}")


def _plain_records(mod, recs: list[Record], has_ts: bool) -> bool:
    """True if every record is a plain ``kfmt.Record`` without an offset, which the message encoder can
    take as it is (format records carry their own codec or timestamp type, and go through a message
    object); raises for what the format cannot carry."""
    plain = True
    for i, r in enumerate(recs):
        if type(r) is not Record or r.offset is not None:
            plain = False
        if has_ts and r.timestamp is not None and r.timestamp < -1:
            raise InvalidValueError(f"invalid timestamp {r.timestamp}", path=f"records[{i}].timestamp")
    return plain


def _encode_message_set(mod, impl, recs: list[Record], codec: str, fields: dict) -> bytes:
    """Legacy-shaped formats (role ``message``): one message per record, or one compressed wrapper.

    As Kafka's MemoryRecordsBuilder: inner offsets base..base+n-1, the wrapper takes the last
    offset, a null key, and (CreateTime) the largest inner timestamp.
    """
    fields = dict(fields)
    base = fields.pop("base_offset", 0)
    wrapper_ts = fields.pop("max_timestamp", None)
    keep = fields.pop("keep_offsets", False)
    timestamp_type = fields.pop("timestamp_type", 0)
    has_ts = "timestamp" in mod.CARRIES
    has_tt = "timestamp_type" in mod.CARRIES
    if fields:
        raise InvalidValueError(
            f"magic {mod.MAGIC} has no batch field(s) {sorted(fields)} (no producer state, no leader epoch)",
            path="batch",
        )
    if timestamp_type and not has_tt:
        raise InvalidValueError(f"magic {mod.MAGIC} has no timestamp type", path="batch.timestamp_type")
    extra = {"timestamp_type": timestamp_type} if has_tt else {}
    has_headers = "headers" in mod.CARRIES
    # plain records go to the encoder as they are (it numbers those without an offset by their index, and
    # reads the attributes records lack, codec and timestamp type, as defaults); others are copied first
    plain = _plain_records(mod, recs, has_ts) and not timestamp_type and mod.python.INDEX_OFFSETS
    if codec == "none" and plain:
        return impl.encode_all(recs, "records", base)
    msgs = recs if plain else []
    make = mod.ROOT
    for i, r in enumerate(recs if not plain else ()):
        m = make(offset=r.offset if keep and r.offset is not None else base + i, key=r.key, value=r.value, **extra)
        if has_headers:
            m.headers = list(r.headers)
        if has_ts:
            m.timestamp = -1 if r.timestamp is None else r.timestamp
        msgs.append(m)
    if codec == "none":
        return impl.encode_all(msgs, "records")
    if "wrappers" not in mod.CARRIES:
        raise UnsupportedCodecError(f"{mod.FORMAT_ID} has no compressed wrapper messages; use codec='none'")
    if not msgs:
        return b""
    first = mod.python.WRAP_OFFSETS == "relative_to_first"  # the wrapper carries its first (else last) offset
    edge = msgs[0 if first else -1].offset
    if edge is None:  # a plain record without an offset
        edge = base if first else base + len(msgs) - 1
    kw = dict(offset=edge, key=None, value=None, codec=codec, messages=msgs, **extra)
    if has_ts:
        kw["timestamp"] = (
            wrapper_ts if wrapper_ts is not None else max(-1 if m.timestamp is None else m.timestamp for m in msgs)
        )
    return impl.encode(mod.ROOT(**kw))


def control_record(kind: str = "commit", *, coordinator_epoch: int = 0, timestamp: int | None = None) -> Record:
    """A transaction marker record (ControlRecordType ABORT=0 / COMMIT=1, EndTransactionMarker v0)."""
    types = {"abort": 0, "commit": 1}
    if kind not in types:
        raise InvalidValueError(f"unknown control record kind {kind!r}; use 'commit' or 'abort'")
    key = struct.pack(">hh", 0, types[kind])
    value = struct.pack(">hi", 0, coordinator_epoch)
    return Record(key=key, value=value, timestamp=timestamp, control=(0, types[kind]))


__all__ = [
    "CodecError",
    "TruncatedError",
    "control_record",
    "encode_batch",
    "format_ids",
    "get_format",
    "iter_entries",
    "read_batches",
    "scan",
]
