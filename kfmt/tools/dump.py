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
import struct
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kfmt.api import scan
from kfmt.logdir import Segment, find_segments
from kfmt.logfiles import READERS, kind_of
from kfmt.runtime.errors import CodecError
from kfmt.tools.args import non_negative_int, offset_range, positive_int, time_range
from kfmt.txn import CONTROL_TYPES


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


def batch_dict(seg, pos, end, b) -> dict:
    return {
        "type": "batch", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "size": end - pos, "magic": b.magic, "base_offset": b.base_offset, "last_offset": b.last_offset,
        "count": len(b.records), "codec": b.codec, "timestamp_type": b.timestamp_type,
        "base_timestamp": b.base_timestamp, "max_timestamp": b.max_timestamp, "max_time": iso(b.max_timestamp),
        "crc": b.crc, "partition_leader_epoch": b.partition_leader_epoch, "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
        "is_transactional": b.is_transactional, "is_control": b.is_control,
    }  # fmt: skip


def record_dict(seg, pos, b, r, how: str) -> dict:
    return {
        "type": "record", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "magic": b.magic, "batch_base_offset": b.base_offset, "offset": r.offset, "timestamp": r.timestamp,
        "time": iso(r.timestamp), "timestamp_type": b.timestamp_type, "key": payload(r.key, how),
        "value": payload(r.value, how), "headers": [[k, payload(v, how)] for k, v in r.headers],
        "control": list(r.control) if r.control else None, "control_type": control_text(r),
    }  # fmt: skip


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


