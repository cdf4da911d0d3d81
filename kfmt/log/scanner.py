"""The one scan loop under every log reader: entries framed, each decoded by its magic's codec (or a forced
format), damage found and crossed. ``read_batches``, ``scan`` (:mod:`kfmt.log.batches`) and through them ``read_arrow``,
``kfmt dump`` and the Spark source take their entries and damage decisions from here: where an entry ends,
an incomplete tail, a damaged region and where reading resumes (:mod:`kfmt.log.resync`), and the stream read in
chunks with a search carried across them, so memory holds a chunk, an entry and at most
``RESYNC_MAX_ENTRY`` of a damaged region.

May import: kfmt.codec.formats, kfmt.log.resync, kfmt.runtime, kfmt.storage (never kfmt.log.batches, the tools or Spark)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

from kfmt.codec.formats import backend_module, default_backend
from kfmt.codec.formats import by_magic as _by_magic
from kfmt.log.resync import (  # the entry framing constants live beside the resynchronisation that uses them
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MIN_ENTRY_SIZE,
    RESYNC_MAX_ENTRY,
    describe,
    find_entry,
    valid_entry_at,
    zero_run_end,
)
from kfmt.runtime.errors import CodecError, InvalidValueError, TruncatedError
from kfmt.runtime.options import options_for
from kfmt.storage import compressed_object

CHUNK = 8 << 20  # bytes read at a time from a file (an entry larger than this is read whole)
RUN_BYTES = 256 << 10  # input bytes of legacy entries decoded per decode_run call

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
    e.cut_entry = True
    return e


def iter_entries(buf, *, start: int = 0) -> Iterator[tuple[int, int, int]]:
    """Yield ``(position, end, magic)`` for each complete log entry; stop quietly at a truncated tail."""
    n = len(buf)
    pos = start
    while (end := _entry_end(buf, pos, n)) >= 0:
        yield pos, end, buf[pos + 16]
        pos = end


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
    left = getattr(f, "left", None)  # kfmt.log.arrow._Range
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
    ``judged``), whether it began at an incomplete tail (``tail``) and whether that ends quietly if nothing
    follows."""

    __slots__ = ("start", "err", "at", "zero", "judged", "quiet", "tail")

    def __init__(self, start: int, err: CodecError, quiet: bool = False, tail: bool = False):
        self.start, self.err, self.at = start, err, start + 1
        self.zero, self.judged, self.quiet, self.tail = True, start, quiet, tail

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
        # an incomplete tail with nothing valid after it is the tail (as _cross says when the data is at hand);
        # an entry that does not decode is a damaged region whichever chunk the search ends in
        if eof and q >= len(buf) and not self.zero and self.tail:
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
    m.cut_entry = e.cut_entry
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


class _Return(NamedTuple):
    """What the scan returns (a position to go on from, None when done, or a :class:`_Search`)."""

    value: object


_EOF = object()  # the data ends here: the scan goes on to what is left at its end


