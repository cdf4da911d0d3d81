"""Planning a read: the segments a set of paths holds, by topic and partition, cut into slices (at batch
boundaries an index gives) with the offsets and transactions each slice must resolve; the plan the Python
engine reads and the JVM engine is handed."""

from __future__ import annotations

import os
import re

from kfmt.log.arrow import (
    add_decoded,
    arrow_schema,
    decoding_reads,
    null_empty_headers,
)
from kfmt.logdir.layout import SUFFIXES, suffixes_opt
from kfmt.table.options import (
    READ_OPTIONS,
    _bool,
    _csv,
    _int_opt,
    _json_opt,
    _offsets_opt,
    _opt,
    _storage,
    check_options,
)
from kfmt.table.slices import SegmentSlice, log, read_slice


class LogReader:
    """Plans input partitions from the options alone.

    Spark caches a Python data source's reader and planned partitions per relation and reuses them for
    later queries on the same DataFrame or view, whatever their filters: a reader that prunes on pushed
    filters then answers an unfiltered query with the last query's pruning.  So this reader takes no
    filters (Spark applies every filter to the rows) and prunes only on its options (``subscribe``,
    ``assign``, ``startingOffsets``...), which are part of the relation, as in Spark's Kafka source.
    """

    def __init__(
        self,
        options: dict,
        columns: tuple[str, ...] | None = None,
        defaults: dict | None = None,
        allow_empty=False,
        raw_errors=False,
    ):
        check_options(options, READ_OPTIONS, "read")
        defaults = defaults or {}
        if columns is None and _bool(_opt(options, "decode_payloads"), False):
            columns = tuple(arrow_schema(__import__("pyarrow"), True).names)
        self.columns = columns  # None: every column
        # a projection naming a decoded column reads what decoding needs (None: nothing to decode)
        self.decode_reads = decoding_reads(columns) if columns is not None else None
        self.raw_errors = raw_errors  # a corrupt batch raises its CodecError (read_arrow), not Spark's one-liner
        paths = _opt(options, "path") or _opt(options, "paths")
        if not paths:
            raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(PATH)")
        if isinstance(paths, (list, tuple)):
            self.paths = [os.fspath(p) for p in paths]
        else:
            self.paths = (
                [p for p in str(paths).strip("[]").replace('"', "").split(",") if p] if "," in str(paths) else [paths]
            )
        self.verify_crc = _bool(_opt(options, "verify_crc"), True)
        self.backend = _opt(options, "backend")  # checked where it is used: the executors' installation
        self.format = _opt(options, "format")
        if self.format:
            from kfmt.codec.formats import get_format

            get_format(self.format)
        self.storage = _storage(options)  # for s3:// and the like
        self.read_timeout = _int_opt(options, "read_timeout", 120)
        if _opt(options, "read_timeout") is not None:
            self.storage.setdefault("s3.request_timeout", str(self.read_timeout))
        self.include_control = _bool(_opt(options, "include_control"), False)
        self.compressed_objects = str(_opt(options, "compressed_objects") or "read").lower()
        if self.compressed_objects not in ("read", "fail"):
            raise ValueError(f"kafka-log: compressed_objects must be read or fail, not {self.compressed_objects!r}")
        engine = str(_opt(options, "engine") or "auto").lower()
        if engine not in ("auto", "jvm", "python"):
            raise ValueError(f"kafka-log: engine must be auto, jvm or python, not {engine!r}")
        if engine == "jvm":  # the JVM source plans through kfmt.spark.planner and never hands this read here
            raise ValueError("kafka-log: engine=jvm, but the JVM engine is not loaded in this session "
                             "(its jar: make setup with a JDK, then kfmt.spark.register(spark))")  # fmt: skip
        self.on_corrupt = (_opt(options, "on_corrupt") or "fail").lower()
        if self.on_corrupt not in ("fail", "skip", "quarantine"):
            raise ValueError(f"kafka-log: on_corrupt must be fail, skip or quarantine, not {self.on_corrupt!r}")
        iso = _opt(options, "isolation") or _opt(options, "kafka.isolation.level") or "read_uncommitted"
        self.isolation = str(iso).lower()
        if self.isolation not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"kafka-log: isolation must be read_uncommitted or read_committed, not {iso!r}")
        self.split_bytes = _int_opt(options, "split_bytes", defaults.get("split_bytes", 128 * 1024 * 1024))
        self.open_cost = _int_opt(options, "open_cost_bytes", defaults.get("open_cost_bytes", 4 * 1024 * 1024))
        self.min_partitions = _int_opt(
            options, "min_partitions",
            _int_opt(options, "minPartitions", defaults.get("min_partitions", 2 * (os.cpu_count() or 1))),
        )  # fmt: skip
        self.null_empty_headers = _bool(_opt(options, "includeHeaders"), False)
        self.topics = _csv(_opt(options, "subscribe"))
        pattern = _opt(options, "subscribePattern")
        try:
            self.pattern = re.compile(pattern).fullmatch if pattern else None
        except re.error as e:
            raise ValueError(f"kafka-log: subscribePattern {pattern!r} is not a regular expression: {e}") from None
        self.assign = _json_opt(options, "assign")
        self.starting = _offsets_opt(options, "startingOffsets", "earliest", -2)
        self.ending = _offsets_opt(options, "endingOffsets", "latest", -1)
        from kfmt.logdir.layout import find_segments

        left: list = []
        try:  # paths are checked on the driver, before any task runs
            include = suffixes_opt(_opt(options, "include_suffixed"))
            self.segments = find_segments(self.paths, self.storage, include_suffixed=include, left_out=left)
        except (FileNotFoundError, NotADirectoryError, PermissionError, ValueError) as e:
            raise ValueError(f"kafka-log: {e}") from None
        for folder, suffix in left:
            log.info(
                "kafka-log: left out %s: %s (option include_suffixed=%s reads it)", folder, SUFFIXES[suffix], suffix
            )
        self.check_tables(self.segments)
        if not self.segments and not allow_empty:
            raise ValueError(f"kafka-log: no Kafka log file (<offset>.log) found in {', '.join(map(str, self.paths))}")
        self._by_timestamp(options)

    def check_tables(self, segments) -> None:
        """Refuse a kfmt table whose commit has not finished (not read half old, half new); remember the
        versions of the segments' tables, which each task checks again once it has read."""
        from kfmt.table.commit import CommitError, check_tables

        try:
            self.tables = check_tables([s.path for s in segments], self.storage)
        except CommitError as e:
            raise ValueError(f"kafka-log: {e}") from None

    def _by_timestamp(self, options: dict) -> None:
        """startingTimestamp / startingOffsetsByTimestamp / endingTimestamp / endingOffsetsByTimestamp as
        Spark's Kafka source: per partition, the offset a broker gives for the timestamp (first record at or
        after it). Starting without such a record: startingOffsetsByTimestampStrategy (error, or latest: no
        rows); ending without one: latest. The timestamp forms take precedence over the offset forms."""
        from kfmt.log.offsets import last_offset, offset_for_timestamp

        strategy = str(_opt(options, "startingOffsetsByTimestampStrategy") or "error").lower()
        if strategy not in ("error", "latest"):
            raise ValueError(f"kafka-log: startingOffsetsByTimestampStrategy must be error or latest, not {strategy!r}")
        by_tp = self.by_partition(self.segments)
        for word, name, attr in (
            ("starting", "startingTimestamp", "starting"),
            ("ending", "endingTimestamp", "ending"),
        ):
            one = _opt(options, name)
            per = _offsets_opt(options, f"{word}OffsetsByTimestamp", None, None) if one is None else None
            if one is None and per is None:
                continue
            if one is not None:
                try:
                    one = int(one)
                except ValueError:
                    raise ValueError(
                        f"kafka-log: option {name} must be milliseconds since the epoch, not {one!r}"
                    ) from None
            spec: dict = {}
            for (topic, part), segs in by_tp.items():
                ts = one if one is not None else (per or {}).get(topic, {}).get(part)
                if ts is None:
                    continue
                found = offset_for_timestamp(segs, ts, self.storage)
                if found is None and word == "starting" and strategy == "error":
                    raise ValueError(f"kafka-log: {topic}-{part} has no record with a timestamp at or after {ts} "
                                     "(option startingOffsetsByTimestampStrategy=latest reads nothing from it instead)")  # fmt: skip
                if found is None:  # past the end: the partition's next offset, so nothing (starting) or all (ending)
                    found = -1 if word == "ending" else last_offset(segs[-1], self.storage) + 1
                spec.setdefault(topic, {})[part] = found
            setattr(self, attr, spec)

    def by_partition(self, segments) -> dict:
        """``{(topic, partition): [segments]}`` of the wanted ones among ``segments`` (kept in their order)."""
        return self._grouped(segments, lambda seg: (seg.topic, seg.partition))

    def by_log(self, segments) -> dict:
        """``{folder: [segments]}`` of the wanted ones: one log per partition folder (two log dirs holding a
        partition, as replicas, are two logs)."""
        return self._grouped(segments, _folder)

    def _grouped(self, segments, key) -> dict:
        out: dict = {}
        for seg in segments:
            if self._wanted(seg):
                out.setdefault(key(seg), []).append(seg)
        return out

    def _wanted(self, seg) -> bool:
        if self.topics is not None and seg.topic not in self.topics:
            return False
        if self.pattern is not None and not self.pattern(seg.topic):
            return False
        return self.assign is None or seg.partition in self.assign.get(seg.topic, ())

    def plan(self) -> list[tuple]:
        """Input partitions (tuples of slices): segments (large ones cut at batch boundaries) packed into groups.

        As Spark's file sources do, small segments share a task: each slice counts its bytes plus
        ``open_cost_bytes``, and groups fill up to ``min(split_bytes, total / min_partitions)``, so a
        directory of many small segments runs as a few tasks instead of one task per file.
        """
        segments = [s for s in self.segments if self._wanted(s)]
        kept = []
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            same = nxt is not None and (nxt.topic, nxt.partition, _folder(nxt)) == (
                seg.topic,
                seg.partition,
                _folder(seg),
            )
            next_base = nxt.base_offset if same and nxt is not None else None
            lo, hi = _bound(self.starting, seg, -2), _bound(self.ending, seg, -1)
            if (hi is not None and seg.base_offset >= hi) or (
                lo is not None and next_base is not None and next_base <= lo
            ):
                continue  # the whole segment is outside [startingOffsets, endingOffsets)
            kept.append((seg, lo, hi, not same))
        txns = {}
        if self.isolation == "read_committed":
            from kfmt.log.txn import transactions_of_files

            for segs in self.by_log(segments).values():  # each copy of a partition has its own transactions
                t = transactions_of_files([seg.path for seg in segs], format=self.format, storage=self.storage)
                txns[_folder(segs[0])] = (tuple(t.aborted), tuple(t.open.items()))
        total = sum(seg.size + self.open_cost for seg, _, _, _ in kept)
        target = max(1, min(self.split_bytes, max(self.open_cost, total // max(1, self.min_partitions))))
        slices = []
        for seg, lo, hi, last in kept:
            aborted, open_txns = txns.get(_folder(seg), (None, None))
            for start, end in _split(seg.path, seg.size, target, self.storage):
                slices.append(SegmentSlice(seg.path, seg.topic, seg.partition, start, end, lo, hi, aborted, open_txns,
                                           live_end=last and end == seg.size))  # fmt: skip
        groups: list[list[SegmentSlice]] = []
        size = 0
        for sl in sorted(slices, key=lambda x: x.end - x.start, reverse=True):
            cost = sl.end - sl.start + self.open_cost
            if not groups or size + cost > target:
                groups.append([])
                size = 0
            groups[-1].append(sl)
            size += cost
        return [tuple(g) for g in groups]

    def read(self, partition):
        import pyarrow as pa

        # a tuple of slices (plan()), or Spark's input partition holding one; Spark hands a bare InputPartition
        # when the plan has none (every segment pruned)
        from kfmt.table.commit import CommitError, check_tables_unchanged, table_root

        slices = partition if isinstance(partition, tuple) else getattr(partition, "slices", ())
        read = self.decode_reads or self.columns
        for part in slices:
            for batch in read_slice(part, self.verify_crc, self.include_control, self.on_corrupt, read,
                                    self.backend, self.storage, self.compressed_objects == "read",
                                    self.format, self.raw_errors):  # fmt: skip
                if self.decode_reads is not None and self.columns is not None:  # then the columns asked for
                    batch = add_decoded(pa, batch, self.columns)
                yield null_empty_headers(pa, batch) if self.null_empty_headers else batch
        try:  # a commit that started or finished while this task read would mix two versions of the table
            check_tables_unchanged(self.tables, [table_root(p.path) for p in slices], self.storage)
        except CommitError as e:
            raise ValueError(f"kafka-log: {e}") from None


def _folder(seg) -> str:
    """The folder (or prefix) holding a segment: two copies of a partition are two folders."""
    return seg.path.rsplit("/", 1)[0]


def _bound(spec, seg, sentinel):
    if spec is None:
        return None
    o = spec.get(seg.topic, {}).get(seg.partition)
    return None if o is None or o == sentinel else o


def _split(path: str, size: int, split_bytes: int, storage=None):
    """Cut a segment into ranges of about ``split_bytes`` at batch boundaries. A local file: from its entry
    headers. An object in a store: from the ``.index`` object beside it (one request; its entries are batch
    positions), each cut checked against the batch header there; without a usable index, one range
    (walking the headers would cost a request per batch)."""
    from kfmt.storage import is_uri

    if size <= split_bytes:
        return [(0, size)]
    if is_uri(path):
        return _split_by_index(path, size, split_bytes, storage)
    import struct

    from kfmt.log.resync import LOG_OVERHEAD, MIN_ENTRY_SIZE
    from kfmt.storage import compressed_object

    cuts, pos, start = [], 0, 0
    with open(path, "rb") as f:
        if compressed_object(f.read(16)):
            return [(0, size)]  # stored compressed whole: one slice, decompressed by its reader
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


def _split_by_index(path: str, size: int, split_bytes: int, storage) -> list[tuple[int, int]]:
    """Cuts at the positions a segment's offset index gives (Kafka indexes a batch every 4 KiB by default,
    as ``(last offset - base offset, position)``), each kept only if the batch header found there ends
    inside the segment and has that last offset: a stale or foreign index cuts nothing."""
    from kfmt.logdir.files import parse_offset_index
    from kfmt.logdir.indexes import entry_facts
    from kfmt.logdir.layout import SEGMENT_NAME
    from kfmt.storage import open_input

    m = SEGMENT_NAME.match(path.rsplit("/", 1)[-1])
    if not m:
        return [(0, size)]
    try:
        with open_input(path[: -len(".log")] + ".index", storage) as f:
            index, _ = parse_offset_index(f.read(), int(m.group(1)))
    except (FileNotFoundError, OSError):
        return [(0, size)]
    cuts, start = [], 0
    with open_input(path, storage) as f:
        for offset, pos in index:
            if pos - start < split_bytes or pos >= size:
                continue
            head = f.read_at(61, pos)
            if len(head) < 17 or (head[16] >= 2 and len(head) < 61):
                break
            end, last, _ = entry_facts(head, 0)
            if last != offset or pos + end > size:
                break  # not this segment's index (or stale): stop cutting
            cuts.append((start, pos))
            start = pos
    return [*cuts, (start, size)]