# ------------------------------------------------------------------ the dump
@dataclass
class Dump:
    args: Any  # the parsed command line (argparse.Namespace)
    out: TextIO
    err: TextIO
    problems: int = 0
    counts: Counter = field(default_factory=Counter)
    header_for: Any = None

    def problem(self, path, kind: str, message: str, position: int | None = None, **extra) -> None:
        """Report one problem: on stderr, and as an object in the --json stream."""
        self.problems += 1
        self.counts["problems", kind] += 1
        where = f" at byte {position}" if position is not None else ""
        print(f"kfmt dump: {path}{where}: {message}", file=self.err)
        if self.args.json and not self.args.summary:
            obj = {"type": "problem", "kind": kind, "file": str(path), "position": position, "message": message}
            self.out.write(json.dumps(obj | extra) + "\n")

    def note(self, path, message: str) -> None:
        print(f"kfmt dump: {path}: note: {message}", file=self.err)

    # ---- segments
    def partition(self, segs: list[Segment]) -> None:
        """A topic-partition's segments in offset order: offsets must increase across them too."""
        txns = None
        if self.args.isolation == "read_committed":
            from kfmt.txn import transactions_of_files

            txns = transactions_of_files([s.path for s in segs], format=self.args.format)
        last = None
        for seg in segs:
            last = self.segment(seg, last, txns)

    def segment(self, seg: Segment, prev_last: int | None, txns) -> int | None:
        a = self.args
        filt: Filters = a.filters
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
                    if b.unread is not None:  # a damaged region (broken framing, zero fill, a tail)
                        msg = str(b) if "not read" in str(b) or b.zero_filled else f"{b}; {end - pos} byte(s) not read"
                        kind = "zero_fill" if b.zero_filled else "unread_bytes"
                        self.problem(seg.path, kind, msg, pos, bytes=end - pos)
                        damaged.add(pos)
                        if end < seg.size and not a.skip_corrupt:
                            stop = pos
                            self.problem(seg.path, "unread_bytes", f"{seg.size - end} byte(s) after it not read "
                                         "(--skip-corrupt goes on with the next valid batch)", end,
                                         bytes=seg.size - end)  # fmt: skip
                            break
                        continue
                    self.problem(seg.path, "corrupt_batch", f"corrupt batch of {end - pos} bytes: {b}", pos,
                                 bytes=end - pos)  # fmt: skip
                    damaged.add(pos)
                    if not a.skip_corrupt:
                        stop = pos
                        rest = seg.size - end
                        if rest:
                            self.problem(seg.path, "unread_bytes", f"{rest} byte(s) after the corrupt batch not read "
                                         "(--skip-corrupt goes on with the next batch)", end, bytes=rest)  # fmt: skip
                        break
                    continue
                last = self._offsets(seg, pos, b, last)
                _add_fact(facts, pos, b)
                self.counts["magic", b.magic] += 1
                self.counts["codec", b.codec] += 1
                self.counts["topic", seg.topic] += 1
                self.counts["records", seg.topic] += len(b.records)
                self.counts["bytes", seg.topic] += end - pos
                if txns is not None and txns.is_dropped(b):
                    self.counts["aborted_records", seg.topic] += len(b.records)
                    continue
                if not a.summary and filt.wants_batch(b):
                    self._show(seg, pos, end, b)
        except OSError as e:
            self.problem(seg.path, "unreadable", f"cannot read: {e.strerror or e}")
            return last
        if not a.no_index:
            self._check_indexes(seg, facts, stop, damaged)
        return last

    def _offsets(self, seg, pos, b, last):
        if b.base_offset > b.last_offset:
            self.problem(seg.path, "offset_order", f"batch base offset {b.base_offset} is above its last offset "
                         f"{b.last_offset}", pos)  # fmt: skip
        if last is not None:
            if b.base_offset <= last:
                self.problem(seg.path, "offset_order", f"offsets go backwards: batch at offset {b.base_offset} "
                             f"follows offset {last}", pos)  # fmt: skip
            elif b.base_offset > last + 1:
                self.counts["offset_gaps", seg.topic] += 1  # compaction and aborted-data removal leave gaps
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

    def _show(self, seg, pos, end, b) -> None:
        a, out, how, filt = self.args, self.out, self.args.payload, self.args.filters
        if a.json:
            if a.records:
                for r in b.records:
                    if filt.wants_record(r):
                        out.write(json.dumps(record_dict(seg, pos, b, r, how)) + "\n")
            else:
                out.write(json.dumps(batch_dict(seg, pos, end, b)) + "\n")
            return
        if seg is not self.header_for:
            out.write(f"# {seg.path} (topic {seg.topic}, partition {seg.partition})\n")
            out.write(f"{'position':>10} {'base':>10} {'last':>10} {'count':>6} magic {'codec':6} "
                      f"{'max timestamp':<38} {'crc':>10}  producer (id/epoch/seq)  flags\n")  # fmt: skip
            self.header_for = seg
        flags = ",".join(x for x, on in (("txn", b.is_transactional), ("control", b.is_control)) if on)
        when = f"{iso(b.max_timestamp) or b.max_timestamp} {TS_TYPES.get(b.timestamp_type, '?')}"
        out.write(f"{pos:>10} {b.base_offset:>10} {b.last_offset:>10} {len(b.records):>6} {b.magic:>5} {b.codec:6} "
                  f"{when:<38} {b.crc!s:>10}  {b.producer_id}/{b.producer_epoch}/{b.base_sequence}  {flags}\n")  # fmt: skip
        if a.records:
            for r in b.records:
                if not filt.wants_record(r):
                    continue
                ctl = control_text(r)
                if ctl:
                    out.write(f"{'':>10}   offset {r.offset} {iso(r.timestamp) or r.timestamp}  {ctl}\n")
                    continue
                hs = " ".join(f"{json.dumps(k)}={shown(v, how)}" for k, v in r.headers)
                out.write(f"{'':>10}   offset {r.offset} {iso(r.timestamp) or r.timestamp}  key {shown(r.key, how)} "
                          f"value {shown(r.value, how)}{'  headers ' + hs if hs else ''}\n")  # fmt: skip

    def _check_indexes(self, seg: Segment, facts, stop: int | None, damaged: set[int]) -> None:
        stem = Path(seg.path).with_suffix("")
        for suffix, check in ((".index", check_offset_index), (".timeindex", check_time_index)):
            p = Path(f"{stem}{suffix}")
            if not p.is_file():
                continue
            _, problems = READERS[suffix[1:]](p)
            for msg in problems + check(p, facts, stop, damaged):
                self.counts["index_mismatch", seg.topic] += 1
                self.problem(p, "index", msg)

    # ---- other files
    def other(self, path: Path, kind: str) -> None:
        try:
            entries, problems = READERS[kind](path)
        except OSError as e:
            self.problem(path, "unreadable", f"cannot read: {e.strerror or e}")
            return
        if not self.args.summary:
            if self.args.json:
                for entry in entries:
                    obj = entry if isinstance(entry, dict) else dict(zip(_ENTRY_NAMES[kind], entry))
                    self.out.write(json.dumps({"type": kind, "file": str(path)} | obj) + "\n")
            else:
                self.out.write(f"# {path} ({kind.replace('_', ' ')}, {len(entries)} entries)\n")
                for entry in entries:
                    obj = entry if isinstance(entry, dict) else dict(zip(_ENTRY_NAMES[kind], entry))
                    self.out.write("  " + " ".join(f"{k} {v}" for k, v in obj.items()) + "\n")
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
    """Each ``.timeindex`` entry ``(timestamp, offset)``: a batch holds ``offset`` and its largest timestamp
    is not above ``timestamp`` (the largest so far when the entry was written).  When reading stopped early
    (``stop``), entries past the last batch read are not judged."""
    _, bases, lasts, max_ts = facts
    entries, _ = READERS["timeindex"](path)
    problems = []
    for ts, off in entries:
        if stop is not None and (not lasts or off > lasts[-1]):
            break
        j = bisect.bisect_left(lasts, off)
        if j == len(lasts) or bases[j] > off:
            if not damaged:  # else the offset may be in a corrupt batch (reported already)
                problems.append(f"entry ({ts}, offset {off}): no batch holds that offset")
        elif max_ts[j] > ts:
            problems.append(f"entry ({ts}, offset {off}): the batch's max timestamp is {max_ts[j]}")
    return problems


def _progress(segments):
    if not sys.stderr.isatty() or len(segments) < 2:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is an optional extra
        return None
    return tqdm(total=sum(s.size for s in segments), unit="B", unit_scale=True, file=sys.stderr, desc="dump")


