"""Structured Streaming over log directories: ``spark.readStream.format("kafka-log")`` tails segments (local or
in a store) and ``writeStream.format("kafka-log")`` appends segments, one job-level commit per micro-batch.

The stream's offset is Spark's Kafka source's: ``{"topic": {"partition": next offset}}``. Each micro-batch
reads, per topic-partition, the records from the previous end offset (inclusive) to the new one (exclusive),
so a batch replayed after a restart reads exactly the same records: with a checkpoint, a file sink gets
every record once.

Finding the end offsets reads only entry headers, and only of each partition's last segment (a segment is
closed when the next one appears; its end is the next one's base offset), from where the last look
stopped. A last batch still being written (its bytes not all there yet) is not part of the stream until it
is complete; a zero-filled tail (a preallocated segment) is waited on the same way. Framing that can never
become an entry (a size below the minimum) stops the query with the file and byte offset.

The reader below is also the JVM source's: ``kfmt.jvm.LogStream`` asks it on the driver (:mod:`kfmt.spark.planner`)
for each offset and each micro-batch's slices, and decodes those in the executors' JVM.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field

from pyspark.sql.datasource import DataSourceStreamReader

try:  # PySpark 4.1+: Arrow batches in; older: the row interface is all there is
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - depends on the PySpark installed
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase  # type: ignore[assignment]

try:  # PySpark 4.1+: Trigger.AvailableNow told to the source (older: Spark's wrapper caps the offsets itself)
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow as _AvailableNow
except ImportError:  # pragma: no cover - depends on the PySpark installed

    class _AvailableNow:  # type: ignore[no-redef]
        pass


from kfmt.spark.source import KafkaLogReader, KafkaLogWriter, SegmentGroup, SegmentSlice, _int_opt, _opt, log
from kfmt.spark.writer import OffsetsTaken

#: options of a batch read that mean nothing for a stream (Spark's Kafka source refuses them too)
NOT_FOR_STREAMS = {
    "endingOffsets": "a stream has no end; read with spark.read for a bounded range",
    "endingTimestamp": "a stream has no end; read with spark.read for a bounded range",
    "endingOffsetsByTimestamp": "a stream has no end; read with spark.read for a bounded range",
}
#: options Spark passes to a stream's sink that are Spark's own
SPARK_STREAM_OPTIONS = ("checkpointlocation", "queryname")
_HEAD = struct.Struct(">qi")  # an entry's offset and size
_CHUNK = 8 * 1024 * 1024
_FACTS = 43  # bytes of an entry's header that entry_facts reads (a v2 batch's up to its max timestamp)


@dataclass
class _Tail:
    """What is known of a partition's last segment: complete entries up to ``end`` (bytes), their last
    offsets and end positions (for starting a slice near an offset)."""

    path: str
    base: int
    end: int = 0
    next_offset: int = -1
    lasts: list = field(default_factory=list)
    ends: list = field(default_factory=list)
    #: stored compressed whole (an object of a remote storage plugin): scanned once, decompressed
    packed: bool = False


def scan_entries(read_at, start: int, size: int, path: str, tail: _Tail) -> None:
    """Extend ``tail`` with the complete entries from byte ``start`` to ``size`` (headers only)."""
    from kfmt.log.resync import LOG_OVERHEAD, MIN_ENTRY_SIZE
    from kfmt.logdir.indexes import entry_facts

    pos = start
    buf, buf_at = b"", pos
    while pos + LOG_OVERHEAD <= size:
        if pos + LOG_OVERHEAD > buf_at + len(buf):
            buf_at, buf = pos, read_at(min(_CHUNK, size - pos), pos)
        offset, n = _HEAD.unpack_from(buf, pos - buf_at)
        if n == 0 and offset == 0:
            break  # a zero-filled (preallocated) tail: nothing written here yet
        if n < MIN_ENTRY_SIZE:
            raise ValueError(f"kafka-log stream: {path}: log.entry.size at byte {pos + 8}: entry size {n} is below "
                             f"the minimum {MIN_ENTRY_SIZE}: the segment is damaged")  # fmt: skip
        end = pos + LOG_OVERHEAD + n
        if end > size:
            break  # still being written: wait for the rest
        if min(end, pos + _FACTS) > buf_at + len(buf):  # the header fields entry_facts reads
            buf_at, buf = pos, read_at(min(_CHUNK, size - pos), pos)
        _, last, _ = entry_facts(buf, pos - buf_at)
        tail.lasts.append(last)
        tail.ends.append(end)
        tail.end, tail.next_offset = end, last + 1
        pos = end


@dataclass
class _Txns:
    """A partition's transactions as far as its entries were walked (read_committed), and how far each segment was."""

    txns: object
    walked: dict = field(default_factory=dict)


