"""`kfmt dump`: read segment files, partition folders or whole log directories, any magic."""

from __future__ import annotations

import base64
import json
import sys
from collections import Counter

from kfmt.api import scan
from kfmt.logdir import check_indexes, find_segments
from kfmt.runtime.errors import CodecError


def payload(b, how: str):
    if b is None:
        return None
    if how == "hex":
        return b.hex()
    if how == "base64":
        return base64.b64encode(b).decode("ascii")
    return b.decode("utf-8", "backslashreplace")


def batch_dict(seg, pos, end, b) -> dict:
    return {
        "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos, "size": end - pos,
        "magic": b.magic, "base_offset": b.base_offset, "last_offset": b.last_offset, "count": len(b.records),
        "codec": b.codec, "timestamp_type": b.timestamp_type, "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp, "crc": b.crc, "partition_leader_epoch": b.partition_leader_epoch,
        "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
        "is_transactional": b.is_transactional, "is_control": b.is_control,
    }  # fmt: skip


def record_dict(seg, pos, b, r, how: str) -> dict:
    return {
        "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos, "magic": b.magic,
        "batch_base_offset": b.base_offset, "offset": r.offset, "timestamp": r.timestamp,
        "timestamp_type": b.timestamp_type, "key": payload(r.key, how), "value": payload(r.value, how),
        "headers": [[k, payload(v, how)] for k, v in r.headers], "control": list(r.control) if r.control else None,
    }  # fmt: skip


def _progress(segments):
    if not sys.stderr.isatty() or len(segments) < 2:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is an optional extra
        return None
    return tqdm(total=sum(s.size for s in segments), unit="B", unit_scale=True, file=sys.stderr, desc="dump")


def run(args, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        segments = find_segments(args.paths)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    if not segments:
        print("kfmt dump: no .log segment found", file=err)
        return 2
    bar = _progress(segments)
    corrupt = 0
    counts: Counter = Counter()
    last_seg = None
    for seg in segments:
        try:
            with open(seg.path, "rb") as f:
                data = f.read()
        except OSError as e:
            print(f"kfmt dump: {seg.path}: {e}", file=err)
            corrupt += 1
            continue
        positions = []
        try:
            for pos, end, b in scan(data, verify_crc=not args.no_verify_crc, skip_corrupt=args.skip_corrupt,
                                    format=args.format):  # fmt: skip
                if isinstance(b, CodecError):
                    corrupt += 1
                    counts["corrupt", seg.topic] += 1
                    print(f"kfmt dump: {seg.path}: corrupt batch at byte {pos}: {b}", file=err)
                    continue
                positions.append((pos, b.base_offset, b.last_offset, b.max_timestamp))
                n = len(b.records)
                counts["magic", b.magic] += 1
                counts["codec", b.codec] += 1
                counts["topic", seg.topic] += 1
                counts["records", seg.topic] += n
                counts["bytes", seg.topic] += end - pos
                if args.summary:
                    continue
                if args.json:
                    if args.records:
                        for r in b.records:
                            out.write(json.dumps(record_dict(seg, pos, b, r, args.payload)) + "\n")
                    else:
                        out.write(json.dumps(batch_dict(seg, pos, end, b)) + "\n")
                else:
                    if seg is not last_seg:
                        out.write(f"# {seg.path} (topic {seg.topic}, partition {seg.partition})\n")
                        out.write(f"{'position':>10} {'base':>10} {'last':>10} {'count':>6} magic {'codec':6} "
                                  f"ts_type {'max_timestamp':>14} {'crc':>10}  producer (id/epoch/seq)  flags\n")  # fmt: skip
                        last_seg = seg
                    flags = ",".join(x for x, on in (("txn", b.is_transactional), ("control", b.is_control)) if on)
                    out.write(f"{pos:>10} {b.base_offset:>10} {b.last_offset:>10} {n:>6} {b.magic:>5} {b.codec:6} "
                              f"{b.timestamp_type!s:>7} {b.max_timestamp:>14} {b.crc:>10}  "
                              f"{b.producer_id}/{b.producer_epoch}/{b.base_sequence}  {flags}\n")  # fmt: skip
                    if args.records:
                        for r in b.records:
                            hs = " ".join(f"{k}={payload(v, args.payload)}" for k, v in r.headers)
                            ctl = f" control={r.control}" if r.control else ""
                            out.write(f"{'':>10}   offset {r.offset} ts {r.timestamp} key {payload(r.key, args.payload)!r} "
                                      f"value {payload(r.value, args.payload)!r}{' headers ' + hs if hs else ''}{ctl}\n")  # fmt: skip
        except CodecError as e:
            corrupt += 1
            at = getattr(e, "batch_position", e.offset)
            where = f"byte {at}" if at is not None else "an unknown position"
            print(f"kfmt dump: {seg.path}: corrupt batch at {where}: {e}", file=err)
            print("kfmt dump: stopping (use --skip-corrupt to go on with the next batch)", file=err)
            if bar:
                bar.close()
            return 1
        if not args.no_index:
            for problem in check_indexes(seg, positions):
                print(f"kfmt dump: {seg.path}: {problem}", file=err)
                counts["index_mismatch", seg.topic] += 1
                corrupt += 1
        if bar:
            bar.update(seg.size)
    if bar:
        bar.close()
    if args.summary:
        _print_summary(counts, out, args.json)
    return 1 if corrupt else 0


def _print_summary(counts: Counter, out, as_json: bool) -> None:
    groups: dict[str, dict] = {}
    for (kind, key), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        groups.setdefault(kind, {})[str(key)] = n
    if as_json:
        out.write(json.dumps(groups) + "\n")
        return
    for kind in ("magic", "codec", "topic", "records", "bytes", "corrupt", "index_mismatch"):
        if kind in groups:
            label = {"topic": "batches per topic", "records": "records per topic", "bytes": "bytes per topic",
                     "magic": "batches per magic", "codec": "batches per codec"}.get(kind, kind)  # fmt: skip
            out.write(f"{label}:\n")
            for k, n in groups[kind].items():
                out.write(f"  {k:30} {n}\n")


def add_parser(sub) -> None:
    d = sub.add_parser(
        "dump",
        help="print the batches and records of segment files, partition folders or log directories",
        description="Read Kafka log segments of any magic (v0, v1, v2, mixed), verify CRCs, check .index/.timeindex. "
        "Exit status: 0 all good, 1 corrupt data or index mismatch found, 2 usage error.",
    )
    d.add_argument(
        "paths", nargs="+", metavar="PATH", help="a .log segment, a topic-partition folder, or a log directory"
    )
    d.add_argument(
        "--json", action="store_true", help="one JSON object per line (per batch, or per record with --records)"
    )
    d.add_argument("--records", action="store_true", help="show every record, not just batch headers")
    d.add_argument("--payload", choices=("utf8", "hex", "base64"), default="utf8", help="how keys/values are shown")
    d.add_argument("--skip-corrupt", action="store_true", help="report a corrupt batch and go on with the next one")
    d.add_argument("--summary", action="store_true", help="only counts per magic, codec and topic")
    d.add_argument("--no-verify-crc", action="store_true", help="do not check CRCs")
    d.add_argument("--no-index", action="store_true", help="do not check .index / .timeindex files")
    d.add_argument("--format", help="read every entry as this format (proposals are never auto-detected)")
    d.set_defaults(func=run)
