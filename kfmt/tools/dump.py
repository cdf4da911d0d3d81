"""`kfmt dump`: read segment files, partition folders or whole log directories, any magic, and every other
file of a log directory (indexes, producer snapshots, checkpoints), saying what is wrong and where.

Exit status: 0 only when everything read was valid; 1 when a problem was found (a corrupt batch, bytes
that hold no entry, offsets that go backwards, an index that does not match its segment, a damaged
index, snapshot or checkpoint); 2 for a usage error.  A corrupt batch ends its segment (``--skip-corrupt``
goes on with the next batch) and the dump goes on with the next segment.
"""

from __future__ import annotations

import base64
import bisect
import datetime as _dt
import json
import re
import struct
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from kfmt.log.batches import scan
from kfmt.log.scanner import batch_being_written
from kfmt.log.txn import CONTROL_TYPES
from kfmt.logdir.checks import epoch_problems, epoch_runs_add, offset_checkpoint_problems, topic_id_problems
from kfmt.logdir.files import OFFSET_CHECKPOINTS, READERS, kind_of, not_read, snapshot_id
from kfmt.logdir.layout import SUFFIXES, Segment, find_segments, suffixes_opt, topic_partition, walk_folder
from kfmt.payloads import Payload, binding, decode_control, decode_payload
from kfmt.runtime.errors import CodecError
from kfmt.tools.args import non_negative_int, offset_range, positive_int, time_range

#: problems of one kind in one file printed before the rest are only counted (a segment renamed .index would
#: otherwise print one line per 8 bytes)
MAX_REPEATS = 20


# ------------------------------------------------------------------ rendering
def payload(b, how: str):
    """A key, value or header value for JSON: text as a string, anything else as ``{"hex": ...}``
    (``--payload hex/base64``: always encoded), so bytes are never confused with text."""
    if b is None:
        return None
    if how == "hex":
        return b.hex()
    if how == "base64":
        return base64.b64encode(b).decode("ascii")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def _key_bytes(k: str) -> bytes:
    """A header key's bytes as written (kfmt keeps bytes that are not UTF-8 as surrogate escapes)."""
    return k.encode("utf-8", "surrogateescape")


def header_key(k: str, how: str):
    """A header key for JSON: its text; a key that is not UTF-8 as ``{"hex": ..., "kafka": ...}``, its bytes and
    the text Kafka's Java consumer reads (each ill-formed sequence a U+FFFD, by Java's decoder's rules)."""
    if not isinstance(k, str):  # a proposal's integer header key
        return k
    raw = _key_bytes(k)
    got = payload(raw, "utf8")
    if isinstance(got, dict):
        from kfmt.runtime.text import java_utf8

        got["kafka"] = java_utf8(raw)
    return got


