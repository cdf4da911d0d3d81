"""Kafka log segments as Spark DataFrames, through PySpark's Python Data Source API (Spark 4).

    import kfmt.spark
    kfmt.spark.register(spark)
    df = spark.read.format("kafka-log").load("/data/kafka-logs")      # log dir, partition dir or segments
    df.write.format("kafka-log").option("magic", 2).option("codec", "zstd").save("/data/out")
    spark.readStream.format("kafka-log").load("s3a://bucket/tiered/")      # tails (kfmt.spark.stream)

Columns are those of Spark's own Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers) plus the batch's (magic, codec, batch_base_offset, producer_id, producer_epoch,
base_sequence, is_transactional, is_control, partition_leader_epoch, delete_horizon) and provenance (file, position; error and raw for
quarantined batches). Everything the reader ships to executors is plain, picklable data.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from kfmt.log.arrow import arrow_schema
from kfmt.storage import OPTIONS as STORAGE_OPTIONS
from kfmt.table.options import (  # noqa: F401 - the reader's pieces, re-exported where they were
    OFFLINE_REFUSED,
    READ_OPTIONS,
    _bool,
    _int_opt,
    _opt,
    _storage,
    _topic_ids_opt,
    check_options,
)
from kfmt.table.plan import LogReader, _bound  # noqa: F401 - the reader's pieces, re-exported where they were
from kfmt.table.slices import SegmentSlice, read_slice  # noqa: F401 - the reader's pieces, re-exported where they were

log = logging.getLogger("kfmt.spark")

WRITE_OPTIONS = {
    "path": "output log directory: a local path or a URI (s3://, s3a://, gs://, abfs://, hdfs://, file://)",
    "topic_ids": 'JSON {"topic": "<22-character topic id>"} for partition.metadata (default: the folder\'s, else a new one)',
    "magic": "0, 1 or 2 (default 2)",
    "codec": "none (default), gzip, snappy, lz4, zstd",
    "segment_bytes": "roll segments at this size (default 1 GiB)",
    "batch_records": "records per batch when rows carry no batch (default 500)",
    "keep_batches": "rows of one input batch stay one batch (default true)",
    "engine": "auto (default), jvm or python: which engine encodes the rows (auto: the JVM's where it writes the target)",
    **STORAGE_OPTIONS,
}


@dataclass(frozen=True)
class SegmentGroup(InputPartition):
    """One input partition: the slices one task reads, in order."""

    slices: tuple


# ------------------------------------------------------------------ reading
def _spark_types() -> dict:
    """The source's columns as Spark types, from the Arrow schema the reader produces (no session needed:
    readers are made in Python workers)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    return {f.name: f.dataType for f in from_arrow_schema(arrow_schema(pa, True)).fields}


def _projection(schema) -> tuple[str, ...]:
    """The columns to produce: all of them, or those of a schema the user gave with ``.schema(...)``.

    The Python Data Source API does not prune columns by itself; a narrower user schema is how a job
    says it needs only some (``offset, timestamp, key, value, headers``, say), and the reader then builds
    only those.  Names must be columns of this source, with the same types (:func:`check_columns`).
    """
    return check_columns([(f.name, f.dataType.simpleString()) for f in schema.fields])


def check_columns(columns) -> tuple[str, ...]:
    """``(name, Spark type as its simpleString)`` pairs of a schema the user gave: each a column of this source,
    with its type (the one rule of both engines: the JVM source's planner checks with it)."""
    full = {name: kind.simpleString() for name, kind in _spark_types().items()}
    for name, kind in columns:
        if name not in full:
            raise ValueError(f"kafka-log: no column {name!r} (columns: {', '.join(full)})")
        if kind != full[name]:
            raise ValueError(f"kafka-log: column {name!r} is {full[name]}, not {kind}")
    return tuple(name for name, _ in columns)


class KafkaLogReader(LogReader, DataSourceReader):
    """The Spark source's reader: :class:`kfmt.table.plan.LogReader`'s plan as Spark input partitions.

    Spark caches a Python data source's reader and planned partitions per relation and reuses them for
    later queries on the same DataFrame or view, whatever their filters: a reader that prunes on pushed
    filters then answers an unfiltered query with the last query's pruning.  So this reader takes no
    filters (Spark applies every filter to the rows) and prunes only on its options (``subscribe``,
    ``assign``, ``startingOffsets``...), which are part of the relation, as in Spark's Kafka source.
    """

    def partitions(self):
        return [SegmentGroup(g) for g in self.plan()]