def _targets(paths, err):
    """Partitions (lists of segments) and other files to dump, or None after a usage error."""
    segs: list[Segment] = []
    others: list[tuple[Path, str]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            segs += find_segments(p)
            continue
        if not p.exists():
            print(f"kfmt dump: no such file or directory: {p}", file=err)
            return None
        kind = kind_of(p)
        if kind is None:
            print(f"kfmt dump: {p}: not a Kafka log file (.log, .index, .timeindex, .txnindex, .snapshot, "
                  "*.checkpoint, leader-epoch-checkpoint, partition.metadata)", file=err)  # fmt: skip
            return None
        if kind == "log":
            segs += find_segments(p)
        else:
            others.append((p, kind))
    parts: dict = {}
    for s in sorted(set(segs)):
        parts.setdefault((s.topic, s.partition), []).append(s)
    return parts, others


def run(args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args.filters = Filters(
            offsets=args.offsets or (None, None),
            times=args.time or (None, None),
            topic=args.topic,
            partition=args.partition,
            max_bytes=args.max_bytes,
        )
        if args.format:
            from kfmt.api import get_format

            get_format(args.format)
    except (ValueError, CodecError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    try:
        found = _targets(args.paths, err)
    except (OSError, ValueError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    if found is None:
        return 2
    parts, others = found
    if not parts and not others:
        print("kfmt dump: no Kafka log file found", file=err)
        return 2
    d = Dump(args, out, err)
    bar = _progress([s for segs in parts.values() for s in segs])
    for segs in parts.values():
        if not args.filters.wants_segment(segs[0]):
            continue
        d.partition(segs)
        if bar:
            bar.update(sum(s.size for s in segs))
    if bar:
        bar.close()
    for path, kind in others:
        d.other(path, kind)
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
    labels = {"topic": "batches per topic", "records": "records per topic", "bytes": "bytes per topic",
              "magic": "batches per magic", "codec": "batches per codec", "offset_gaps": "offset gaps per topic",
              "aborted_records": "aborted records left out per topic", "problems": "problems"}  # fmt: skip
    for kind in ("magic", "codec", "topic", "records", "bytes", "aborted_records", "offset_gaps", "files", "problems"):
        if kind in groups:
            out.write(f"{labels.get(kind, kind)}:\n")
            for k, n in groups[kind].items():
                out.write(f"  {k:30} {n}\n")


def add_parser(sub) -> None:
    d = sub.add_parser(
        "dump",
        help="print and check segments, partition folders, log directories, indexes, snapshots and checkpoints",
        description="Read Kafka log segments of any magic (v0, v1, v2, mixed), verify CRCs and offset order, check "
        ".index/.timeindex against their segments; files are read by their suffix (.log, .index, .timeindex, "
        ".txnindex, .snapshot, KRaft *.checkpoint, leader-epoch-checkpoint, partition.metadata). Log directories "
        "and tiered-storage layouts (<topic>-<topicId>/<partition>/<offset>-<segmentId>.log, "
        "<topic>-<partition>-<topicId>/...) are walked; a segment object stored compressed whole is reported. "
        "Segments are read "
        "in chunks: memory does not grow with segment size. Exit status: 0 everything read was valid, 1 problems "
        'found (each reported on stderr, and in the --json stream as a "problem" object), 2 usage error.',
    )
    d.add_argument("paths", nargs="+", metavar="PATH", help="a file, a topic-partition folder, or a log directory")
    d.add_argument(
        "--json", action="store_true", help="one JSON object per line (per batch, or per record with --records)"
    )
    d.add_argument("--records", action="store_true", help="show every record, not just batch headers")
    d.add_argument(
        "--payload",
        choices=("utf8", "hex", "base64"),
        default="utf8",
        help='keys/values: utf8 shows text quoted and other bytes as 0x... (JSON: {"hex": ...}); or always hex/base64',
    )
    d.add_argument("--skip-corrupt", action="store_true", help="report a corrupt batch and go on with the next one")
    d.add_argument("--summary", action="store_true", help="only counts per magic, codec and topic")
    d.add_argument("--no-verify-crc", action="store_true", help="do not check CRCs")
    d.add_argument("--no-index", action="store_true", help="do not check .index / .timeindex files")
    d.add_argument("--format", help="read every entry as this format (proposals are never auto-detected)")
    d.add_argument(
        "--offsets",
        type=offset_range,
        metavar="FROM:TO",
        help="show only these offsets (inclusive; either end may be empty)",
    )
    d.add_argument(
        "--time", type=time_range, metavar="FROM:TO", help="show only these timestamps (ms or ISO 8601, inclusive)"
    )
    d.add_argument("--topic", help="only this topic")
    d.add_argument("--partition", type=non_negative_int, help="only this partition")
    d.add_argument("--max-bytes", type=positive_int, metavar="N", help="read at most N bytes of each segment")
    d.add_argument(
        "--isolation",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed leaves out records of aborted (and still open) transactions, as a consumer does",
    )
    d.add_argument("--verbose", action="store_true", help="also note each non-consecutive offset")
    d.set_defaults(func=run)