class _Damage:
    """The scan's rare paths, each deciding what a kind of damage is and where reading goes on: broken
    framing, an entry that is incomplete in the bytes at hand, an entry that does not decode, and what is left
    at the end. Each is a generator yielding the region it reports and returning where the scan goes on (a
    position), :data:`_EOF`, or a :class:`_Return`."""

    def __init__(self, buf, n, skip_corrupt, strict_tail, eof, file_start, limit, base, check):
        self.buf, self.n, self.skip, self.strict, self.eof = buf, n, skip_corrupt, strict_tail, eof
        self.file_start, self.limit, self.base, self.check = file_start, limit, base, check

    def _cross(self, pos: int, e: CodecError, tail_quiet: bool | None = None):
        got = yield from _cross(self.buf, pos, self.n, e, self.eof, self.check, self.base, tail_quiet)
        return _Return(got) if type(got) is _Search else got

    def broken_framing(self, pos: int, err: CodecError):
        """An entry whose framing is broken (a size below the minimum): the next valid entry is searched for."""
        hint = packed_hint(self.buf[:16]) if self.file_start and pos == 0 else ""
        e = InvalidValueError(f"{err.reason}{hint}", offset=err.offset, path=err.path) if hint else err
        if not self.skip:
            e.batch_position = pos
            e.unread = (self.n if self.limit is None else self.limit) - pos
            raise e from None
        return (yield from self._cross(pos, e))

    def incomplete(self, pos: int):
        """An entry not complete in the bytes at hand: more of the stream may complete it; its size may run
        past the end of the data (good entries may follow it, when reading on after damage); or it is the
        data's incomplete tail."""
        buf, n, limit = self.buf, self.n, self.limit
        past = (
            limit is not None
            and n - pos >= LOG_OVERHEAD
            and _ENTRY.unpack_from(buf, pos)[1] > limit - pos - LOG_OVERHEAD
        )
        if not self.eof and not past:
            return _Return(pos)  # more of the stream may complete it
        quiet = not (self.strict or (self.file_start and pos == 0))
        if self.skip and n - pos >= LOG_OVERHEAD:  # a size running past the end: good entries may follow
            got = yield from self._cross(pos, tail_error(buf, pos, n, limit, self.base + pos), tail_quiet=quiet)
            if got is not None:
                return got
        if self.eof:
            return _EOF
        if quiet:  # past the end of the data: nothing more is read
            return _Return(None)
        raise tail_error(buf, pos, n, limit, self.base + pos)

    def corrupt(self, pos: int, end: int, e: CodecError):
        """An entry whose framing holds but which does not decode: reported alone when a valid entry follows
        it (or nothing does), else its size may be damaged too and the region is crossed."""
        e.batch_position = pos  # where the entry holding the error starts
        if not self.skip:
            raise e
        if not self.eof and not _judgeable(self.buf, end, self.n, self.limit):
            return _Return(pos)  # whether the framing after it holds needs more of the stream
        if end >= self.n or valid_entry_at(self.buf, end, self.n, self.check):
            yield pos, end, e
            return end
        return (yield from self._cross(pos, e))

    def tail(self, pos: int):
        """What is left at the end of the data: a file whose first entry already runs past its end holds no
        entry at all (damage, never 0 batches); an incomplete tail is reported where the reader wants it."""
        buf, n = self.buf, self.n
        if pos < n and (self.strict or (self.file_start and pos == 0)):
            tail: CodecError = tail_error(buf, pos, n, None, self.base + pos)
            if zero_run_end(buf, pos, n) >= n:
                tail = _damaged(tail, pos, n, True, self.base)
            if not self.skip:
                raise tail
            yield pos, n, tail


def _decode_entry(mod, buf, pos: int, end: int, opts, sink):
    """One entry decoded by its format's module (into the sink's columns when it can)."""
    if mod is None:
        raise InvalidValueError(
            f"invalid magic {buf[pos + 16]} found in record", offset=pos + 16, path="log.entry.magic"
        )
    into = getattr(mod, "decode_columns", None) if sink is not None else None
    got = into(buf, pos, end, opts, sink) if into is not None else None
    if got is None:
        return mod.decode_from(buf, pos, end, opts)[0]
    batch, _, rows, mark = got
    batch.records = Rows(rows, mark)
    return batch