class KafkaLogStreamReader(DataSourceStreamReader, _AvailableNow):
    """``spark.readStream.format("kafka-log")``: the batch reader's options (paths and stores, topics, CRCs,
    damage handling, isolation, projections), ``startingOffsets`` (default ``latest``, as Spark's Kafka
    source; ``earliest``, JSON or the timestamp forms) and ``maxOffsetsPerTrigger``; with Trigger.AvailableNow,
    what is there when the query starts (also after a restart that re-runs a pending micro-batch first)."""

    #: Trigger.AvailableNow: the offsets there when the query started (latestOffset goes no further)
    until: dict | None = None

    def prepareForTriggerAvailableNow(self) -> None:
        self.until = self._latest()

    def __init__(self, options: dict, columns: tuple[str, ...] | None = None, defaults: dict | None = None):
        why = {k.lower(): v for k, v in NOT_FOR_STREAMS.items()}
        bad = sorted(k for k in options if k.lower() in why)
        if bad:
            raise ValueError("kafka-log: " + "; ".join(f"{k}: {why[k.lower()]}" for k in bad))
        limit = _opt(options, "maxOffsetsPerTrigger")
        starting = _opt(options, "startingOffsets")
        by_time = any(_opt(options, k) is not None for k in ("startingTimestamp", "startingOffsetsByTimestamp"))
        # latest is the default, as in Spark's Kafka source; the timestamp forms take precedence over it
        latest = starting is not None and str(starting).strip().lower() == "latest"
        self.latest_start = not by_time and (starting is None or latest)
        left_out = {"maxoffsetspertrigger", *(("startingoffsets",) if latest else ())}  # the batch reader's is earliest
        rest = {k: v for k, v in options.items() if k.lower() not in left_out}
        self.batch = KafkaLogReader(rest, columns, defaults, allow_empty=True)
        self.committed = self.batch.isolation == "read_committed"
        self.txns: dict = {}  # (topic, partition) -> _Txns (read_committed)
        self.max_offsets = _int_opt({"maxOffsetsPerTrigger": limit}, "maxOffsetsPerTrigger", 0) if limit else None
        # as Spark's Kafka source: a micro-batch is one input partition per topic-partition unless minPartitions
        # asks for more (then the largest ranges are cut at batch boundaries)
        given = any(_opt(options, k) is not None for k in ("min_partitions", "minPartitions"))
        self.min_partitions = self.batch.min_partitions if given else 1
        self.tails: dict = {}  # (topic, partition) -> _Tail of its last segment
        self.segments: dict = {}  # (topic, partition) -> [Segment] in offset order

    # ---------------------------------------------------------------- what is there
    def _refresh(self) -> None:
        from kfmt.logdir.layout import find_segments
        from kfmt.storage import compressed_object, open_input

        b = self.batch
        try:
            found = find_segments(b.paths, b.storage)
        except FileNotFoundError:
            found = []
        b.check_tables(found)
        for tp, segs in b.by_partition(found).items():
            self.segments[tp] = segs
            last = segs[-1]
            tail = self.tails.get(tp)
            if tail is None or tail.path != last.path:
                tail = self.tails[tp] = _Tail(last.path, last.base_offset, next_offset=last.base_offset)
            if last.size > tail.end and not tail.packed:
                with open_input(last.path, b.storage) as f:
                    if tail.end == 0 and compressed_object(f.read_at(16, 0)):
                        self._scan_packed(last, tail)
                    else:
                        scan_entries(f.read_at, tail.end, last.size, last.path, tail)
            if self.committed:
                self._walk_transactions(tp, segs, tail)

    def _walk_transactions(self, tp, segs: list, tail: _Tail) -> None:
        """read_committed: the partition's transactions, each segment's entries walked once as they come (the last
        segment's complete entries only, up to its tail's end)."""
        from kfmt.log.txn import Transactions, transactions_of_file

        state = self.txns.setdefault(tp, _Txns(Transactions()))
        for seg in segs:
            packed = seg.path == tail.path and tail.packed
            end = seg.size if seg.path != tail.path else tail.end
            done = state.walked.get(seg.path, 0)
            if end > done and not (packed and done):  # (an object stored compressed whole: walked whole, once)
                transactions_of_file(seg.path, format=self.batch.format, into=state.txns, storage=self.batch.storage,
                                     start=0 if packed else done, end=None if packed or seg.path != tail.path else end)  # fmt: skip
                state.walked[seg.path] = end

    def _stable(self, tp, next_offset: int) -> int:
        """The partition's last stable offset (read_committed): the first offset of its earliest open transaction,
        else its next offset; a read_committed consumer reads no further (Kafka's fetch stops there)."""
        state = self.txns.get(tp)
        if state is None or not state.txns.open:
            return next_offset
        return min(next_offset, min(state.txns.open.values()))

    def _scan_packed(self, seg, tail: _Tail) -> None:
        from kfmt.storage import open_segment

        if self.batch.compressed_objects != "read":
            raise ValueError(f"kafka-log stream: {seg.path} is stored compressed whole (option compressed_objects=read "
                             "reads it)")  # fmt: skip
        f, size, _ = open_segment(seg.path, self.batch.storage)
        with f:
            scan_entries(f.read_at, 0, size, seg.path, tail)
        tail.packed = True

    def _latest(self) -> dict:
        self._refresh()
        end = self._stable if self.committed else (lambda _tp, n: n)
        return {t: {str(p): end((tt, p), tail.next_offset) for (tt, p), tail in self.tails.items() if tt == t}
                for t in sorted({t for t, _ in self.tails})}  # fmt: skip

    def _earliest(self, tp) -> int:
        return self.segments[tp][0].base_offset

    # ---------------------------------------------------------------- the stream API
    def initialOffset(self) -> dict:
        from kfmt.spark.source import _bound

        latest = self._latest()
        if self.latest_start:
            return latest
        out: dict = {}
        for (t, p), segs in sorted(self.segments.items()):
            lo = _bound(self.batch.starting, segs[0], -2)
            out.setdefault(t, {})[str(p)] = self._earliest((t, p)) if lo is None else lo
        return out

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit=None, until: dict | None = None) -> dict:
        """The next micro-batch's end: what is there, shared out by each partition's backlog under a row limit,
        and no further than ``until`` (Trigger.AvailableNow: what was there when the query started)."""
        latest = self._latest()
        until = until if until is not None else self.until
        if until is not None:
            latest = {t: {p: min(n, until[t][p]) for p, n in parts.items() if p in until.get(t, {})}
                      for t, parts in latest.items() if t in until}  # fmt: skip
        cap = getattr(limit, "max_rows", None)
        if cap is None or start is None:
            return latest
        # as Spark's Kafka source: offsets shared out in proportion to each partition's lag
        lag = {(t, p): n - self._start_of(start, t, p) for t, parts in latest.items() for p, n in parts.items()}
        total = sum(max(0, x) for x in lag.values())
        if total <= cap:
            return latest
        shares = {tp: cap * x // total if x > 0 else 0 for tp, x in lag.items()}
        if not any(shares.values()):  # every share rounded down to nothing: the one furthest behind moves on
            shares[max(lag, key=lambda tp: lag[tp])] = 1
        out = {t: dict(parts) for t, parts in latest.items()}
        for (t, p), share in shares.items():
            out[t][p] = self._start_of(start, t, p) + share
        return out

    def _start_of(self, start: dict, t: str, p: str) -> int:
        o = start.get(t, {}).get(p)
        return self._earliest((t, int(p))) if o is None else int(o)

    def reportLatestOffset(self):
        return self._latest()

    def partitions(self, start: dict, end: dict):
        if any((t, int(p)) not in self.tails or self.tails[(t, int(p))].next_offset < o
               for t, parts in end.items() for p, o in parts.items()):  # fmt: skip
            self._refresh()  # a batch planned before a restart: look again
        slices = []
        for t, parts in sorted(end.items()):
            for p, hi in sorted(parts.items()):
                tp = (t, int(p))
                lo = self._start_of(start, t, p)
                if hi <= lo or tp not in self.segments:
                    continue
                segs, tail = self.segments[tp], self.tails[tp]
                txns = self._resolved(tp)  # (one tuple per partition: the plan carries it once)
                for i, seg in enumerate(segs):
                    nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
                    if seg.base_offset >= hi or (nxt is not None and nxt <= lo):
                        continue
                    first, stop = 0, seg.size
                    if seg.path == tail.path:  # only complete entries, and from the one holding lo
                        k = bisect.bisect_left(tail.lasts, lo)
                        first = tail.ends[k - 1] if k > 0 else 0
                        j = bisect.bisect_left(tail.lasts, hi - 1)
                        stop = tail.ends[j] if j < len(tail.lasts) else tail.end
                    slices.append(SegmentSlice(seg.path, t, int(p), first, stop, lo, hi, *txns))
        return [SegmentGroup((s,)) for s in self._cut(slices)]

    def _resolved(self, tp) -> tuple:
        """A slice's (aborted, open transactions) with read_committed, else (None, None). The micro-batch ends at or
        before the last stable offset it was cut at, so what is known now decides its records as it did then."""
        if not self.committed:
            return None, None
        state = self.txns.get(tp)
        t = state.txns if state is not None else None
        return (tuple(t.aborted), tuple(t.open.items())) if t is not None else ((), ())

    def _cut(self, slices: list) -> list:
        """The slices cut at batch boundaries into about ``minPartitions`` pieces (each slice kept whole when
        there are enough, as Spark's Kafka source keeps one range per topic-partition)."""
        if len(slices) >= self.min_partitions:
            return slices
        from dataclasses import replace

        from kfmt.table.plan import _split

        # half the even share: uneven batches still give at least minPartitions pieces where there are that many
        target = max(1, sum(s.end - s.start for s in slices) // (2 * self.min_partitions))
        out = []
        for sl in slices:
            tail = self.tails.get((sl.topic, sl.partition))
            if tail is not None and tail.path == sl.path:  # the last segment: its entries' ends are known
                # (positions in a segment stored compressed whole are the decompressed bytes': read it whole)
                bounds = [] if tail.packed else [e for e in tail.ends if sl.start < e < sl.end]
            else:  # a closed segment, whole: cut as a batch read cuts it (never an object stored compressed)
                bounds = [b for _, b in _split(sl.path, sl.end, target, self.batch.storage)][:-1]
            at = sl.start
            for b in bounds:
                if b - at >= target:
                    out.append(replace(sl, start=at, end=b))
                    at = b
            out.append(replace(sl, start=at))
        return out

    def read(self, partition):
        return self.batch.read(partition)

    def commit(self, end: dict) -> None:
        """Forget the positions of entries before the committed offsets: memory holds the backlog's only
        (segments belong to Kafka, or whoever writes them: nothing else to release)."""
        for t, parts in end.items():
            for p, o in parts.items():
                tail = self.tails.get((t, int(p)))
                if tail is not None:
                    # keep the entry before the offset: the next slice starts where it ends
                    k = max(0, bisect.bisect_left(tail.lasts, int(o)) - 1)
                    if k:
                        del tail.lasts[:k], tail.ends[:k]


class KafkaLogStreamWriter(KafkaLogWriter, _StreamWriterBase):
    """``writeStream.format("kafka-log")``: each micro-batch is written as the batch writer writes a job
    (staged by the tasks, put in place by one commit on the driver, appended after the offsets there).
    A micro-batch committed once is not written again when Spark replays it after a restart: the commit
    records its id under ``<path>/_kfmt_stream/``."""

    def __init__(self, options: dict):
        # Spark's own streaming options (checkpointLocation, ...) are not the writer's
        super().__init__({k: v for k, v in options.items() if k.lower() not in SPARK_STREAM_OPTIONS}, overwrite=False)

    def _done(self, batch_id: int) -> str:
        return f"{self.path.rstrip('/')}/_kfmt_stream/{batch_id}"

    def commit(self, messages, batchId):  # type: ignore[override]
        from kfmt.storage import Tree

        done = Tree(self._done(batchId), self.storage)
        try:
            if done.is_file(done.root):
                return  # a replay of a batch already in place
            try:
                self._commit(messages)
            except OffsetsTaken:
                # a crash after the segments went in and before the batch id did: the replay finds its offsets there
                if not self._in_place(messages):
                    raise
                log.warning("kafka-log stream writer: micro-batch %d is already in %s (a replay after a crash): "
                            "not written again", batchId, self.path)  # fmt: skip
            done.write(done.root, b"committed\n")
        finally:
            self.abort(messages)

    def _in_place(self, messages) -> bool:
        """Whether every staged batch's offsets are already in the target's partitions."""
        from kfmt.log.batches import scan
        from kfmt.logdir.names import folder_name
        from kfmt.spark.writer import folder_last_offset
        from kfmt.storage import Tree

        staging, target = self._tree(), Tree(self.path, self.storage)
        for (topic, part), files in self._pieces(messages).items():
            there = folder_last_offset(target, target.join(folder_name(topic, part)), self.storage)
            if there is None:
                return False
            for f in files:
                if any(b.last_offset > there for _, _, b in scan(staging.read(f[0])) if not isinstance(b, Exception)):
                    return False
        return True

    def abort(self, messages, batchId=None):
        super().abort(messages)
