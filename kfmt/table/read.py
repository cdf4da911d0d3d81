"""The one reading function: a Kafka log (files, partition folders, log directories, globs, lists, store URIs)
planned into slices and read into Arrow record batches, with the options and defaults of the Spark source
(``spark.read.format("kafka-log")``) and of :func:`kfmt.read_arrow`, which are both built on it.

:class:`LogReader` plans from an options dict (the names Spark's Kafka source uses where it has them:
``subscribe``, ``assign``, ``startingOffsets``, ``endingTimestamp``, ``includeHeaders``...); its slices are plain,
picklable data, read anywhere by :func:`read_slice`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from kfmt.log.arrow import (
    _Range,
    add_decoded,
    arrow_schema,
    decoding_reads,
    null_empty_headers,
    projected_schema,
)
from kfmt.logdir.layout import SUFFIXES, suffixes_opt
from kfmt.storage import OPTIONS as STORAGE_OPTIONS

log = logging.getLogger("kfmt.spark")


READ_OPTIONS = {
    "path": "log directory, topic-partition folder or segment files (comma-separated)",
    "paths": "same as path",
    "verify_crc": "check CRCs (default true)",
    "include_control": "also return control records (default false)",
    "on_corrupt": "fail (default) | skip | quarantine",
    "backend": "native | python | construct: the codec backend on the executors (default: the active one there)",
    "format": "read every entry as this format id (proposals that reuse a real magic are read only when named)",
    "include_suffixed": "also read folders Kafka marked -future, -delete or -stray (comma-separated suffixes; "
    "default none: Kafka serves none of them, and a -future folder is a second copy of a partition)",
    **STORAGE_OPTIONS,
    "isolation": "read_uncommitted (default) | read_committed: leave out aborted transactions",
    "kafka.isolation.level": "same as isolation (the name Spark's Kafka source uses)",
    "subscribe": "only these topics (comma-separated)",
    "subscribePattern": "only topics matching this regular expression",
    "assign": 'only these topic-partitions, JSON: {"topic": [0, 1]}',
    "startingOffsets": 'earliest (default) or JSON {"topic": {"0": 23}} (-2: earliest); inclusive',
    "endingOffsets": 'latest (default) or JSON {"topic": {"0": 50}} (-1: latest); exclusive',
    "startingTimestamp": "start every partition at its first record with a timestamp >= this (ms); before startingOffsets",
    "startingOffsetsByTimestamp": 'JSON {"topic": {"0": <ms>}}: per partition, as startingTimestamp',
    "startingOffsetsByTimestampStrategy": "error (default) | latest: when no record is that late",
    "endingTimestamp": "stop every partition before its first record with a timestamp >= this (ms); else latest",
    "endingOffsetsByTimestamp": 'JSON {"topic": {"0": <ms>}}: per partition, as endingTimestamp',
    "split_bytes": "largest input split in bytes (default spark.sql.files.maxPartitionBytes, 128 MiB)",
    "open_cost_bytes": "cost of opening a segment, in bytes (default spark.sql.files.openCostInBytes, 4 MiB)",
    "min_partitions": "fewest input partitions to aim for (default the session's default parallelism)",
    "minPartitions": "same as min_partitions (the name Spark's Kafka source uses)",
    "compressed_objects": "read (default) | fail: segment objects a remote storage plugin stored compressed whole "
    "(zstd, gzip, LZ4, framed snappy)",
    "includeHeaders": "true: headers NULL for records without headers, as Spark's Kafka source (default: empty lists)",
    "decode_payloads": "true: add key_decoded and value_decoded, the records of Kafka's own topics (__consumer_offsets, "
    "__cluster_metadata...) decoded by name as JSON text (NULL for other topics), and payload_error, why one did not "
    "decode (default false)",
}
#: options of Spark's Kafka source that cannot apply to files, and why (refused, so a job does not silently
#: mean something else)
OFFLINE_REFUSED = {
    "kafka.bootstrap.servers": "kafka-log reads segment files, not a broker",
    "kafka.group.id": "there is no consumer group when reading files",
    "groupIdPrefix": "there is no consumer group when reading files",
    "failOnDataLoss": "files cannot lose data under a reader: damage is handled by on_corrupt",
    "maxOffsetsPerTrigger": "it limits a streaming micro-batch: use it with spark.readStream",
    "minOffsetsPerTrigger": "not supported: micro-batches are not held back to gather offsets",
    "maxTriggerDelay": "not supported: micro-batches are not held back to gather offsets",
}


def check_options(options: dict, known: dict, what: str) -> None:
    """Refuse an option this source does not know (a typo must not be ignored silently), and say why the
    options of Spark's Kafka source that make no sense for files are refused."""
    refused = {k.lower(): why for k, why in OFFLINE_REFUSED.items()}
    bad = [
        k
        for k in options
        if k.lower() in refused or (k.lower().startswith("kafka.") and k.lower() != "kafka.isolation.level")
    ]
    if bad:
        reasons = "; ".join(
            f"{k}: {refused.get(k.lower(), 'a Kafka client setting, which does not apply to files')}"
            for k in sorted(bad)
        )
        raise ValueError(f"kafka-log: option(s) of Spark's Kafka source that do not apply here: {reasons}")
    lowered = {x.lower() for x in known}
    unknown = sorted(k for k in options if k.lower() not in lowered)
    if unknown:
        valid = "; ".join(f"{k}: {v}" for k, v in known.items())
        raise ValueError(f"kafka-log: unknown {what} option(s) {', '.join(unknown)}. Valid options: {valid}")