def _scan(
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
    as decoding it; damage is :class:`_Damage`'s).  Returns where it stopped: None once everything is
    accounted for, the position of an incomplete entry (more data may complete it, unless ``eof``), or a
    :class:`_Search` across a damaged region that goes on past ``n``.  ``limit``: how many bytes the data holds
    from ``buf``'s start, when ``buf`` holds only part of it (an entry whose size runs past it never completes);
    ``base``: ``buf``'s position in the file, for the positions named in messages."""
    forced = backend_module(format, backend) if format else None
    table = _decoders(backend, default_backend())
    sink, limits = sink if sink is not None else (None, None)
    damage = _Damage(
        buf, n, skip_corrupt, strict_tail, eof, file_start, limit, base, _forced_check(format, backend, opts)
    )
    while True:
        try:
            end = _entry_end(buf, pos, n)
        except CodecError as err:
            got = yield from damage.broken_framing(pos, err)
        else:
            if end >= 0:
                mod = forced or table.get(buf[pos + 16])
                got = yield from _run(mod, buf, pos, n, opts, sink, limits, positions)
                if got is None:
                    try:
                        batch = _decode_entry(mod, buf, pos, end, opts, sink)
                    except CodecError as e:
                        got = yield from damage.corrupt(pos, end, e)
                    else:
                        yield (pos, end, batch) if positions else batch
                        got = end
            else:
                got = yield from damage.incomplete(pos)
        if type(got) is int:
            pos = got
        elif got is _EOF:
            break
        else:
            return got.value
    if not eof:
        return pos
    yield from damage.tail(pos)
    return None


def _run(mod, buf, pos: int, n: int, opts, sink, limits, positions):
    """Entries decoded many at a time from ``pos``, when the format's module can: clean v2 batches into the
    sink's columns (``decode_columns_run``, as many as it takes), or legacy entries (``decode_run``: as many
    as decode cleanly, at most RUN_BYTES of input per call, so batches come out as they are read). Returns
    where it stopped, or None when it decoded nothing (the entry at ``pos`` is then decoded alone)."""
    many = getattr(mod, "decode_columns_run", None) if limits is not None else None
    if many is not None:
        batches, starts, counts, stop = many(buf, pos, n, opts, sink, *limits)
        if batches:
            yield pos, stop, BatchRun(batches, starts, counts)
            return stop
    run = getattr(mod, "decode_run", None)
    if run is None:
        return None
    values, starts, stop = run(buf, pos, min(n, pos + RUN_BYTES), opts)
    if not values:
        return None
    if positions:
        starts.append(stop)
        yield from zip(starts, starts[1:], values)
    else:
        yield from values
    return stop


def batch_being_written(e, n: int, raw=None, format=None, backend=None) -> bool:
    """Whether ``e``, an error a scan of ``n`` bytes ended with, is an incomplete entry ending them (its framing
    runs past the end, :attr:`kfmt.CodecError.cut_entry`; not an entry written whole whose fields do): on a
    partition's last segment, a batch being written, which Kafka's fetch leaves out (never data, never damage).
    The one rule for every reader that knows its bytes end a log (``kfmt dump``, read_arrow, the Spark
    source; the JVM engine's SliceReader follows it). Never at byte 0: bytes whose only entry is incomplete
    could be anything; never longer than an entry a resynchronising reader looks for. ``raw(pos, end)`` reads
    the tail again when ``e`` was raised by a reader that does not resynchronise: a damaged size field
    followed by valid batches is damage, not a batch being written; with a forced ``format``, valid batches are
    that format's."""
    unread = getattr(e, "unread", None)
    if not getattr(e, "cut_entry", False) or unread is None or e.batch_position + unread != n:
        return False
    if unread > LOG_OVERHEAD + RESYNC_MAX_ENTRY or e.batch_position == 0:
        return False
    return raw is None or _only_a_cut_entry(raw(e.batch_position, n), format, backend)


def _only_a_cut_entry(tail: bytes, format=None, backend=None) -> bool:
    """Whether ``tail`` holds nothing but the start of one entry: a log's magic where the header has one, and
    no complete entry found when read resynchronising (a damaged size field hides the batches after it)."""
    if len(tail) > 16 and tail[16] not in (0, 1, 2):
        return False
    items = _scan(tail, 0, len(tail), options_for(True), format, backend, True, True, True, True)
    return all(isinstance(b, CodecError) for _, _, b in items)


def _cross(buf, pos: int, n: int, e: CodecError, eof: bool, check, base: int, tail_quiet: bool | None = None):
    """The damaged region that begins at ``pos`` with ``e``, crossed: yields it and returns where reading resumes
    (the next valid entry), or returns the :class:`_Search` that goes on past ``n``. For an incomplete tail
    (``tail_quiet`` given) with no valid entry after it, returns None: the end of the scan says what it is."""
    q, hold = find_entry(buf, pos + 1, n, eof, check)
    if q >= n:
        if not eof:
            return _Search(pos, e, bool(tail_quiet), tail_quiet is not None).searched(buf, hold)
        if tail_quiet is not None:
            return None
    yield pos, q, _damaged(e, pos, q, zero_run_end(buf, pos, q) >= q, base)
    return q


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
    d.cut_entry = e.cut_entry
    return d
