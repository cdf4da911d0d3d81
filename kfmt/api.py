"""Reading and writing Kafka logs with the generated codecs."""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from kfmt.formats import backend_module, format_ids, get_format
from kfmt.formats import by_magic as _by_magic
from kfmt.resync import LOG_OVERHEAD, MIN_ENTRY_SIZE
from kfmt.runtime.errors import CodecError, InvalidValueError, TruncatedError, UnsupportedCodecError
from kfmt.runtime.model import Batch, Record
from kfmt.runtime.options import options_for
from kfmt.scanner import (  # the scan loop, and what its callers name through kfmt.api
    CHUNK,
    RUN_BYTES,
    BatchRun,
    Rows,
    _scan,
    _scan_stream,
    iter_entries,
    packed_hint,
    tail_error,
)


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
    "CHUNK",
    "LOG_OVERHEAD",
    "MIN_ENTRY_SIZE",
    "RUN_BYTES",
    "BatchRun",
    "CodecError",
    "Rows",
    "TruncatedError",
    "packed_hint",
    "tail_error",
    "control_record",
    "encode_batch",
    "format_ids",
    "get_format",
    "iter_entries",
    "read_batches",
    "scan",
]
