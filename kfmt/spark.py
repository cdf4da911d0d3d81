"""Kafka log segments as Spark DataFrames, through PySpark's Python Data Source API (Spark 4).

    import kfmt.spark
    kfmt.spark.register(spark)
    df = spark.read.format("kafka-log").load("/data/kafka-logs")      # log dir, partition dir or segments
    df.write.format("kafka-log").option("magic", 2).option("codec", "zstd").save("/data/out")

Columns are those of Spark's own Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers) plus the batch's (magic, codec, batch_base_offset, producer_id, producer_epoch,
base_sequence, is_transactional, is_control) and provenance (file, position; error and raw for
quarantined batches). Everything the reader ships to executors is plain, picklable data.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    WriterCommitMessage,
)

log = logging.getLogger("kfmt.spark")

SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key: string, value: binary>>, "
    "magic int, codec string, batch_base_offset long, producer_id long, producer_epoch int, base_sequence int, "
    "is_transactional boolean, is_control boolean, file string, position long, error string, raw binary"
)
ROWS_PER_ARROW_BATCH = 8192


def register(spark) -> None:
    """Register the ``kafka-log`` data source with a Spark session (and enable Python filter pushdown)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkaLogDataSource)


def _bool(v, default: bool) -> bool:
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class SegmentSlice(InputPartition):
    """One input partition: a segment file, or a range of it cut at batch boundaries."""

    path: str
    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class SegmentGroup(InputPartition):
    """One input partition: the slices one task reads, in order."""

    slices: tuple


# ------------------------------------------------------------------ reading
class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")`` / ``df.write.format("kafka-log")``."""

    @classmethod
    def name(cls):
        return "kafka-log"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return KafkaLogReader(dict(self.options), _projection(schema))

    def writer(self, schema, overwrite):
        return KafkaLogWriter(dict(self.options), overwrite)


