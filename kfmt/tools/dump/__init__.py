"""`kfmt dump`: read segment files, partition folders or whole log directories, any magic, and every other
file of a log directory (indexes, producer snapshots, checkpoints), saying what is wrong and where.

Exit status: 0 only when everything read was valid; 1 when a problem was found (a corrupt batch, bytes
that hold no entry, offsets that go backwards, an index that does not match its segment, a damaged
index, snapshot or checkpoint); 2 for a usage error.  A corrupt batch ends its segment (``--skip-corrupt``
goes on with the next batch) and the dump goes on with the next segment.

The command itself (arguments, targets, exit status); the rooms: :mod:`.targets` (what is read),
:mod:`.reader` (reading and problems), :mod:`.show` (rendering), :mod:`.indexes` (index checks); captures:
:mod:`.capture` (their messages), :mod:`.summary` (what --summary counts), :mod:`.jobs` (--jobs shares)."""

from __future__ import annotations

import sys
from collections import Counter

from kfmt.logdir.layout import suffixes_opt
from kfmt.runtime import jsonl
from kfmt.runtime.errors import CodecError
from kfmt.tools.args import non_negative_int, offset_range, positive_int, time_range
from kfmt.tools.dump.indexes import check_offset_index, check_time_index  # noqa: F401 - kfmt.tools.dump's own names
from kfmt.tools.dump.reader import CountReached, Dump
from kfmt.tools.dump.show import Filters, template_text
from kfmt.tools.dump.targets import Targets, _progress, _targets


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
    from kfmt.capture import is_capture
    from kfmt.tools.dump import capture

    captures = [p for p in args.paths if is_capture(p)]
    if captures and len(captures) < len(args.paths):
        print("kfmt dump: give captures (pcap, pcapng) or Kafka log files, not both at once", file=err)
        return 2
    if args.deep and not (captures and args.summary):  # (every other output reads every batch)
        print("kfmt dump: --deep goes with --summary of a capture (every other output decompresses every batch)",
              file=err)  # fmt: skip
        return 2
    if captures:
        return capture.run(args, out, err)
    from kfmt.table.commit import CommitError

    try:
        found = _targets(args.paths, err, include, args.stdin_as)
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
    for e in t.unread:
        d.problem(e.filename, "unreadable", e.reason)
    if not t.logs and not t.files and not t.log_dir_files:
        if t.unread:
            return 1
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
        _print_summary(d.counts, out, args.json, verdict(d, len(logs)))
    if d.problems:
        kinds = ", ".join(f"{k} {n}" for (g, k), n in sorted(d.counts.items()) if g == "problems")
        print(f"kfmt dump: {d.problems} problem(s) found: {kinds}", file=err)
    return 1 if d.problems else 0


def _print_summary(counts: Counter, out, as_json: bool, total: dict) -> None:
    groups: dict[str, dict] = {}
    for (kind, key), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        groups.setdefault(kind, {})[str(key)] = n
    if as_json:
        out.write(jsonl.line(groups | {"total": total}))
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
    _print_verdict(total, out)


def verdict(d: Dump, n_logs: int) -> dict:
    """What a summary ends with: what was read and checked, and how many problems."""
    total = {k: sum(n for (g, _), n in d.counts.items() if g == k) for k in ("batches", "records", "bytes")}
    return {"logs": n_logs, "segments": d.checked["segments"], **total, "crcs_checked": not d.args.no_verify_crc,
            "index_files_checked": d.checked["index files"], "problems": d.problems}  # fmt: skip


def _print_verdict(v: dict, out) -> None:
    crcs = "CRCs checked" if v["crcs_checked"] else "CRCs not checked (--no-verify-crc)"
    said = "no problems" if not v["problems"] else f"{v['problems']} problem(s), each reported on stderr"
    out.write(f"total: {v['logs']:,} log(s), {v['segments']:,} segment(s), {v['batches']:,} batches, {v['records']:,} "
              f"records, {v['bytes']:,} bytes; {crcs}, {v['index_files_checked']:,} index file(s) checked; {said}\n")  # fmt: skip


def add_parser(sub) -> None:
    d = sub.add_parser(
        "dump",
        help="print and check segments, partition folders, log directories, indexes, snapshots and checkpoints; "
        "or the Kafka traffic of pcap/pcapng captures",
        description="A pcap or pcapng capture (by its first bytes) is read as Kafka traffic instead: its TCP "
        "connections put back together, one line (--json: one object) per request and response with the time "
        "and number of the packet where it starts, a response paired with its request by correlation id and its "
        "latency given; what hides bytes (a missing segment, a frame that does not "
        "read, a file cut inside a record) is a problem and exit 1. "
        "Read Kafka log segments of any magic (v0, v1, v2, mixed), verify CRCs and offset order, check "
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
    d.add_argument("--records", action="store_true", help="show every record (with key/value sizes and sequence); with "
                   "captures, the records their Produce requests and Fetch responses carry")  # fmt: skip
    d.add_argument(
        "--template",
        metavar="FMT",
        help="print each record through a kcat-style template: %%t topic, %%p partition, %%o offset, %%k key, "
        "%%s value, %%K key size, %%S value size, %%T timestamp, %%h headers, \\n newline (e.g. '%%o %%k %%s\\n'); "
        "with captures, the records their Produce requests and Fetch responses carry",
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
    d.add_argument(
        "--summary",
        action="store_true",
        help="only counts per magic, codec and log (captures: per API and connection, latency percentiles, "
        "producers and consumer groups per topic, what each broker supports; each v2 batch on the wire checked by "
        "its CRC-32C, not decompressed, unless --deep)",
    )
    d.add_argument("--deep", action="store_true", help="with --summary of a capture: decompress every batch on the "
                   "wire and read its records too (as the other outputs do)")  # fmt: skip
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
    d.add_argument("--port", type=positive_int, help="with captures: the brokers' port (default: every connection "
                   "whose traffic reads as Kafka's)")  # fmt: skip
    d.add_argument("--jobs", type=positive_int, metavar="N", help="with captures: processes reading its messages, each "
                   "writing its share in turn, the output that of one (default: one per CPU, up to 4, for a capture of "
                   "16 MB or more)")  # fmt: skip
    d.add_argument(
        "--stdin-as",
        metavar="TOPIC-PARTITION",
        type=stdin_partition,
        help="the topic-partition of what comes on stdin (-), named as its partition folder is "
        "(__consumer_offsets-7): its records are labelled with it, --topic/--partition select it, and Kafka's own "
        "topics' payloads are decoded (default: topic -, partition -1)",
    )
    d.set_defaults(func=run)


def stdin_partition(text: str) -> tuple[str, int]:
    """``--stdin-as``: a partition folder's name, read as Kafka's log loader reads one, of a topic Kafka takes."""
    import argparse

    from kfmt.logdir.names import parse_folder, topic_problem

    tp = parse_folder(text)
    if tp is None or tp[1] < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not <topic>-<partition> (as __consumer_offsets-7)")
    why = topic_problem(tp[0])
    if why:
        raise argparse.ArgumentTypeError(f"{tp[0]!r} is not a Kafka topic name: {why}")
    return tp


__all__ = ["add_parser", "check_offset_index", "check_time_index", "run"]