def _opt(options: dict, name: str):
    """Spark passes option names case-insensitively (often lower-cased): look a name up either way."""
    if name in options:
        return options[name]
    low = name.lower()
    for k, v in options.items():
        if k.lower() == low:
            return v
    return None


def _bool(v, default: bool) -> bool:
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


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
        self.include_control = _bool(_opt(options, "include_control"), False)
        self.compressed_objects = str(_opt(options, "compressed_objects") or "read").lower()
        if self.compressed_objects not in ("read", "fail"):
            raise ValueError(f"kafka-log: compressed_objects must be read or fail, not {self.compressed_objects!r}")
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
                t = transactions_of_files([seg.path for seg in segs], format=self.format)
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


def _storage(options: dict) -> dict:
    """The options that configure a store (``s3.endpoint``...), for :mod:`kfmt.storage`."""
    return {k: str(_opt(options, k)) for k in STORAGE_OPTIONS if _opt(options, k)}


def _int_opt(options, name, default) -> int:
    v = _opt(options, name)
    if v is None or v == "":
        return default
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise ValueError(f"kafka-log: option {name} must be an integer, not {v!r}") from None
    if n <= 0:
        raise ValueError(f"kafka-log: option {name} must be positive, not {n}")
    return n


def _csv(v):
    return None if v is None else {x.strip() for x in str(v).split(",") if x.strip()}


def _json_opt(options, name):
    import json

    v = _opt(options, name)
    if v is None:
        return None
    try:
        doc = json.loads(v)
        return {str(t): {int(p) for p in parts} for t, parts in doc.items()}
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f'kafka-log: option {name} must be JSON like {{"topic": [0, 1]}}, not {v!r}') from None


def _topic_ids_opt(options) -> dict:
    import json

    from kfmt.logdir.layout import TOPIC_ID

    v = _opt(options, "topic_ids")
    if v is None:
        return {}
    try:
        doc = json.loads(v)
        ids = {str(t): str(i) for t, i in doc.items()}
    except (ValueError, TypeError, AttributeError):
        ids = None
    if ids is None or not all(re.fullmatch(TOPIC_ID, i) for i in ids.values()):
        raise ValueError(f'kafka-log: option topic_ids must be JSON like {{"orders": "<22-character topic id>"}}, '
                         f"not {v!r}")  # fmt: skip
    return ids