# ------------------------------------------------------------------ writing
@dataclass
class WrittenFiles(WriterCommitMessage):
    files: list
    skipped: int = 0  # quarantined rows (corrupt batches) that carry no record and were not written


def _remove_dead_staging(path: str) -> None:
    """Staging folders of write jobs whose driver process is gone (killed before commit or abort)."""
    import shutil

    from kfmt.storage.publish import _alive

    if not os.path.isdir(path):
        return
    for name in os.listdir(path):
        m = re.match(r"^\.kfmt-staging-(\d+)-[0-9a-f]+$", name)
        if m and not _alive(int(m[1])):
            shutil.rmtree(os.path.join(path, name), ignore_errors=True)


def as_written(batch):
    """A batch of rows to write with its text read as the bytes it holds: the topic (checked by Kafka's rules, so
    text that is not UTF-8 is refused in one line) and header keys (written as they are, as the JVM engine writes
    them). Columns a write needs and cannot use are refused in one line."""
    import pyarrow as pa

    from kfmt.logdir.names import NEED_COLUMNS

    names = batch.schema.names
    if "topic" not in names or "partition" not in names:
        raise ValueError(NEED_COLUMNS)
    problem = column_problem(batch.schema.field("topic").type, batch.schema.field("partition").type)
    if problem:
        raise ValueError(problem)
    cols = []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if f.name == "topic":
            col = col.cast(pa.binary())
        elif f.name == "headers" and pa.types.is_list(f.type):
            raw = pa.list_(pa.struct([(g.name, pa.binary()) for g in f.type.value_type]))
            col = col.cast(raw)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, names=names)


def column_problem(topic_type, partition_type) -> str | None:
    """Why a write cannot name folders from these column types (Arrow's), or None."""
    import pyarrow as pa

    from kfmt.logdir.names import PARTITION_COLUMN, TOPIC_COLUMN

    if not (pa.types.is_string(topic_type) or pa.types.is_large_string(topic_type)):
        return TOPIC_COLUMN
    return None if pa.types.is_integer(partition_type) else PARTITION_COLUMN