def _spark_types() -> dict:
    """The source's columns as Spark types, from the Arrow schema the reader produces (no session needed:
    readers are made in Python workers)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    return {f.name: f.dataType for f in from_arrow_schema(arrow_schema(pa)).fields}


def _projection(schema) -> tuple[str, ...]:
    """The columns to produce: all of them, or those of a schema the user gave with ``.schema(...)``.

    The Python Data Source API does not prune columns by itself; a narrower user schema is how a job
    says it needs only some (``offset, timestamp, key, value, headers``, say), and the reader then builds
    only those.  Names must be columns of this source, with the same types.
    """
    full = _spark_types()
    names = []
    for f in schema.fields:
        if f.name not in full:
            raise ValueError(f"kafka-log: no column {f.name!r} (columns: {', '.join(full)})")
        if f.dataType != full[f.name]:
            raise ValueError(
                f"kafka-log: column {f.name!r} is {full[f.name].simpleString()}, not {f.dataType.simpleString()}"
            )
        names.append(f.name)
    return tuple(names)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict, columns: tuple[str, ...] | None = None):
        self.columns = columns  # None: every column
        paths = options.get("path") or options.get("paths")
        if not paths:
            raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(PATH)")
        self.paths = (
            [p for p in str(paths).strip("[]").replace('"', "").split(",") if p] if "," in str(paths) else [paths]
        )
        self.verify_crc = _bool(options.get("verify_crc"), True)
        self.include_control = _bool(options.get("include_control"), False)
        self.on_corrupt = (options.get("on_corrupt") or "fail").lower()
        if self.on_corrupt not in ("fail", "skip", "quarantine"):
            raise ValueError(f"kafka-log: on_corrupt must be fail, skip or quarantine, not {self.on_corrupt!r}")
        self.split_bytes = int(options.get("split_bytes") or 128 * 1024 * 1024)
        self.open_cost = int(options.get("open_cost_bytes") or 4 * 1024 * 1024)
        self.min_partitions = int(options.get("min_partitions") or 2 * (os.cpu_count() or 1))
        self.filters: list = []

    # ---- pushdown: prune whole segments; Spark still applies every filter to the rows
    def pushFilters(self, filters):
        for f in filters:
            if (
                isinstance(f, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual, In))
                and len(f.attribute) == 1
                and f.attribute[0] in ("topic", "partition", "offset", "timestamp")
            ):
                self.filters.append(f)
            yield f

    def _keep(self, seg, next_base, ts_range) -> bool:
        for f in self.filters:
            col = f.attribute[0]
            if col == "topic":
                lo = hi = seg.topic
            elif col == "partition":
                lo = hi = seg.partition
            elif col == "offset":
                lo, hi = seg.base_offset, (next_base - 1 if next_base is not None else None)
            else:
                if ts_range is None:
                    continue
                lo, hi = ts_range
            if not _may_match(f, lo, hi):
                return False
        return True

    def partitions(self):
        """Input partitions: segments (large ones cut at batch boundaries) packed into groups.

        As Spark's file sources do, small segments share a task: each slice counts its bytes plus
        ``open_cost_bytes``, and groups fill up to ``min(split_bytes, total / min_partitions)``, so a
        directory of many small segments runs as a few tasks instead of one task per file.
        """
        from kfmt.logdir import find_segments

        segments = find_segments(self.paths)
        kept = []
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            next_base = nxt.base_offset if nxt and (nxt.topic, nxt.partition) == (seg.topic, seg.partition) else None
            if self._keep(seg, next_base, _time_range(seg) if self._wants_time() else None):
                kept.append(seg)
        total = sum(seg.size + self.open_cost for seg in kept)
        target = max(1, min(self.split_bytes, max(self.open_cost, total // max(1, self.min_partitions))))
        slices = [
            SegmentSlice(seg.path, seg.topic, seg.partition, start, end)
            for seg in kept
            for start, end in _split(seg.path, seg.size, target)
        ]
        groups: list[list[SegmentSlice]] = []
        size = 0
        for sl in sorted(slices, key=lambda x: x.end - x.start, reverse=True):
            cost = sl.end - sl.start + self.open_cost
            if not groups or size + cost > target:
                groups.append([])
                size = 0
            groups[-1].append(sl)
            size += cost
        return [SegmentGroup(tuple(g)) for g in groups]

    def _wants_time(self) -> bool:
        return any(f.attribute[0] == "timestamp" for f in self.filters)

    def read(self, partition: SegmentGroup):
        for part in partition.slices:
            yield from read_slice(part, self.verify_crc, self.include_control, self.on_corrupt, self.columns)


def _may_match(f, lo, hi) -> bool:
    """Whether a value in [lo, hi] (hi None: unbounded) can satisfy filter ``f``."""
    v = f.value
    if hasattr(v, "timestamp"):  # a datetime from a timestamp filter -> ms
        v = int(v.timestamp() * 1000)
    if isinstance(f, In):
        vals = [int(x.timestamp() * 1000) if hasattr(x, "timestamp") else x for x in v]
        return any(_may_match(EqualTo(f.attribute, x), lo, hi) for x in vals)
    try:
        if isinstance(f, EqualTo):
            return lo <= v and (hi is None or v <= hi)
        if isinstance(f, GreaterThan):
            return hi is None or hi > v
        if isinstance(f, GreaterThanOrEqual):
            return hi is None or hi >= v
        if isinstance(f, LessThan):
            return lo < v
        if isinstance(f, LessThanOrEqual):
            return lo <= v
    except TypeError:
        return True
    return True


def _time_range(seg):
    """(min, max) record timestamps of a segment from its .timeindex, or None when unknown."""
    from pathlib import Path

    from kfmt.logdir import read_time_index

    entries = read_time_index(Path(seg.path).with_suffix(".timeindex"))
    if not entries:
        return None
    return (-(2**63), max(ts for ts, _ in entries))  # the index holds maxima only: no lower bound


def _split(path: str, size: int, split_bytes: int):
    """Cut a segment into ranges of about ``split_bytes`` at batch boundaries (reading entry headers only)."""
    if size <= split_bytes:
        return [(0, size)]
    import struct

    from kfmt.api import LOG_OVERHEAD, MIN_ENTRY_SIZE

    cuts, pos, start = [], 0, 0
    with open(path, "rb") as f:
        while pos + LOG_OVERHEAD <= size:
            f.seek(pos + 8)  # the entry's size follows its int64 offset
            (n,) = struct.unpack(">i", f.read(4))
            if n < MIN_ENTRY_SIZE:
                break  # corrupt framing: the reader of the last range reports it
            nxt = pos + LOG_OVERHEAD + n
            if nxt - start >= split_bytes and nxt < size:
                cuts.append((start, nxt))
                start = nxt
            pos = nxt
    cuts.append((start, size))
    return cuts


def read_slice(part: SegmentSlice, verify_crc=True, include_control=False, on_corrupt="fail", columns=None):
    """Yield Arrow record batches for one input partition (runs on executors); ``columns`` projects."""
    import pyarrow as pa

    import kfmt
    from kfmt.api import scan

    with open(part.path, "rb") as f:
        f.seek(part.start)
        data = f.read(part.end - part.start)
    columns = tuple(columns or arrow_schema(pa).names)
    cols = _Columns(columns)
    skipped = 0
    try:
        for pos, end, b in scan(data, verify_crc=verify_crc, skip_corrupt=on_corrupt != "fail"):
            if isinstance(b, kfmt.CodecError):
                if on_corrupt == "skip":
                    skipped += 1
                    log.warning("kafka-log: skipped corrupt batch in %s at byte %d: %s", part.path, part.start + pos, b)
                    continue
                cols.add_corrupt(part.start + pos, str(b), data[pos:end])
                continue
            if b.is_control and not include_control:
                continue
            cols.add_batch(part.start + pos, b)
            if cols.n >= ROWS_PER_ARROW_BATCH:
                yield cols.to_arrow(pa, part)
                cols = _Columns(columns)
    except kfmt.CodecError as e:
        at = part.start + (getattr(e, "batch_position", None) or 0)
        raise ValueError(f"kafka-log: corrupt batch in {part.path} at byte {at}: {e} "
                         "(option on_corrupt=skip or quarantine to go on)") from None  # fmt: skip
    if skipped:
        log.warning("kafka-log: %d corrupt batch(es) skipped in %s", skipped, part.path)
    if cols.n:
        yield cols.to_arrow(pa, part)


_BATCH_COLS = ("timestampType", "magic", "codec", "batch_base_offset", "producer_id", "producer_epoch",
               "base_sequence", "is_transactional", "is_control", "position", "error", "raw")  # fmt: skip


class _Columns:
    """Column lists for one Arrow batch, only for the projected columns; batch-level values are
    repeated per record in bulk."""

    def __init__(self, columns: tuple[str, ...]):
        self.columns = columns
        self.want = set(columns)
        self.n = 0
        self.key, self.value, self.offset, self.timestamp = [], [], [], []
        self.h_offsets, self.h_keys, self.h_values = [0], [], []
        self.batch = {c: [] for c in _BATCH_COLS if c in self.want}

    def add_batch(self, position, b):
        recs = b.records
        n = len(recs)
        self.n += n
        want = self.want
        if "key" in want:
            self.key += [r.key for r in recs]
        if "value" in want:
            self.value += [r.value for r in recs]
        if "offset" in want:
            self.offset += [r.offset for r in recs]
        if "timestamp" in want:
            self.timestamp += [r.timestamp * 1000 if r.timestamp >= 0 else None for r in recs]
        if "headers" in want:
            ho, hk, hv = self.h_offsets, self.h_keys, self.h_values
            for r in recs:
                if r.headers:
                    for k, v in r.headers:
                        hk.append(k)
                        hv.append(v)
                ho.append(len(hk))
        if self.batch:
            tt = b.timestamp_type if b.timestamp_type is not None else -1
            for c, v in (("timestampType", tt), ("magic", b.magic), ("codec", b.codec),
                         ("batch_base_offset", b.base_offset), ("producer_id", b.producer_id),
                         ("producer_epoch", b.producer_epoch), ("base_sequence", b.base_sequence),
                         ("is_transactional", b.is_transactional), ("is_control", b.is_control),
                         ("position", position), ("error", None), ("raw", None)):  # fmt: skip
                if c in self.batch:
                    self.batch[c] += [v] * n

    def add_corrupt(self, position, error, raw):
        self.n += 1
        for lst in (self.key, self.value, self.offset, self.timestamp):
            lst.append(None)
        self.h_offsets.append(len(self.h_keys))
        for c, lst in self.batch.items():
            lst.append({"position": position, "error": error, "raw": raw}.get(c))

    def to_arrow(self, pa, part):
        full = arrow_schema(pa)
        schema = pa.schema([full.field(c) for c in self.columns])
        types = {f.name: f.type for f in full}
        n = self.n
        build = {
            "key": lambda: pa.array(self.key, pa.binary()),
            "value": lambda: pa.array(self.value, pa.binary()),
            "topic": lambda: pa.array([part.topic] * n, pa.string()),
            "partition": lambda: pa.array([part.partition] * n, pa.int32()),
            "offset": lambda: pa.array(self.offset, pa.int64()),
            "timestamp": lambda: pa.array(self.timestamp, pa.int64()).cast(types["timestamp"]),
            "headers": lambda: pa.ListArray.from_arrays(
                pa.array(self.h_offsets, pa.int32()),
                pa.StructArray.from_arrays(
                    [pa.array(self.h_keys, pa.string()), pa.array(self.h_values, pa.binary())],
                    fields=list(types["headers"].value_type),
                ),
            ),
            "file": lambda: pa.array([part.path] * n, pa.string()),
        }
        arrays = [build[c]() if c in build else pa.array(self.batch[c], types[c]) for c in self.columns]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def arrow_schema(pa):
    return pa.schema([
        ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
        ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        ("magic", pa.int32()), ("codec", pa.string()), ("batch_base_offset", pa.int64()), ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()), ("base_sequence", pa.int32()), ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()), ("file", pa.string()), ("position", pa.int64()), ("error", pa.string()),
        ("raw", pa.binary()),
    ])  # fmt: skip


# ------------------------------------------------------------------ writing
@dataclass
class WrittenFiles(WriterCommitMessage):
    files: list
    skipped: int = 0  # quarantined rows (corrupt batches) that carry no record and were not written


class KafkaLogWriter(DataSourceArrowWriter):
    """Writes segments per topic-partition: batches of ``batch_records`` (or the input's own batches), rolled at
    ``segment_bytes``, named by base offset, each written to a temporary name and renamed."""

    def __init__(self, options: dict, overwrite: bool):
        self.path = options.get("path")
        if not self.path:
            raise ValueError("kafka-log: give an output path: df.write.format('kafka-log').save(PATH)")
        self.magic = int(options.get("magic") or 2)
        self.codec = options.get("codec") or "none"
        self.segment_bytes = int(options.get("segment_bytes") or 1024**3)
        self.batch_records = int(options.get("batch_records") or 500)
        self.keep_batches = _bool(options.get("keep_batches"), True)
        self.overwrite = overwrite

    def write(self, iterator):
        import pyarrow as pa

        from kfmt.tools import write_partition_rows

        groups: dict = {}
        skipped = 0
        for batch in iterator:
            t = pa.Table.from_batches([batch])
            d = t.to_pydict()
            n = t.num_rows
            for i in range(n):
                if d.get("error") and d["error"][i] is not None:
                    skipped += 1  # quarantined rows carry no record: counted and reported at commit
                    continue
                key = (d["topic"][i], d["partition"][i])
                groups.setdefault(key, []).append({c: d[c][i] for c in d})
        files = []
        for (topic, part), rows in groups.items():
            folder = os.path.join(self.path, f"{topic}-{part}")
            files += write_partition_rows(folder, rows, magic=self.magic, codec=self.codec,
                                          segment_bytes=self.segment_bytes, batch_records=self.batch_records,
                                          keep_batches=self.keep_batches, replace=self.overwrite)  # fmt: skip
        return WrittenFiles(files, skipped)

    def commit(self, messages):
        skipped = sum(getattr(m, "skipped", 0) for m in messages or [])
        if skipped:
            log.warning("kafka-log writer: %d quarantined row(s) (corrupt batches) were not written", skipped)
        return None

    def abort(self, messages):
        for m in messages or []:
            for f in getattr(m, "files", []) or []:
                try:
                    os.unlink(f)
                except FileNotFoundError:
                    pass