def _offsets_opt(options, name, word, sentinel):
    import json

    v = _opt(options, name)
    if v is None or (word and str(v).strip().lower() == word):
        return None
    try:
        doc = json.loads(v)
        return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in doc.items()}
    except (ValueError, TypeError, AttributeError):
        what = (
            f'{word} or JSON like {{"topic": {{"0": 23}}}} ({sentinel}: {word})'
            if word
            else 'JSON like {"topic": {"0": <ms>}}'
        )
        raise ValueError(f"kafka-log: option {name} must be {what}, not {v!r}") from None


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

    import kfmt
    from kfmt.log.arrow import Reading, rows

    dropped = None
    if part.aborted is not None:
        from kfmt.log.txn import Transactions

        dropped = Transactions(list(part.aborted), dict(part.open_txns or ())).is_dropped
    reading = Reading(tuple(columns or arrow_schema(pa).names), verify_crc, format, backend, on_corrupt,
                      include_control, dropped, part.first_offset, part.stop_offset, part.start, part.live_end)  # fmt: skip
    try:
        yield from rows(_Range(f, part.start, part.end), part, reading)
    except kfmt.CodecError as e:
        if raw_errors:
            raise
        at = part.start + (getattr(e, "batch_position", None) or 0)
        raise ValueError(f"kafka-log: corrupt batch in {part.path} at byte {at}: {e} "
                         "(option on_corrupt=skip or quarantine to go on)") from None  # fmt: skip


# ------------------------------------------------------------------ read_arrow: the same reader, as a table
def read_arrow(
    source,
    *,
    columns=None,
    topic: str | None = None,
    partition: int | None = None,
    verify_crc: bool = True,
    format: str | None = None,
    backend: str | None = None,
    on_corrupt: str = "fail",
    storage_options: dict | None = None,
    compressed_objects: str = "read",
    include_control: bool = False,
    isolation: str = "read_uncommitted",
    include_suffixed=None,
    **options,
):
    """A Kafka log as a ``pyarrow.Table`` with the Spark source's columns, read by the Spark source's own reader
    (:class:`kfmt.table.read.LogReader`), with its options and defaults.

    ``source``: a segment file, a partition folder, a log directory, a glob, a list of them, or a store's URI
    (``storage_options``: see :mod:`kfmt.storage`); or bytes-like data or a binary file (one log). Rows come in
    topic, partition, folder and offset order. ``columns`` projects (only those are built). ``topic`` and
    ``partition`` name the rows instead of what the folders say. Control records are left out unless
    ``include_control``; ``isolation="read_committed"`` leaves out aborted transactions; folders Kafka marked
    ``-delete``/``-future``/``-stray`` are left out unless named in ``include_suffixed``. ``on_corrupt``: ``fail``
    raises, ``skip`` leaves damaged regions out (logged), ``quarantine`` gives each a row with its position, error
    and raw bytes (at most ``QUARANTINE_RAW_BYTES``). ``compressed_objects="fail"`` refuses a segment object
    stored compressed whole by a remote storage plugin (by default it is read). Further ``options`` are the
    Spark source's, by the same names: ``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets``,
    ``endingOffsets``, ``startingTimestamp``, ``endingTimestamp``, ``startingOffsetsByTimestamp``,
    ``endingOffsetsByTimestamp``, ``includeHeaders`` (dicts are given as dicts, numbers as numbers)."""
    import pyarrow as pa

    schema, batches = _arrow_stream(source, columns=columns, topic=topic, partition=partition, verify_crc=verify_crc,
                                    format=format, backend=backend, on_corrupt=on_corrupt,
                                    storage_options=storage_options, compressed_objects=compressed_objects,
                                    include_control=include_control, isolation=isolation,
                                    include_suffixed=include_suffixed, **options)  # fmt: skip
    return pa.Table.from_batches(list(batches), schema)


def read_arrow_batches(source, **kwargs):
    """:func:`read_arrow`'s rows as a stream, a ``pyarrow.RecordBatchReader``: Arrow batches (at most 8,192 rows
    each) come as the log is read, so memory stays flat whatever its size, where ``read_arrow``'s table holds
    every row. The same arguments; they are checked at once, damage is raised as the batch holding it is read.
    Feed it to ``pyarrow.dataset.write_dataset``, DuckDB or Polars, or iterate it."""
    import pyarrow as pa

    schema, batches = _arrow_stream(source, **kwargs)
    return pa.RecordBatchReader.from_batches(schema, batches)