def shown(b, how: str) -> str:
    """A key, value or header value for the table: quoted text, ``0x...`` for bytes that are not UTF-8."""
    if b is None:
        return "null"
    if how == "hex":
        return "0x" + b.hex()
    if how == "base64":
        return "base64:" + base64.b64encode(b).decode("ascii")
    try:
        return json.dumps(b.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return "0x" + b.hex()


TS_TYPES = {0: "CreateTime", 1: "LogAppendTime", None: "NoTimestampType"}


def iso(ts) -> str | None:
    if ts is None or ts < 0:
        return None
    try:
        return _dt.datetime.fromtimestamp(ts / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z"
    except (OverflowError, OSError, ValueError):
        return None


def control_text(r) -> str | None:
    """``COMMIT coordinatorEpoch 5``, ``LEADER_CHANGE``... for a control record, else None."""
    if not r.control:
        return None
    version, kind = r.control
    name = CONTROL_TYPES.get(kind, f"UNKNOWN({kind})")
    if kind in (0, 1) and r.value is not None and len(r.value) >= 6:
        _, epoch = struct.unpack_from(">hi", r.value)
        return f"{name} coordinatorEpoch {epoch}"
    return name


def sequence_at(b, offset: int) -> int:
    """The producer sequence of the record at ``offset`` (-1 without one), wrapping at Int32.MAX_VALUE as
    Kafka's DefaultRecordBatch.incrementSequence does."""
    if b.base_sequence < 0:
        return -1
    return (b.base_sequence + offset - b.base_offset) % 0x80000000


def delete_horizon(b) -> int | None:
    """A compacted v2 batch's deleteHorizonMs (its base timestamp when attribute bit 6 is set), else None."""
    return b.base_timestamp if getattr(b, "has_delete_horizon", False) else None


def batch_dict(seg, pos, end, b, verified: bool = True) -> dict:
    return {
        "type": "batch", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "size": end - pos, "magic": b.magic, "base_offset": b.base_offset, "last_offset": b.last_offset,
        "count": len(b.records), "codec": b.codec, "timestamp_type": b.timestamp_type,
        "base_timestamp": b.base_timestamp, "max_timestamp": b.max_timestamp, "max_time": iso(b.max_timestamp),
        "crc": b.crc, "is_valid": True if verified else None, "partition_leader_epoch": b.partition_leader_epoch,
        "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
        "last_sequence": sequence_at(b, b.last_offset), "is_transactional": b.is_transactional,
        "is_control": b.is_control, "delete_horizon_ms": delete_horizon(b),
    }  # fmt: skip


def record_dict(seg, pos, b, r, how: str) -> dict:
    return {
        "type": "record", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "magic": b.magic, "batch_base_offset": b.base_offset, "offset": r.offset, "timestamp": r.timestamp,
        "time": iso(r.timestamp), "timestamp_type": b.timestamp_type, "sequence": sequence_at(b, r.offset),
        "key_size": _size(r.key), "value_size": _size(r.value), "key": payload(r.key, how),
        "value": payload(r.value, how), "headers": [[header_key(k, how), payload(v, how)] for k, v in r.headers],
        "control": list(r.control) if r.control else None, "control_type": control_text(r),
    }  # fmt: skip


def decoded_text(d) -> str:
    """A decoded key or value in the table: ``OffsetCommitKey v1 {group: "g", topic: "t", partition: 0}``."""
    if d is None:
        return "null"
    return f"{d.type} v{d.version} {_compact(d.to_json()['data'])}"


def _compact(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_compact(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_compact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def _size(b) -> int:
    """A key's or value's size as Kafka prints it: -1 for null."""
    return -1 if b is None else len(b)


def template_line(template: str, seg, b, r, how: str) -> str:
    """A record through a kcat-style template: %t topic, %p partition, %o offset, %k key, %s value, %K key size,
    %S value size, %T timestamp (ms), %h headers (k=v,...), %%; backslash escapes \\n \\t."""
    parts = {"t": seg.topic, "p": str(seg.partition), "o": str(r.offset), "k": _bare(r.key, how),
             "s": _bare(r.value, how), "K": str(_size(r.key)), "S": str(_size(r.value)), "T": str(r.timestamp),
             "h": ",".join(f"{_bare(_key_bytes(k), how) if isinstance(k, str) else k}={_bare(v, how)}" for k, v in r.headers), "%": "%"}  # fmt: skip
    return TEMPLATE_TOKEN.sub(lambda m: parts.get(m.group(1), m.group(0)), template)


def _bare(b, how: str) -> str:
    """A key or value in a template or payload-only line: the text itself (no quotes), else as ``shown``."""
    if b is not None and how in ("utf8", "raw"):
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return "" if b is None else shown(b, how)


def template_text(text: str) -> str:
    """A template as typed on a command line: ``\\n`` and ``\\t`` become a newline and a tab."""
    return text.replace("\\n", "\n").replace("\\t", "\t")


TEMPLATE_TOKEN = re.compile(r"%(.)")


# ------------------------------------------------------------------ options
@dataclass
class Filters:
    offsets: tuple[int | None, int | None] = (None, None)
    times: tuple[int | None, int | None] = (None, None)
    topic: str | None = None
    partition: int | None = None
    max_bytes: int | None = None

    def wants_segment(self, seg) -> bool:
        return (self.topic is None or seg.topic == self.topic) and (
            self.partition is None or seg.partition == self.partition
        )

    def relative(self) -> bool:
        """Whether an offset bound counts from the end of each log (``--offsets -5:``, as kcat's ``-o -5``)."""
        return any(o is not None and o < 0 for o in self.offsets)

    def from_end(self, end: int) -> Filters:
        """These filters for a log whose next offset is ``end``: negative offset bounds become ``end + bound``."""
        lo, hi = (o if o is None or o >= 0 else max(0, end + o) for o in self.offsets)
        return replace(self, offsets=(lo, hi))

    def wants_batch(self, b) -> bool:
        lo, hi = self.offsets
        if (lo is not None and b.last_offset < lo) or (hi is not None and b.base_offset > hi):
            return False
        tlo, thi = self.times
        return not ((tlo is not None and b.max_timestamp < tlo) or (thi is not None and b.base_timestamp > thi))

    def wants_record(self, r) -> bool:
        lo, hi = self.offsets
        tlo, thi = self.times
        return (
            (lo is None or r.offset >= lo)
            and (hi is None or r.offset <= hi)
            and (tlo is None or r.timestamp >= tlo)
            and (thi is None or r.timestamp <= thi)
        )


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
            self.out.write(json.dumps(obj | extra) + "\n")

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
                    self.out.write(json.dumps(obj) + "\n")

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
        for r in b.records:
            if filt.wants_record(r):
                self._record(seg, pos, b, r, log)
                self._shown()

    def _batch(self, seg, pos, end, b, log: Log) -> None:
        a, out = self.args, self.out
        if a.json:
            out.write(json.dumps(batch_dict(seg, pos, end, b, not a.no_verify_crc) | {"file": self.name(seg.path)}))
            out.write("\n")
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
            out.write(json.dumps(obj) + "\n")
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
                self.out.write(json.dumps({"type": kind, "file": str(path)} | obj) + "\n")
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


def _looks_like_segment(path: Path) -> bool:
    from kfmt.log.resync import valid_entry_at

    with open(path, "rb") as f:
        head = f.read(1 << 16)
    return valid_entry_at(head, 0, len(head))


_ENTRY_NAMES = {"index": ("offset", "position"), "timeindex": ("timestamp", "offset")}


def _new_facts():
    """What index checks need of a segment's batches, compactly: positions, base and last offsets, max
    timestamps (four int64 arrays, in file order)."""
    return (array("q"), array("q"), array("q"), array("q"))


def _add_fact(facts, pos: int, b) -> None:
    for arr, v in zip(facts, (pos, b.base_offset, b.last_offset, b.max_timestamp)):
        arr.append(v)


def _facts_of(log: Path, args):
    facts = _new_facts()
    for pos, _end, b in scan(log, verify_crc=False, skip_corrupt=True, format=args.format):
        if not isinstance(b, CodecError):
            _add_fact(facts, pos, b)
    return facts


def check_offset_index(path: Path, facts, stop: int | None = None, damaged=frozenset()) -> list[str]:
    """Each ``.index`` entry ``(offset, position)``: a batch starts at ``position`` (the start of an append),
    and ``offset`` (the append's largest offset) is in that batch or one after it.  Entries from ``stop`` on
    (where reading stopped early) are not judged.  Linear in entries (a binary search each)."""
    positions, bases, lasts, _ = facts
    entries, _ = READERS["index"](path)
    problems = []
    for off, pos in entries:
        if stop is not None and pos >= stop:
            break
        if pos in damaged:
            continue  # points at a corrupt batch (reported already): its offsets are unknown
        i = bisect.bisect_left(positions, pos)
        if i == len(positions) or positions[i] != pos:
            problems.append(f"entry offset {off} -> position {pos}: no batch starts there")
            continue
        j = bisect.bisect_left(lasts, off, lo=i)  # first batch from there whose last offset reaches off
        if bases[i] > off or j == len(lasts) or bases[j] > off:
            problems.append(f"entry offset {off} -> position {pos}: offset not found from that position on "
                            f"(batch there holds {bases[i]}-{lasts[i]})")  # fmt: skip
    return problems


def check_time_index(path: Path, facts, stop: int | None = None, damaged=frozenset()) -> list[str]:
    """Each ``.timeindex`` entry ``(timestamp, offset)`` as Kafka's dump tool checks it: a batch holds ``offset``
    (the batch that had the largest timestamp so far when the entry was written) and that batch's largest
    timestamp is ``timestamp`` ("timestamp mismatch" otherwise); timestamps increase from entry to entry.
    When reading stopped early (``stop``), entries past the last batch read are not judged."""
    _, bases, lasts, max_ts = facts
    entries, _ = READERS["timeindex"](path)
    problems = []
    prev = None
    for ts, off in entries:
        if stop is not None and (not lasts or off > lasts[-1]):
            break
        if prev is not None and ts <= prev:
            problems.append(f"entry ({ts}, offset {off}): timestamp not above the entry before it ({prev})")
        prev = ts
        j = bisect.bisect_left(lasts, off)
        if j == len(lasts) or bases[j] > off:
            if not damaged:  # else the offset may be in a corrupt batch (reported already)
                problems.append(f"entry ({ts}, offset {off}): no batch holds that offset")
        elif max_ts[j] != ts:
            problems.append(f"entry ({ts}, offset {off}): timestamp mismatch: the batch holding offset {off} "
                            f"({bases[j]}-{lasts[j]}) has max timestamp {max_ts[j]}")  # fmt: skip
    return problems


def _progress(logs):
    segments = [s for log in logs for s in log.segments]
    if not sys.stderr.isatty() or len(segments) < 2:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is an optional extra
        return None
    return tqdm(total=sum(s.size for s in segments), unit="B", unit_scale=True, file=sys.stderr, desc="dump")


# ------------------------------------------------------------------ what to read
@dataclass
class Log:
    """One log read and checked on its own: a partition folder's segments (two replicas of a partition are
    two logs), a file given alone, or a KRaft snapshot (``snapshot``: end offset and epoch, -1 for bootstrap)."""

    folder: str
    segments: list
    snapshot: tuple[int, int] | None = None
    epochs: bool | None = True  # None: the folder's own files are not checked (a file given alone)

    @property
    def label(self) -> str:
        """How summaries name the log: its folder, or the snapshot file."""
        return self.segments[0].path if self.snapshot else self.folder

    @property
    def root(self) -> str:
        """The log dir holding the partition folder."""
        return str(Path(self.folder).parent)


@dataclass
class Targets:
    logs: list = field(default_factory=list)
    files: list = field(default_factory=list)  # (path, kind): given alone, printed
    log_dir_files: list = field(default_factory=list)  # (path, kind): found in a log dir, checked
    notes: list = field(default_factory=list)  # (path, note): left out, said
    stdin: Any = None  # the spool file holding stdin (``-``)


def _walk(p: Path, t: Targets, include) -> list[Segment]:
    """A folder given: its segments (suffixed folders left out, each noted), its KRaft snapshots, and every
    other file of it and of its partition folders, each checked or named as skipped."""
    left: list = []
    segs, folders = walk_folder(p, include, left)
    for folder, suffix in left:
        t.notes.append((folder, f"left out: {SUFFIXES[suffix]}; give the folder itself (or --include-suffixed "
                        f"{suffix}) to read it"))  # fmt: skip
    for d in folders:
        for f in sorted(x for x in d.iterdir() if x.is_file()):
            _classify(f, t)
    return segs


def _classify(f: Path, t: Targets) -> None:
    """One file found in a folder walk: a snapshot becomes a log; a broker file is checked; anything else is
    named as skipped (Kafka's dump tool prints "Ignoring unknown file")."""
    kind = kind_of(f)
    if kind == "log" and f.suffix == ".log":
        return  # a segment: found already
    snap = snapshot_id(f)
    if snap is not None:
        topic, part = topic_partition(f.parent)
        t.logs.append(Log(str(f.parent), [Segment(topic, part, 0, str(f), f.stat().st_size)], snap, None))
    elif kind in ("index", "timeindex") and f.with_suffix(".log").is_file():
        return  # checked with its segment
    elif kind in ("leader_epoch_checkpoint", "partition_metadata") and any(f.parent.glob("*.log")):
        return  # checked with its partition's log
    elif kind is not None:
        t.log_dir_files.append((f, kind))
    else:
        why = not_read(f)
        t.notes.append((str(f), f"skipped: {why or 'not a Kafka log file'}"))


def _given_file(p: Path, t: Targets, err) -> list[Segment] | None:
    kind = kind_of(p)
    if kind is None:
        print(f"kfmt dump: {p}: not a Kafka log file (.log, .index, .timeindex, .txnindex, .snapshot, "
              "*.checkpoint, leader-epoch-checkpoint, partition.metadata, meta.properties, quorum-state, "
              f"{', '.join(sorted(OFFSET_CHECKPOINTS))})", file=err)  # fmt: skip
        return None
    snap = snapshot_id(p)
    if snap is not None:
        topic, part = topic_partition(p.parent)
        t.logs.append(Log(str(p.parent), [Segment(topic, part, 0, str(p), p.stat().st_size)], snap, None))
        return []
    if kind == "log":
        return find_segments(p)
    t.files.append((p, kind))
    return []


def _stdin(t: Targets) -> list[Segment]:
    """``-``: stdin, spooled to a temporary file (indexes and offsets need to read it more than once)."""
    import shutil
    import tempfile

    f = tempfile.NamedTemporaryFile(prefix="kfmt-stdin-", suffix=".log")  # noqa: SIM115 - closed by run
    shutil.copyfileobj(sys.stdin.buffer, f)
    f.flush()
    t.stdin = f
    return [Segment("-", -1, 0, f.name, f.tell())]


def _targets(paths, err, include=()) -> Targets | None:
    """The logs (one per partition folder, file given alone, or snapshot) and other files to dump, or None
    after a usage error."""
    t = Targets()
    segs: list[Segment] = []
    walked: set[str] = set()  # partition folders found in a folder walk: their own files are checked too
    for raw in paths:
        p = Path(raw)
        if raw == "-":
            segs += _stdin(t)
        elif p.is_dir():
            found = _walk(p, t, include)
            walked |= {str(Path(s.path).parent) for s in found}
            segs += found
        elif not p.exists():
            print(f"kfmt dump: no such file or directory: {p}", file=err)
            return None
        else:
            got = _given_file(p, t, err)
            if got is None:
                return None
            segs += got
    from kfmt.table.commit import check_tables

    check_tables([s.path for s in segs if t.stdin is None or s.path != t.stdin.name])  # a commit under way: refused
    folders: dict = {}
    for s in sorted(set(segs)):
        folders.setdefault(
            "-" if t.stdin is not None and s.path == t.stdin.name else str(Path(s.path).parent), []
        ).append(s)
    for folder, group in folders.items():
        t.logs.append(Log(folder, group, None, True if folder in walked else None))
    t.logs.sort(key=lambda log: (log.segments[0].topic, log.segments[0].partition, log.folder, log.label))
    return t


def run(args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        return _run(args, out, err)
    except BrokenPipeError:
        # the reader closed the pipe (``| head``): stop quietly, as Unix tools do, with SIGPIPE's status
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(args, out, err) -> int:
    try:
        args.filters = Filters(
            offsets=args.offsets or (None, None),
            times=args.time or (None, None),
            topic=args.topic,
            partition=args.partition,
            max_bytes=args.max_bytes,
        )
        include = suffixes_opt(args.include_suffixed)
        args.template = template_text(args.template) if args.template else None
        if args.format:
            from kfmt.codec.formats import get_format

            get_format(args.format)
    except (ValueError, CodecError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    if args.compare:
        from kfmt.tools.compare import compare

        return compare(args, out, err)
    from kfmt.table.commit import CommitError

    try:
        found = _targets(args.paths, err, include)
    except CommitError as e:
        print(f"kfmt dump: {e}", file=err)
        return 1
    except (OSError, ValueError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    if found is None:
        return 2
    try:
        return _dump(args, found, out, err)
    finally:
        if found.stdin is not None:
            found.stdin.close()


def _dump(args, t: Targets, out, err) -> int:
    d = Dump(args, out, err)
    if t.stdin is not None:
        d.names[t.stdin.name] = "-"
    for path, msg in t.notes:
        d.note(path, msg)
    if not t.logs and not t.files and not t.log_dir_files:
        print("kfmt dump: no Kafka log file found", file=err)
        return 2
    logs = [log for log in t.logs if args.filters.wants_segment(log.segments[0])]
    if t.logs and not logs:
        have = sorted({f"{log.segments[0].topic}-{log.segments[0].partition}" for log in t.logs})
        print(f"kfmt dump: no log matches --topic/--partition; found: {', '.join(have)}", file=err)
        return 2
    bar = _progress(logs)
    try:
        for log in logs:
            d.log(log)
            if bar:
                bar.update(sum(s.size for s in log.segments))
    except CountReached:
        print(f"kfmt dump: stopped after --count {args.count}: the rest was not read or checked", file=err)
    if bar:
        bar.close()
    for path, kind in t.files:
        d.other(path, kind)
    if args.count is None or d.shown_items < args.count:
        d.log_dir_files(t.log_dir_files)
    d.repeated()
    if args.summary:
        _print_summary(d.counts, out, args.json)
    if d.problems:
        kinds = ", ".join(f"{k} {n}" for (g, k), n in sorted(d.counts.items()) if g == "problems")
        print(f"kfmt dump: {d.problems} problem(s) found: {kinds}", file=err)
    return 1 if d.problems else 0


def _print_summary(counts: Counter, out, as_json: bool) -> None:
    groups: dict[str, dict] = {}
    for (kind, key), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        groups.setdefault(kind, {})[str(key)] = n
    if as_json:
        out.write(json.dumps(groups) + "\n")
        return
    labels = {"batches": "batches per log", "records": "records per log", "bytes": "bytes per log",
              "magic": "batches per magic", "codec": "batches per codec", "offset_gaps": "offset gaps per log",
              "aborted_records": "aborted records left out per log", "problems": "problems",
              "index_mismatch": "index problems per folder"}  # fmt: skip
    for kind in ("magic", "codec", "batches", "records", "bytes", "aborted_records", "offset_gaps", "files",
                 "problems"):  # fmt: skip
        if kind in groups:
            out.write(f"{labels.get(kind, kind)}:\n")
            for k, n in groups[kind].items():
                out.write(f"  {k:30} {n}\n")


def add_parser(sub) -> None:
    d = sub.add_parser(
        "dump",
        help="print and check segments, partition folders, log directories, indexes, snapshots and checkpoints",
        description="Read Kafka log segments of any magic (v0, v1, v2, mixed), verify CRCs and offset order, check "
        ".index/.timeindex against their segments (as kafka-dump-log does, timestamp mismatches included); files "
        "are read by their name (.log, .index, .timeindex, .txnindex, .snapshot, KRaft snapshots "
        "<offset>-<epoch>.checkpoint, leader-epoch-checkpoint, partition.metadata, meta.properties, quorum-state, "
        "and the broker's offset checkpoints; text files by the rules of the Java class that loads them, so an "
        "empty checkpoint, as brokers create them, is an empty one). A folder is walked at any depth (a log dir, "
        "a broker's JBOD log.dirs, copies of several brokers' dirs): each partition folder is its own log (two "
        "replicas of a partition are two logs), checked with its leader-epoch-checkpoint and partition.metadata; "
        "the log dir's checkpoints are checked against the partitions' ends; folders Kafka marked -delete, "
        "-future or -stray are left out (noted); files not read are named. Tiered-storage layouts "
        "(<topic>-<topicId>/<partition>/<offset>-<segmentId>.log, <topic>-<partition>-<topicId>/...) are walked; "
        "a segment object stored compressed whole is reported. A log's last batch cut short at the end of its last "
        "segment is a batch being written: noted and left out, as Kafka's fetch leaves it out, not a problem. A "
        "table whose kfmt commit has not finished (_KFMT_PENDING) is refused in one line (exit 1; see kfmt "
        "recover). PATH - reads stdin. Segments are read in chunks: "
        "memory does not grow with segment size. Exit status: 0 everything read was valid, 1 problems found "
        '(each reported on stderr, and in the --json stream as a "problem" object), 2 usage error, 141 the '
        "output pipe was closed (| head).",
    )
    d.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a file, a topic-partition folder, a log directory, a folder of log directories, or -",
    )
    d.add_argument(
        "--json", action="store_true", help="one JSON object per line (per batch, or per record with --records)"
    )
    d.add_argument("--records", action="store_true", help="show every record (with key/value sizes and sequence)")
    d.add_argument(
        "--template",
        metavar="FMT",
        help="print each record through a kcat-style template: %%t topic, %%p partition, %%o offset, %%k key, "
        "%%s value, %%K key size, %%S value size, %%T timestamp, %%h headers, \\n newline (e.g. '%%o %%k %%s\\n')",
    )
    d.add_argument("--payload-only", action="store_true", help="print only each record's value, one per line")
    d.add_argument(
        "--payload",
        choices=("utf8", "hex", "base64", "raw"),
        default="utf8",
        help='keys/values: utf8 shows text quoted and other bytes as 0x... (JSON: {"hex": ...}); or always hex/base64. '
        "Records of Kafka's own topics (__consumer_offsets, __cluster_metadata and KRaft snapshots, __transaction_state, "
        '__share_group_state, __remote_log_metadata) are also shown decoded (JSON: "key_decoded", "value_decoded", '
        "key and value kept raw); one that does not decode is a problem and shown raw; raw: no decoding",
    )
    d.add_argument("--skip-corrupt", action="store_true", help="report a corrupt batch and go on with the next one")
    d.add_argument("--summary", action="store_true", help="only counts per magic, codec and log")
    d.add_argument("--no-verify-crc", action="store_true", help="do not check CRCs")
    d.add_argument("--no-index", action="store_true", help="do not check .index / .timeindex files")
    d.add_argument("--format", help="read every entry as this format (proposals are never auto-detected)")
    d.add_argument(
        "--offsets",
        type=offset_range,
        metavar="FROM:TO",
        help="show only these offsets (inclusive; either end may be empty; a negative end counts from each log's "
        "end, as kcat's -o -5: --offsets -5: is the last five offsets)",
    )
    d.add_argument(
        "--time",
        type=time_range,
        metavar="FROM..TO",
        help="show only these timestamps (inclusive; ms or ISO 8601, e.g. 2026-01-30T17:00:00Z..; FROM:TO also "
        "works where neither end holds a colon)",
    )
    d.add_argument("--count", type=positive_int, metavar="N", help="stop after showing N records (or batches)")
    d.add_argument("--topic", help="only this topic")
    d.add_argument("--partition", type=non_negative_int, help="only this partition")
    d.add_argument("--max-bytes", type=positive_int, metavar="N", help="read at most N bytes of each segment")
    d.add_argument(
        "--isolation",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed leaves out records of aborted (and still open) transactions, as a consumer does",
    )
    d.add_argument(
        "--include-suffixed",
        metavar="SUFFIXES",
        default="",
        help="also read folders Kafka marked with these suffixes in a folder walk (future,delete,stray)",
    )
    d.add_argument(
        "--compare",
        action="store_true",
        help="compare two copies of a partition (two replicas' folders): the first offset where they diverge",
    )
    d.add_argument("--verbose", action="store_true", help="also note each non-consecutive offset")
    d.set_defaults(func=run)
