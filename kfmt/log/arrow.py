"""Kafka logs as Apache Arrow: the columns of the Spark source (Spark's own Kafka source columns plus the
batch's and provenance), from one column table, and :func:`read_arrow`, which gives them for any log as a
``pyarrow.Table`` for pandas, polars or DuckDB.

The records are decoded by the active backend. With the native backend they go straight into Arrow
buffers (``kfmt.runtime.native._columns.Columns``, filled by the C decoders: no Python object per record);
otherwise, and for entries the C decoders hand over (legacy messages, damaged batches), from decoded
objects into the same columns. Only the projected columns are built.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass

from kfmt.log.scanner import Rows

log = logging.getLogger("kfmt.log.arrow")

# The source's columns, once: (name, Arrow type, source). ``record`` and ``segment`` columns are built
# specially; ``batch`` columns repeat a batch-level value (a getter on the decoded batch) per record.
# The Spark schema and the Arrow schema are both derived from this table.
COLUMNS = (
    ("key", "binary", "record"),
    ("value", "binary", "record"),
    ("topic", "string", "segment"),
    ("partition", "int32", "segment"),
    ("offset", "int64", "record"),
    ("timestamp", "timestamp", "record"),
    ("timestampType", "int32", lambda b: b.timestamp_type if b.timestamp_type is not None else -1),
    ("headers", "headers", "record"),
    ("timestamp_ms", "int64", "record"),
    ("magic", "int32", lambda b: b.magic),
    ("codec", "string", lambda b: b.codec),
    ("batch_base_offset", "int64", lambda b: b.base_offset),
    ("producer_id", "int64", lambda b: b.producer_id),
    ("producer_epoch", "int32", lambda b: b.producer_epoch),
    ("base_sequence", "int32", lambda b: b.base_sequence),
    ("is_transactional", "bool", lambda b: b.is_transactional),
    ("is_control", "bool", lambda b: b.is_control),
    ("partition_leader_epoch", "int32", lambda b: b.partition_leader_epoch),
    ("delete_horizon", "int64", lambda b: b.base_timestamp if getattr(b, "has_delete_horizon", False) else None),
    ("file", "string", "segment"),
    ("position", "int64", "position"),
    ("error", "string", "quarantine"),
    ("raw", "binary", "quarantine"),
)
_SPARK_TYPE = {"binary": "binary", "string": "string", "int32": "int", "int64": "long", "bool": "boolean",
               "timestamp": "timestamp", "headers": "array<struct<key: string, value: binary>>"}  # fmt: skip
SCHEMA = ", ".join(f"{name} {_SPARK_TYPE[t]}" for name, t, _ in COLUMNS)
_BATCH_GETTERS = {name: src for name, _, src in COLUMNS if callable(src)}
ROWS_PER_ARROW_BATCH = 8192
QUARANTINE_RAW_BYTES = 1 << 20  # a quarantine row keeps at most this much of its damaged region
SINK_BYTES = 1 << 30  # native column buffers: an Arrow batch is closed past this many bytes of data


RECORD_COLUMNS = ("key", "value", "offset", "timestamp", "timestamp_ms", "headers")
# Kafka timestamps in milliseconds that Arrow's (and Spark's) microsecond timestamps can hold
TS_MS_MIN, TS_MS_MAX = -(2**63) // 1000 + 1, (2**63 - 1) // 1000


def header_key(key) -> str:
    """A header's key as the ``headers`` column holds it: text; an integer key (KIP-82's proposal) as its decimal
    text, as the JVM engine's sink writes it (``kfmt.jvm.Sink.header(long, ...)``)."""
    return key if type(key) is str else str(key)


def new_sink(backend: str | None = None):
    """Column buffers the native backend decodes into, when it is the backend in use; else None."""
    from kfmt.codec.formats import available_backends, default_backend

    if (backend or default_backend()) != "native" or "native" not in available_backends():
        return None
    from kfmt.runtime.native._columns import Columns

    return Columns()