def _arrow_stream(
    source,
    *,
    columns=None,
    topic: str | None = None,
    partition: int | None = None,
    verify_crc: bool = True,
    format: str | None = None,
    backend: str | None = None,
    on_corrupt: str = "fail",
    storage_options: dict | None = None,
    compressed_objects: str = "read",
    include_control: bool = False,
    isolation: str = "read_uncommitted",
    include_suffixed=None,
    **options,
):
    """read_arrow's schema and its Arrow batches (a generator: the log is read as they are taken); the
    arguments are checked now."""
    import pyarrow as pa

    from kfmt.log.arrow import Reading, _Where, rows

    if on_corrupt not in ("fail", "skip", "quarantine"):
        raise ValueError(f"on_corrupt must be 'fail', 'skip' or 'quarantine', not {on_corrupt!r}")
    decode = _bool(options.get("decode_payloads"), False)
    names = arrow_schema(pa, True).names
    if isinstance(columns, str):
        raise ValueError(
            f"columns must be a list of column names, not the string {columns!r}: use columns=[{columns!r}]"
        )
    columns = tuple(columns or arrow_schema(pa, decode).names)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; the columns are {', '.join(names)}")
    if compressed_objects not in ("fail", "read"):
        raise ValueError(f"compressed_objects must be 'fail' or 'read', not {compressed_objects!r}")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    paths = _paths_of(source)
    if paths is None:
        if options or include_suffixed:
            raise ValueError(f"option(s) {', '.join(sorted(options)) or 'include_suffixed'} need a path, not data")
        where = _Where(topic, partition, None)
        data, committed = _data_of(source, isolation == "read_committed")
        read = decoding_reads(columns)
        dropped = committed.is_dropped if committed is not None else None
        batches = rows(data, where, Reading(read or columns, verify_crc, format, backend, on_corrupt, include_control,
                                            dropped))  # fmt: skip
        if read is not None:
            batches = (add_decoded(pa, b, columns) for b in batches)
        return projected_schema(pa, columns), batches
    opts = {"path": paths, "verify_crc": verify_crc, "on_corrupt": on_corrupt, "include_control": include_control,
            "isolation": isolation, "compressed_objects": compressed_objects, "format": format, "backend": backend,
            "include_suffixed": include_suffixed, **(storage_options or {}),
            **{k: _option_text(v) for k, v in options.items()}}  # fmt: skip
    return _read_planned({k: v for k, v in opts.items() if v is not None}, columns, topic, partition)


def _paths_of(source):
    """The paths a source names (a path, a URI, a glob, a list of them), or None for data and files."""
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, (list, tuple)) and source and all(isinstance(x, (str, os.PathLike)) for x in source):
        return [os.fspath(x) for x in source]
    return None


def _option_text(v) -> str:
    """An option's value as the Spark source takes it: text, JSON for dicts and lists."""
    import json

    return json.dumps(v) if isinstance(v, (dict, list)) else str(v).lower() if isinstance(v, bool) else str(v)


def _read_planned(opts: dict, columns, topic, partition):
    """Rows of the paths in ``opts`` through :class:`kfmt.table.read.LogReader`: every slice, in log order."""
    import dataclasses

    import pyarrow as pa

    try:
        reader = LogReader(opts, columns, {"min_partitions": 1, "split_bytes": 1 << 62}, raw_errors=True)
    except ValueError as e:
        raise ValueError(str(e).removeprefix("kafka-log: ")) from None
    slices = sorted((s for g in reader.plan() for s in g), key=lambda s: (s.topic, s.partition, s.path, s.start))
    if topic is not None or partition is not None:
        named = {"topic": topic} if topic is not None else {}
        slices = [dataclasses.replace(s, **named, **({"partition": partition} if partition is not None else {}))
                  for s in slices]  # fmt: skip
    return projected_schema(pa, columns), (b for s in slices for b in reader.read((s,)))


def _data_of(source, committed: bool):
    """Bytes-like data or a binary file as what :func:`kfmt.log.arrow.rows` reads (a :class:`_Range` of a file with a
    descriptor), and the transactions to resolve for read_committed (which needs the bytes first)."""
    if hasattr(source, "read") and not isinstance(source, (bytes, bytearray, memoryview)):
        try:
            fd, start = source.fileno(), source.tell()
        except (OSError, ValueError):  # io.UnsupportedOperation: a file object with no descriptor
            source = source.read()
        else:
            if not committed:
                return _Range(source, start, os.fstat(fd).st_size), None
            source = source.read()
    if not committed:
        return source, None
    from kfmt.log.txn import transactions

    data = bytes(memoryview(source))
    return data, transactions(data)