class KafkaLogWriter(DataSourceArrowWriter):
    """Writes a log directory, local or in a store, as one job: tasks encode their rows into batches under a
    staging folder (``<path>/.kfmt-staging-<job>``), and only the job's commit, on the driver, puts segments
    in place.

    Per topic-partition the commit orders every task's batches by offset (rows of one input batch split
    across tasks by a ``repartition()`` are merged back into one batch; the same offset twice is an error),
    rolls segments at ``segment_bytes`` and writes ``.index``/``.timeindex`` as a broker does.  With
    ``mode("overwrite")`` the target's segments are replaced; otherwise (append) new segments must not
    overlap the offsets already there.  A failed job leaves nothing at the target.
    """

    def __init__(self, options: dict, overwrite: bool):
        import uuid

        check_options(options, WRITE_OPTIONS, "write")
        self.path = _opt(options, "path")
        if not self.path:
            raise ValueError("kafka-log: give an output path: df.write.format('kafka-log').save(PATH)")
        magic = _opt(options, "magic")
        self.magic = 2 if magic in (None, "") else int(magic) if str(magic) in ("0", "1", "2") else -1
        if self.magic not in (0, 1, 2):
            raise ValueError(f"kafka-log: magic must be 0, 1 or 2, not {magic!r}")
        from kfmt.runtime.compression import CODECS
        from kfmt.storage import is_uri

        self.codec = (_opt(options, "codec") or "none").lower()
        if self.codec not in CODECS or (self.codec == "zstd" and self.magic < 2):
            raise ValueError(f"kafka-log: codec {self.codec!r} cannot be written with magic {self.magic} "
                             f"(codecs: {', '.join(CODECS)}; zstd needs magic 2)")  # fmt: skip
        self.segment_bytes = _int_opt(options, "segment_bytes", 1024**3)
        self.topic_ids = _topic_ids_opt(options)
        self.batch_records = _int_opt(options, "batch_records", 500)
        self.keep_batches = _bool(_opt(options, "keep_batches"), True)
        self.storage = _storage(options)
        self.overwrite = overwrite
        if not is_uri(self.path):
            _remove_dead_staging(self.path)
        self.staging = f"{self.path.rstrip('/')}/.kfmt-staging-{os.getpid()}-{uuid.uuid4().hex}"

    def _tree(self):
        from kfmt.storage import Tree

        return Tree(self.staging, self.storage)

    def write(self, iterator):
        import uuid

        import pyarrow as pa

        from kfmt.logdir.names import folder_name
        from kfmt.spark.writer import encode_rows

        groups: dict = {}
        skipped = 0
        for batch in iterator:
            d = pa.Table.from_batches([as_written(batch)]).to_pydict()
            errors = d.get("error")
            for i in range(batch.num_rows):
                if errors and errors[i] is not None:
                    skipped += 1  # quarantined rows carry no record: counted and reported at commit
                    continue
                if d["offset"][i] is None:
                    raise ValueError("kafka-log writer: rows need an 'offset' column")
                name = folder_name(d["topic"][i], d["partition"][i], d["offset"][i])  # before any byte is written
                groups.setdefault(name, []).append({c: d[c][i] for c in d})
        pieces = []
        tree = self._tree()
        for name, rows in groups.items():
            blob = encode_rows(rows, magic=self.magic, codec=self.codec, batch_records=self.batch_records,
                               keep_batches=self.keep_batches)  # fmt: skip
            topic, part = rows[0]["topic"].decode(), rows[0]["partition"]
            path = tree.join(name, f"{uuid.uuid4().hex}.part")
            tree.write(path, blob)
            pieces.append((topic, part, path, len(rows), len(blob)))
        return WrittenFiles(pieces, skipped)

    @staticmethod
    def _pieces(messages) -> dict:
        """``{(topic, partition): [(staged file, records, bytes)]}`` from the tasks' commit messages."""
        pieces: dict = {}
        for m in messages or []:
            for topic, part, path, *reported in getattr(m, "files", []) or []:
                pieces.setdefault((topic, part), []).append((path, *reported))
        return pieces

    def _commit(self, messages) -> None:
        """Put the staged batches in place (the staging folder stays: the caller removes it)."""
        from kfmt.spark.writer import commit_partitions

        skipped = sum(getattr(m, "skipped", 0) for m in messages or [])
        commit_partitions(self.path, self._pieces(messages), segment_bytes=self.segment_bytes,
                          replace=self.overwrite, topic_ids=self.topic_ids, storage=self.storage)  # fmt: skip
        if skipped:
            log.warning("kafka-log writer: %d quarantined row(s) (corrupt batches) were not written", skipped)

    def commit(self, messages):
        try:
            self._commit(messages)
        finally:
            self.abort(messages)

    def abort(self, messages):
        """Remove the staging folder, and every one the tasks' messages name: Spark may plan a stream's
        micro-batch with one writer object and commit it with another, whose own staging name differs."""
        from kfmt.storage import Tree

        roots = {self.staging}
        for m in messages or []:
            for _, _, path, *_ in getattr(m, "files", []) or []:
                head, sep, rest = str(path).partition("/.kfmt-staging-")
                if sep:
                    roots.add(f"{head}{sep}{rest.split('/', 1)[0]}")
        for root in sorted(roots):
            tree = Tree(root, self.storage)
            tree.remove(tree.root)


SAVE_MODES = ("errorifexists", "error", "ignore", "append", "overwrite")


def save(df, path: str, mode: str = "errorifexists", **options) -> bool:
    """Write ``df`` as a Kafka log directory with any of Spark's save modes.

    Spark writes a source given by path (no catalog) only in ``append`` and ``overwrite`` mode (``df.write.save()`` with the
    default mode, or ``mode("ignore")``, fails with UNSUPPORTED_DATA_SOURCE_SAVE_MODE before writing). This
    gives the other two their usual meaning, decided on the driver: ``errorifexists`` (the default) refuses a
    target that already holds segments, ``ignore`` leaves such a target alone and writes nothing. Returns
    True when the job ran. Options are the writer's (``magic``, ``codec``, ``segment_bytes``, ...)."""
    from kfmt.logdir.layout import find_segments

    mode = mode.lower()
    if mode not in SAVE_MODES:
        raise ValueError(f"kafka-log: unknown save mode {mode!r}; use one of {', '.join(SAVE_MODES)}")
    check_options({**options, "path": path}, WRITE_OPTIONS, "write")
    if mode in ("errorifexists", "error", "ignore"):
        try:
            existing = find_segments(path, _storage(options))
        except (FileNotFoundError, NotADirectoryError):
            existing = []
        if existing:
            if mode == "ignore":
                return False
            raise FileExistsError(
                f"kafka-log: {path} already holds {len(existing)} segment(s); "
                "save with mode 'append', 'overwrite' or 'ignore'"
            )
    writer = df.write.format("kafka-log").mode("overwrite" if mode == "overwrite" else "append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(path)
    return True