class _Columns:
    """Column lists for one Arrow batch, only for the projected columns; batch-level values are
    repeated per record in bulk. With a ``sink`` (native column buffers) the record columns live there."""

    def __init__(self, columns: tuple[str, ...], sink=None):
        self.columns = columns
        self.want = set(columns)
        self.sink = sink
        self.n = 0
        self.key: list = []
        self.value: list = []
        self.offset: list = []
        self.timestamp: list = []
        self.h_offsets: list[int] = [0]
        self.h_keys: list = []
        self.h_values: list = []
        self.runs: list[tuple] = []  # (batch or None, position, rows, error, raw): batch-level values, run-length

    def add_batch(self, position, b, lo=None, hi=None):
        recs = b.records
        if type(recs) is Rows:  # decoded straight into the sink
            if (lo is not None and b.base_offset < lo) or (hi is not None and b.last_offset >= hi):
                raise ValueError("offset bounds need the batch decoded as objects")  # the caller does not
            self._repeat(b, position, recs.n)
            return
        if lo is not None or hi is not None:  # record by record: a damaged batch's offsets need not ascend
            recs = [r for r in recs if (lo is None or r.offset >= lo) and (hi is None or r.offset < hi)]
        n = len(recs)
        if self.sink is not None:
            self._to_sink(recs)
            self._repeat(b, position, n)
            return
        want = self.want
        if "key" in want:
            self.key += [r.key for r in recs]
        if "value" in want:
            self.value += [r.value for r in recs]
        if "offset" in want:
            self.offset += [r.offset for r in recs]
        if "timestamp" in want or "timestamp_ms" in want:
            self.timestamp += [r.timestamp if r.timestamp != -1 else None for r in recs]
        if "headers" in want:
            ho, hk, hv = self.h_offsets, self.h_keys, self.h_values
            for r in recs:
                if r.headers:
                    for k, v in r.headers:
                        hk.append(header_key(k))
                        hv.append(v)
                ho.append(len(hk))
        self._repeat(b, position, n)

    def add_run(self, base, run):
        """Batches decoded into the sink by one call (:class:`kfmt.log.scanner.BatchRun`), ``base`` the slice's start."""
        self.runs += [(b, base + s, k, None, None) for b, s, k in zip(run.batches, run.starts, run.counts) if k]
        self.n += sum(run.counts)

    def _repeat(self, b, position, n):
        self.n += n
        if n:
            self.runs.append((b, position, n, None, None))

    def _to_sink(self, recs):
        """Records decoded as objects into the native columns, as the column lists would hold them."""
        add = self.sink.append_row
        bad = 0
        for r in recs:
            keys = []
            for k, _ in r.headers:
                k = header_key(k)
                try:
                    keys.append(k.encode("utf-8"))
                except UnicodeEncodeError:  # surrogate-escaped bytes: as _utf8_array
                    keys.append(_kafka_utf8(k).encode("utf-8"))
                    bad += 1
            add(r.offset, r.timestamp if r.timestamp != -1 else None, r.key, r.value, keys, [v for _, v in r.headers])
        _warn_bad_keys(bad)

    def full(self) -> bool:
        """Whether to close this Arrow batch: enough rows, or keys and values near the int32 offsets' reach."""
        return self.n >= ROWS_PER_ARROW_BATCH or (self.sink is not None and self.sink.nbytes > SINK_BYTES)

    def drop(self, b):
        """Undo a batch decoded into the sink that the caller filters out after all (control, aborted)."""
        if type(b.records) is Rows:
            self.sink.rollback(b.records.mark)

    def add_corrupt(self, position, error, raw):
        self.n += 1
        self.runs.append((None, position, 1, error, raw))
        if self.sink is not None:
            self.sink.null_row()
            return
        for lst in (self.key, self.value, self.offset, self.timestamp):
            lst.append(None)
        self.h_offsets.append(len(self.h_keys))

    def to_arrow(self, pa, part):
        full = arrow_schema(pa)
        schema = projected_schema(pa, self.columns)
        types = {f.name: f.type for f in full}
        n = self.n
        build = {
            "key": lambda: pa.array(self.key, pa.binary()),
            "value": lambda: pa.array(self.value, pa.binary()),
            "topic": lambda: pa.repeat(pa.scalar(part.topic, pa.string()), n),
            "partition": lambda: pa.repeat(pa.scalar(part.partition, pa.int32()), n),
            "offset": lambda: pa.array(self.offset, pa.int64()),
            "timestamp": lambda: timestamp_us(pa, pa.array(self.timestamp, pa.int64()), types["timestamp"]),
            "timestamp_ms": lambda: pa.array(self.timestamp, pa.int64()),
            "headers": lambda: pa.ListArray.from_arrays(
                pa.array(self.h_offsets, pa.int32()),
                pa.StructArray.from_arrays(
                    [_utf8_array(pa, self.h_keys), pa.array(self.h_values, pa.binary())],
                    fields=list(types["headers"].value_type),
                ),
            ),
            "file": lambda: pa.repeat(pa.scalar(part.path, pa.string()), n),
        }
        if self.sink is not None:
            build.update(_sink_arrays(pa, self.sink.take(), types))
        arrays = [build[c]() if c in build else self._batch_column(pa, c, types[c]) for c in self.columns]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _batch_column(self, pa, c, typ):
        """A batch-level column: one value per run (batch or damaged region), repeated over its rows."""
        get = _BATCH_GETTERS.get(c)
        values = [
            (get(b) if b is not None else None)
            if get
            else position
            if c == "position"
            else (error if c == "error" else raw)
            for b, position, _, error, raw in self.runs
        ]
        if all(n == 1 for _, _, n, _, _ in self.runs):
            return pa.array(values, typ)
        import pyarrow.compute as pc

        ends = pa.array(list(itertools.accumulate(n for _, _, n, _, _ in self.runs)), pa.int64())
        return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(ends, pa.array(values, typ)))


