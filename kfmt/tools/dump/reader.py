"""`kfmt dump`'s reading: each log's segments and other files, every problem said once with where it is,
repeats counted."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kfmt.log.batches import scan
from kfmt.log.scanner import batch_being_written
from kfmt.logdir.checks import epoch_problems, epoch_runs_add, offset_checkpoint_problems, topic_id_problems
from kfmt.logdir.files import READERS
from kfmt.logdir.layout import Segment
from kfmt.payloads import Payload, binding, decode_control, decode_payload
from kfmt.runtime import jsonl
from kfmt.runtime.errors import CodecError
from kfmt.tools.dump.indexes import _ENTRY_NAMES, _add_fact, _facts_of, _new_facts, check_offset_index, check_time_index
from kfmt.tools.dump.show import (
    TS_TYPES,
    Filters,
    _bare,
    _key_bytes,
    _size,
    batch_dict,
    control_text,
    decoded_text,
    iso,
    record_dict,
    record_lines,
    sequence_at,
    shown,
    template_line,
)
from kfmt.tools.dump.targets import Log, _looks_like_segment

#: problems of one kind in one file printed before the rest are only counted (a segment renamed .index would
#: otherwise print one line per 8 bytes)
MAX_REPEATS = 20


class CountReached(Exception):
    """``--count N`` records (or batches) shown: the dump stops reading."""


# ------------------------------------------------------------------ the dump
@dataclass
class Dump:
    args: Any  # the parsed command line (argparse.Namespace)
    out: TextIO
    err: TextIO
    problems: int = 0
    counts: Counter = field(default_factory=Counter)
    header_for: Any = None
    shown_items: int = 0
    repeats: Counter = field(default_factory=Counter)  # problems per (file, kind), to cap what is printed
    names: dict = field(default_factory=dict)  # file paths shown under another name (stdin's spool file: "-")
    ends: dict = field(default_factory=dict)  # (log dir, topic, partition) -> log end offset, of logs read whole
    topic_ids: dict = field(default_factory=dict)  # log dir -> {topic: {topic id: [folders]}}
    checked: Counter = field(default_factory=Counter)  # logs, segments and index files read, for the verdict
    _live: Any = None  # the log's last segment, being read: a batch cut short at its end is being written

    def name(self, path) -> str:
        return self.names.get(str(path), str(path))

    def problem(self, path, kind: str, message: str, position: int | None = None, **extra) -> None:
        """Report one problem: on stderr, and as an object in the --json stream (the first MAX_REPEATS of a
        kind per file; the rest are counted and summed up at the end)."""
        self.problems += 1
        self.counts["problems", kind] += 1
        self.repeats[str(path), kind] += 1
        if self.repeats[str(path), kind] > MAX_REPEATS:
            return
        where = f" at byte {position}" if position is not None else ""
        print(f"kfmt dump: {self.name(path)}{where}: {message}", file=self.err)
        if self.args.json and not self.args.summary:
            obj = {"type": "problem", "kind": kind, "file": self.name(path), "position": position, "message": message}
            self.out.write(jsonl.line(obj | extra))

    def repeated(self) -> None:
        """Say how many problems past MAX_REPEATS per file and kind were counted but not printed."""
        for (path, kind), n in sorted(self.repeats.items()):
            if n > MAX_REPEATS:
                print(f"kfmt dump: {self.name(path)}: {n - MAX_REPEATS} more {kind} problem(s) not shown "
                      f"({n} in all)", file=self.err)  # fmt: skip
                if self.args.json and not self.args.summary:
                    obj = {
                        "type": "problems_not_shown",
                        "kind": kind,
                        "file": self.name(path),
                        "count": n - MAX_REPEATS,
                    }
                    self.out.write(jsonl.line(obj))

    def note(self, path, message: str) -> None:
        print(f"kfmt dump: {self.name(path)}: note: {message}", file=self.err)

    # ---- logs
    def log(self, log: Log) -> None:
        """One log (a partition folder's segments in offset order, or a KRaft snapshot): offsets must increase
        across its segments too; its folder's own files are checked against it."""
        segs = log.segments
        txns = None
        if self.args.isolation == "read_committed":
            from kfmt.log.txn import transactions_of_files

            txns = transactions_of_files([s.path for s in segs], format=self.args.format)
        filters = self.args.filters
        if filters.relative():
            from kfmt.log.offsets import last_offset

            filters = filters.from_end(last_offset(segs[-1]) + 1)
        last, whole = None, True
        runs: list = []
        for seg in segs:
            # a walked partition folder's last segment may end in a batch being written: a note, not damage
            self._live = seg if (seg is segs[-1] and log.snapshot is None) else None
            last, read_whole = self.segment(seg, last, txns, filters, runs, log)
            whole = whole and read_whole
        if log.snapshot is None and whole:
            end = max(last + 1 if last is not None else 0, segs[-1].base_offset)
            self.ends[log.root, segs[0].topic, segs[0].partition] = end
        if log.snapshot is None and log.epochs is not None:
            self.folder_files(log, runs if whole else None)

    def folder_files(self, log: Log, runs) -> None:
        """A partition folder's leader-epoch-checkpoint (against the batches' epochs) and partition.metadata
        (a valid topic id, the same as the topic's other partitions in this log dir)."""
        folder = Path(log.folder)
        epochs = folder / "leader-epoch-checkpoint"
        if epochs.is_file():
            entries = self.other(epochs, "leader_epoch_checkpoint", show=False)
            if entries is not None and runs is not None:
                problems, notes = epoch_problems(entries, runs)
                for msg in problems:
                    self.problem(epochs, "leader_epoch", msg)
                for msg in notes:
                    self.note(epochs, msg)
        meta = folder / "partition.metadata"
        if meta.is_file():
            entries = self.other(meta, "partition_metadata", show=False)
            if entries and "topic_id" in entries[0]:
                topic = log.segments[0].topic
                ids = self.topic_ids.setdefault(log.root, {}).setdefault(topic, {})
                ids.setdefault(entries[0]["topic_id"], []).append(folder.name)

    def segment(self, seg: Segment, prev_last: int | None, txns, filt: Filters, runs: list, log: Log):
        """Read and check one segment; returns (the last offset so far, whether the segment was read whole)."""
        a = self.args
        facts = _new_facts()
        if prev_last is not None and seg.base_offset <= prev_last:
            self.problem(seg.path, "offset_order", f"segment base offset {seg.base_offset} is not above the last "
                         f"offset {prev_last} of the segment before it")  # fmt: skip
        last = prev_last
        self.checked["segments"] += 1
        budget = filt.max_bytes
        stop = None  # where reading stopped early (a corrupt batch, unread bytes, --max-bytes)
        damaged: set[int] = set()  # positions of corrupt batches (their offsets are unknown)
        try:
            items = scan(seg.path, verify_crc=not a.no_verify_crc, skip_corrupt=True, format=a.format)
            for pos, end, b in items:
                if budget is not None and end > budget:
                    stop = pos
                    self.note(seg.path, f"stopped at --max-bytes {budget}: {seg.size - pos} byte(s) from byte {pos} "
                              "not read or checked")  # fmt: skip
                    break
                if isinstance(b, CodecError):
                    damaged.add(pos)
                    if self._damage(seg, pos, end, b):
                        stop = pos
                        break
                    continue
                last = self._offsets(seg, pos, b, last)
                _add_fact(facts, pos, b)
                epoch_runs_add(runs, b.base_offset, b.last_offset, b.partition_leader_epoch)
                self._count(log, b, end - pos)
                if txns is not None and txns.is_dropped(b):
                    self.counts["aborted_records", log.label] += len(b.records)
                    continue
                if not a.summary and filt.wants_batch(b):
                    self._show(seg, pos, end, b, filt, log)
        except BrokenPipeError:
            raise
        except OSError as e:
            self.problem(seg.path, "unreadable", f"cannot read: {e.strerror or e}")
            return last, False
        if not a.no_index:
            self._check_indexes(seg, facts, stop, damaged)
        return last, stop is None

    def _count(self, log: Log, b, size: int) -> None:
        c = self.counts
        c["magic", b.magic] += 1
        c["codec", b.codec] += 1
        c["batches", log.label] += 1
        c["records", log.label] += len(b.records)
        c["bytes", log.label] += size

    def _damage(self, seg, pos, end, b) -> bool:
        """Report a corrupt batch or a damaged region; True if reading this segment stops here."""
        a = self.args
        if self._live is seg and batch_being_written(b, seg.size):
            self.note(seg.path, f"{end - pos} byte(s) at byte {pos} are a batch not yet written completely (the "
                      "partition's last segment, as a broker's log being appended): left out, as Kafka's fetch does")  # fmt: skip
            return False
        if b.unread is not None:  # a damaged region (broken framing, zero fill, a tail)
            msg = str(b) if "not read" in str(b) or b.zero_filled else f"{b}; {end - pos} byte(s) not read"
            self.problem(seg.path, "zero_fill" if b.zero_filled else "unread_bytes", msg, pos, bytes=end - pos)
            if end < seg.size and not a.skip_corrupt:
                self.problem(seg.path, "unread_bytes", f"{seg.size - end} byte(s) after it not read "
                             "(--skip-corrupt goes on with the next valid batch)", end, bytes=seg.size - end)  # fmt: skip
                return True
            return False
        self.problem(seg.path, "corrupt_batch", f"corrupt batch of {end - pos} bytes: {b}", pos, bytes=end - pos)
        if a.skip_corrupt:
            return False
        rest = seg.size - end
        if rest:
            self.problem(seg.path, "unread_bytes", f"{rest} byte(s) after the corrupt batch not read "
                         "(--skip-corrupt goes on with the next batch)", end, bytes=rest)  # fmt: skip
        return True

    def _offsets(self, seg, pos, b, last):
        if b.base_offset > b.last_offset:
            self.problem(seg.path, "offset_order", f"batch base offset {b.base_offset} is above its last offset "
                         f"{b.last_offset}", pos)  # fmt: skip
        if last is not None:
            if b.base_offset <= last:
                self.problem(seg.path, "offset_order", f"offsets go backwards: batch at offset {b.base_offset} "
                             f"follows offset {last}", pos)  # fmt: skip
            elif b.base_offset > last + 1:
                self.counts["offset_gaps", str(Path(seg.path).parent)] += 1  # compaction and aborted-data removal
                if self.args.verbose:
                    self.note(seg.path, f"non-consecutive offsets at byte {pos}: {last} then {b.base_offset}")
        elif b.base_offset < seg.base_offset and seg.base_offset:
            self.problem(seg.path, "offset_order", f"first batch offset {b.base_offset} is below the segment's "
                         f"base offset {seg.base_offset}", pos)  # fmt: skip
        recs = b.records
        prev = None
        for r in recs:
            if prev is not None and r.offset <= prev:
                self.problem(seg.path, "offset_order", f"record offsets go backwards inside the batch: {r.offset} "
                             f"after {prev}", pos)  # fmt: skip
                break
            prev = r.offset
        return max(b.last_offset, last) if last is not None else b.last_offset

    def _shown(self, n: int = 1) -> None:
        """Count what was shown against ``--count``."""
        self.shown_items += n
        if self.args.count is not None and self.shown_items >= self.args.count:
            raise CountReached

    def _show(self, seg, pos, end, b, filt: Filters, log: Log) -> None:
        """A batch: its line (table or JSON), or its records (``--records``: in the table, under its line)."""
        a = self.args
        per_record = a.records or a.template or a.payload_only
        if not per_record or not (a.json or a.template or a.payload_only):
            self._batch(seg, pos, end, b, log)
        if not per_record:
            self._shown()
            return
        if self._plain_json(seg, b, filt, log):  # every record of the batch, written whole
            self.out.write(record_lines(seg, self.name(seg.path), pos, b).decode())
            self._shown(len(b.records))
            return
        for r in b.records:
            if filt.wants_record(r):
                self._record(seg, pos, b, r, log)
                self._shown()

    def _plain_json(self, seg, b, filt: Filters, log: Log) -> bool:
        """Whether a batch's records are written as JSON lines, all of them, as they are: no record filtered out,
        none of Kafka's own payloads to decode (nor a control record's), payloads as text, no --count to reach."""
        a = self.args
        return (a.json and not (a.template or a.payload_only) and a.payload == "utf8" and a.count is None
                and filt.offsets == (None, None) and filt.times == (None, None) and not b.is_control
                and not log.snapshot and binding(seg.topic) is None)  # fmt: skip

    def _batch(self, seg, pos, end, b, log: Log) -> None:
        a, out = self.args, self.out
        if a.json:
            out.write(jsonl.line(batch_dict(seg, pos, end, b, not a.no_verify_crc) | {"file": self.name(seg.path)}))
            return
        self._header(seg, log)
        flags = ",".join(x for x, on in (("txn", b.is_transactional), ("control", b.is_control)) if on)
        when = f"{iso(b.max_timestamp) or b.max_timestamp} {TS_TYPES.get(b.timestamp_type, '?')}"
        seq = f"{b.base_sequence}-{sequence_at(b, b.last_offset)}" if b.base_sequence >= 0 else "-1"
        out.write(f"{pos:>10} {b.base_offset:>10} {b.last_offset:>10} {len(b.records):>6} {b.magic:>5} {b.codec:6} "
                  f"{when:<38} {b.crc!s:>10}  {b.producer_id}/{b.producer_epoch}/{seq}  {flags}\n")  # fmt: skip

    def _header(self, seg, log: Log) -> None:
        if seg is self.header_for:
            return
        what = (f"KRaft snapshot: end offset {log.snapshot[0]}, epoch {log.snapshot[1]}" if log.snapshot and
                log.snapshot[0] >= 0 else "KRaft bootstrap snapshot" if log.snapshot else
                f"topic {seg.topic}, partition {seg.partition}")  # fmt: skip
        self.out.write(f"# {self.name(seg.path)} ({what})\n")
        self.out.write(f"{'position':>10} {'base':>10} {'last':>10} {'count':>6} magic {'codec':6} "
                       f"{'max timestamp':<38} {'crc':>10}  producer (id/epoch/seq)  flags\n")  # fmt: skip
        self.header_for = seg

    def _decoded(self, seg, pos, r, log: Log):
        """A record of Kafka's own topics (or a KRaft snapshot) decoded by its schemas: None for the user's own
        topics, control records and ``--payload raw``; a payload that does not decode is a problem."""
        kind = "kraft-snapshot" if log.snapshot else seg.topic
        if self.args.payload == "raw" or (not r.control and binding(kind) is None):
            return None
        try:
            if r.control:
                value = decode_control(r.control[1], r.value)
                p = Payload(None, value) if value is not None else None
            else:
                p = decode_payload(kind, r.key, r.value)
            for why in p.problems if p else ():  # decoded, but not all of it: what was kept undecoded, and why
                self.problem(seg.path, "payload", f"offset {r.offset}: {kind} record: {why}", pos, offset=r.offset)
            return p
        except CodecError as e:
            self.problem(seg.path, "payload", f"offset {r.offset}: {kind} record does not decode: {e} (shown raw)", pos,
                         offset=r.offset)  # fmt: skip
            return None

    def _record(self, seg, pos, b, r, log: Log) -> None:
        a, out, how = self.args, self.out, self.args.payload
        if a.payload_only:
            out.write(_bare(r.value, how) + "\n")
        elif a.template:
            out.write(template_line(a.template, seg, b, r, how))
        elif a.json:
            obj = record_dict(seg, pos, b, r, how) | {"file": self.name(seg.path)}
            p = self._decoded(seg, pos, r, log)
            if p is not None:
                obj |= {"key_decoded": p.key.to_json() if p.key else None,
                        "value_decoded": p.value.to_json() if p.value else None}  # fmt: skip
            out.write(jsonl.line(obj))
        else:
            self._header(seg, log)
            ctl = control_text(r)
            meta = f"offset {r.offset} {iso(r.timestamp) or r.timestamp}"
            if ctl:
                p = self._decoded(seg, pos, r, log)
                out.write(f"{'':>10}   {meta}  {ctl}{'  ' + decoded_text(p.value) if p else ''}\n")
                return
            sizes = f"keySize {_size(r.key)} valueSize {_size(r.value)} sequence {sequence_at(b, r.offset)}"
            hs = " ".join(
                f"{shown(_key_bytes(k), 'utf8') if isinstance(k, str) else k}={shown(v, how)}" for k, v in r.headers
            )
            p = self._decoded(seg, pos, r, log)
            key = shown(r.key, how) if p is None or (p.key is None and r.key is not None) else decoded_text(p.key)
            value = shown(r.value, how) if p is None else decoded_text(p.value)
            out.write(f"{'':>10}   {meta}  {sizes}  key {key} value {value}"
                      f"{'  headers ' + hs if hs else ''}\n")  # fmt: skip

    def _check_indexes(self, seg: Segment, facts, stop: int | None, damaged: set[int]) -> None:
        stem = Path(seg.path).with_suffix("")
        for suffix, check in ((".index", check_offset_index), (".timeindex", check_time_index)):
            p = Path(f"{stem}{suffix}")
            if not p.is_file():
                continue
            self.checked["index files"] += 1
            _, problems = READERS[suffix[1:]](p)
            for msg in problems + check(p, facts, stop, damaged):
                self.counts["index_mismatch", str(p.parent)] += 1
                self.problem(p, "index", msg)

    # ---- other files
    def other(self, path: Path, kind: str, show: bool = True):
        """Read, check and (``show``) print a file other than a segment; returns its entries (None: unreadable)."""
        try:
            if kind in ("index", "timeindex") and _looks_like_segment(path):
                self.problem(path, kind, "holds log entries (a valid batch at byte 0), not index entries: a segment "
                             "under an index's name?")  # fmt: skip
                return None
            entries, problems = READERS[kind](path)
        except OSError as e:
            self.problem(path, "unreadable", f"cannot read: {e.strerror or e}")
            return None
        if show and not self.args.summary:
            self._entries(path, kind, entries)
        self.counts["files", kind] += 1
        for msg in problems:
            self.problem(path, kind, msg)
        if kind in ("index", "timeindex"):  # beside its segment: check it against the log too
            log = path.with_suffix(".log")
            if log.is_file():
                facts = _facts_of(log, self.args)
                check = check_offset_index if kind == "index" else check_time_index
                for msg in check(path, facts):
                    self.problem(path, "index", msg)
        return entries

    def _entries(self, path: Path, kind: str, entries) -> None:
        if self.args.json:
            for entry in entries:
                obj = entry if isinstance(entry, dict) else dict(zip(_ENTRY_NAMES[kind], entry))
                self.out.write(jsonl.line({"type": kind, "file": str(path)} | obj))
            return
        self.out.write(f"# {path} ({kind.replace('_', ' ')}, {len(entries)} entries)\n")
        for entry in entries:
            obj = entry if isinstance(entry, dict) else dict(zip(_ENTRY_NAMES[kind], entry))
            self.out.write("  " + " ".join(f"{k} {v}" for k, v in obj.items()) + "\n")

    def log_dir_files(self, files: list[tuple[Path, str]]) -> None:
        """The log dir's own files (offset checkpoints, meta.properties, quorum-state), checked against the
        partitions read; then the topic ids of each log dir's partition.metadata files across partitions."""
        for path, kind in files:
            entries = self.other(path, kind, show=False)
            if kind != "offset_checkpoint" or entries is None:
                continue
            root = str(path.parent)
            ends = {(t, p): e for (r, t, p), e in self.ends.items() if r == root}
            problems, notes = offset_checkpoint_problems(path.name, entries, ends)
            for msg in problems:
                self.problem(path, "offset_checkpoint", msg)
            for msg in notes if self.args.verbose else ():
                self.note(path, msg)
        for root, ids in sorted(self.topic_ids.items()):
            for msg in topic_id_problems(ids):
                self.problem(root, "topic_id", msg)