def _sink_arrays(pa, t: dict, types) -> dict:
    """The record columns from the native column buffers (``Columns.take()``), as pyarrow arrays."""
    n, nh = t["rows"], t["nheaders"]
    buf = pa.py_buffer

    def bits(name):
        bm, nulls = t[name + "_ok"]
        return (None if bm is None else buf(bm)), nulls

    def binary(name, typ, count, nullable=True):
        bm, nulls = bits(name) if nullable else (None, 0)
        return pa.Array.from_buffers(typ, count, [bm, buf(t[name + "_offsets"]), buf(t[name])], null_count=nulls)

    def fixed(name, typ):
        bm, nulls = bits(name)
        return pa.Array.from_buffers(typ, n, [bm, buf(t[name])], null_count=nulls)

    def headers():
        hkey = binary("hkey", pa.string(), nh, nullable=False)
        hval = binary("hvalue", pa.binary(), nh)
        structs = pa.StructArray.from_arrays([hkey, hval], fields=list(types["headers"].value_type))
        offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, buf(t["headers_offsets"])])
        return pa.ListArray.from_arrays(offsets, structs)

    return {
        "key": lambda: binary("key", pa.binary(), n),
        "value": lambda: binary("value", pa.binary(), n),
        "offset": lambda: fixed("offset", pa.int64()),
        "timestamp": lambda: timestamp_us(pa, fixed("timestamp", pa.int64()), types["timestamp"]),
        "timestamp_ms": lambda: fixed("timestamp", pa.int64()),
        "headers": headers,
    }


def timestamp_us(pa, ms, typ):
    """Kafka timestamps (int64 milliseconds, null where there is none) as Arrow microsecond timestamps:
    null where the value does not fit (beyond about +-292,000 years); ``timestamp_ms`` keeps it."""
    import pyarrow.compute as pc

    if ms.null_count < len(ms):
        lo, hi = pc.min_max(ms).values()
        if lo.as_py() < TS_MS_MIN or hi.as_py() > TS_MS_MAX:
            fits = pc.and_(pc.greater_equal(ms, TS_MS_MIN), pc.less_equal(ms, TS_MS_MAX))
            ms = pc.if_else(fits, ms, pa.scalar(None, pa.int64()))
    return pc.multiply(ms, 1000).cast(typ)


def null_empty_headers(pa, batch):
    """``headers`` NULL for records without headers, as Spark's Kafka source gives them with
    ``includeHeaders=true`` (kfmt's own default is an empty list)."""
    if "headers" not in batch.schema.names:
        return batch
    import pyarrow.compute as pc

    i = batch.schema.get_field_index("headers")
    h = batch.column(i)
    fixed = pc.if_else(pc.equal(pc.list_value_length(h), 0), pa.scalar(None, h.type), h)
    return batch.set_column(i, batch.schema.field(i), fixed)


def _utf8_array(pa, keys: list):
    """Header keys as an Arrow string array. A key that is not valid UTF-8 (kfmt keeps its bytes with
    surrogate escapes) gets U+FFFD for each ill-formed sequence, as Kafka's Java consumer decodes header keys."""
    try:
        return pa.array(keys, pa.string())
    except UnicodeEncodeError:
        fixed = [_kafka_utf8(k) for k in keys]
        _warn_bad_keys(sum(a != b for a, b in zip(keys, fixed)))
        return pa.array(fixed, pa.string())


def _kafka_utf8(key: str) -> str:
    """A header key as Kafka's Java consumer reads it: U+FFFD for each ill-formed sequence, by Java's decoder's
    rules (kfmt keeps bytes that are not UTF-8 as surrogate escapes)."""
    from kfmt.runtime.text import java_utf8

    return java_utf8(key.encode("utf-8", "surrogateescape"))


def _warn_bad_keys(n: int) -> None:
    if n:
        log.warning("kafka-log: %d header key(s) are not valid UTF-8: read with U+FFFD, as Kafka does", n)


def arrow_schema(pa, decoded: bool = False):
    """The source's Arrow schema; ``decoded``: with the columns of Kafka's own payloads decoded too."""
    types = {"binary": pa.binary(), "string": pa.string(), "int32": pa.int32(), "int64": pa.int64(),
             "bool": pa.bool_(), "timestamp": pa.timestamp("us", tz="UTC"),
             "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))}  # fmt: skip
    return pa.schema([(name, types[t]) for name, t, _ in COLUMNS] + ([(c, pa.string()) for c in DECODED] if decoded
                                                                      else []))  # fmt: skip


def add_decoded(pa, batch, columns: tuple[str, ...]):
    """``batch`` (read with ``topic``, ``key``, ``value`` and ``is_control`` too) with the decoded columns, then
    only ``columns``, in their order: each record of Kafka's own topics decoded by :mod:`kfmt.payloads` as
    JSON text (``{"type", "version", "data"}``), NULL for other topics and control records, and a payload that
    does not decode NULL with ``payload_error`` saying why (never dropped); one that decodes but for bytes
    holding a message that do not parse (kept as bytes) says what in ``payload_error`` too."""
    import json

    from kfmt.payloads import binding, decode_payload
    from kfmt.runtime.errors import CodecError

    n = batch.num_rows
    keys: list[str | None] = [None] * n
    values: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    topics, ks, vs, ctl = (batch.column(c).to_pylist() for c in ("topic", "key", "value", "is_control"))
    for i in range(n):
        if ctl[i] or topics[i] is None or binding(topics[i]) is None or (ks[i] is None and vs[i] is None):
            continue
        try:
            p = decode_payload(topics[i], ks[i], vs[i])
        except CodecError as e:
            errors[i] = str(e)
            continue
        keys[i] = json.dumps(p.key.to_json()) if p.key else None
        values[i] = json.dumps(p.value.to_json()) if p.value else None
        errors[i] = "; ".join(p.problems) or None  # decoded, but for bytes holding a message that do not parse
    extra = {"key_decoded": keys, "value_decoded": values, "payload_error": errors}
    arrays = [pa.array(extra[c], pa.string()) if c in extra else batch.column(c) for c in columns]
    return pa.RecordBatch.from_arrays(arrays, schema=projected_schema(pa, columns))


def projected_schema(pa, columns):
    """The Arrow schema of ``columns``, in their order (decoded columns included)."""
    full = arrow_schema(pa, True)
    return pa.schema([full.field(c) for c in columns])


def decoding_reads(columns) -> tuple[str, ...] | None:
    """What a read projected on ``columns`` reads when it names a decoded column (the rest, and what decoding
    needs); None when it names none (nothing to decode)."""
    if not any(c in DECODED for c in columns):
        return None
    return tuple(dict.fromkeys([c for c in columns if c not in DECODED] + list(DECODE_NEEDS)))


#: columns of Kafka's own payloads decoded (option ``decode_payloads``): JSON text, and why one did not decode
DECODED = ("key_decoded", "value_decoded", "payload_error")
#: what add_decoded reads
DECODE_NEEDS = ("topic", "key", "value", "is_control")
SCHEMA_DECODED = SCHEMA + ", " + ", ".join(f"{c} string" for c in DECODED)


class _Range:
    """Bytes ``start``..``end`` of an open file as a file read in chunks: a slice is streamed (memory holds
    a chunk and a batch), and ``raw`` reads a damaged region's bytes again for the quarantine row."""

    def __init__(self, f, start: int, end: int):
        self.f, self.start, self.end = f, start, end
        f.seek(start)
        self.pos = start

    def read(self, n: int = -1) -> bytes:
        n = self.end - self.pos if n < 0 else min(n, self.end - self.pos)
        data = self.f.read(n) if n > 0 else b""
        self.pos += len(data)
        return data

    def left(self) -> int:
        """How many bytes of the slice are still to be read."""
        return self.end - self.pos

    def raw(self, pos: int, end: int) -> bytes:
        if hasattr(self.f, "read_at"):  # kfmt.storage files (local or in a store): a ranged read
            return self.f.read_at(end - pos, self.start + pos)
        return os.pread(self.f.fileno(), end - pos, self.start + pos)


@dataclass(frozen=True)
class _Where:
    """Where rows come from (the ``topic``, ``partition`` and ``file`` columns)."""

    topic: str | None
    partition: int | None
    path: str | None


@dataclass(frozen=True)
class Reading:
    """How a log's bytes become rows: what read_arrow and each slice of the Spark source ask of :func:`rows`."""

    columns: tuple[str, ...]
    verify_crc: bool = True
    format: str | None = None
    backend: str | None = None
    on_corrupt: str = "fail"
    include_control: bool = False
    dropped: object = None  # a function saying whether a batch is of an aborted transaction (read_committed)
    lo: int | None = None  # offset bounds: records below ``lo`` and from ``hi`` on are left out
    hi: int | None = None
    base: int = 0  # where the bytes start in their file (positions are the file's)
    live_end: bool = True  # the bytes end the partition's log: an incomplete last entry is a batch being written


def rows(data, where, r: Reading):
    """The rows of a log's bytes, Arrow batch by Arrow batch: bytes-like data, or a :class:`_Range` of a file
    (streamed in chunks; a quarantined region's bytes are read again by position). The one loop of
    read_arrow and the Spark source: entries and damage come from :func:`kfmt.log.scanner` (one definition for
    every reader); what a damaged region becomes is :func:`_damage`'s, and an incomplete last entry
    :func:`being_written`'s. Raises :class:`kfmt.CodecError` on damage with ``on_corrupt="fail"``."""
    import pyarrow as pa

    from kfmt.log.batches import scan
    from kfmt.log.scanner import BatchRun
    from kfmt.runtime.errors import CodecError

    n = data.end - data.start if isinstance(data, _Range) else len(memoryview(data))
    sink = new_sink(r.backend) if r.lo is None and r.hi is None else None  # bounds cut batches: objects then
    cols = _Columns(r.columns, sink)
    limits = (ROWS_PER_ARROW_BATCH, SINK_BYTES) if r.dropped is None else None  # runs of clean batches in one call
    skipped = 0
    try:
        for pos, end, b in scan(data, verify_crc=r.verify_crc, format=r.format, backend=r.backend,
                                skip_corrupt=r.on_corrupt != "fail", sink=sink, run_limits=limits):  # fmt: skip
            if type(b) is BatchRun:
                cols.add_run(r.base, b)
            elif isinstance(b, CodecError):
                skipped += _damage(cols, data, n, where, pos, end, b, r)
            elif kept(cols, b, r.include_control, r.dropped, r.lo, r.hi):
                cols.add_batch(r.base + pos, b, r.lo, r.hi)
            if cols.full():
                yield cols.to_arrow(pa, where)
                cols = _Columns(r.columns, sink)
    except CodecError as e:
        if not (r.live_end and being_written(e, n, where.path or "the data", lambda a, b: _raw(data, a, b), r)):
            raise
    if skipped:
        log.warning("kfmt: %d damaged region(s) skipped in %s", skipped, where.path or "the data")
    if cols.n:
        yield cols.to_arrow(pa, where)


def _raw(data, pos: int, end: int) -> bytes:
    return data.raw(pos, end) if isinstance(data, _Range) else bytes(memoryview(data)[pos:end])


def kept(cols, b, include_control: bool, dropped=None, lo=None, hi=None) -> bool:
    """Whether a decoded batch's rows are wanted: not a control batch (unless asked for), not aborted
    (``dropped``), within the offset bounds; a batch already in the sink that is not wanted is taken out again.
    The one filter of read_arrow and the Spark source."""
    if (b.is_control and not include_control) or (dropped is not None and dropped(b)):
        cols.drop(b)
        return False
    return not ((lo is not None and b.last_offset < lo) or (hi is not None and b.base_offset >= hi))


def _damage(cols, data, n: int, where, pos: int, end: int, e, r: Reading) -> int:
    """A damaged region: left out (an entry being written), skipped (``skip``: logged, 1 counted) or a
    quarantine row with its position, error and raw bytes (at most QUARANTINE_RAW_BYTES, the cut said)."""
    if r.live_end and being_written(e, n, where.path or "the data"):
        return 0
    if r.on_corrupt == "skip":
        log.warning("kfmt: skipped a damaged region of %s at byte %d: %s", where.path or "the data", r.base + pos, e)
        return 1
    raw = _raw(data, pos, min(end, pos + QUARANTINE_RAW_BYTES))
    cut = f" (raw: the first {len(raw)} of {end - pos} bytes)" if end - pos > len(raw) else ""
    cols.add_corrupt(r.base + pos, f"{e}{cut}", raw)
    return 0


def being_written(e, n: int, path: str, raw=None, r: Reading | None = None) -> bool:
    """:func:`kfmt.log.scanner.batch_being_written` (the one rule), said in the log when it holds: a batch being
    written is left out of the rows, as Kafka's fetch leaves it out (logged, never data, never damage)."""
    from kfmt.log.scanner import batch_being_written

    if not batch_being_written(e, n, raw, r and r.format, r and r.backend):
        return False
    log.warning("kfmt: %s ends with %d byte(s) of a batch not yet written completely (at byte %d): left out, as "
                "Kafka leaves it out of a fetch", path, e.unread, e.batch_position)  # fmt: skip
    return True
