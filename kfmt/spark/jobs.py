"""Spark jobs behind `kfmt spark ...`: format comparison and conversion at scale."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any

from kfmt.tools.args import positive_int

MASTER_HELP = "Spark master (default local[*]); called in a process where a Spark session runs, that session"
DEFAULT_FORMATS = ("kafka_v0", "kafka_v1", "kafka_v2", "v2_no_record_attributes", "kip98_draft",
                   "kip82_header_wrapper", "enriched_metadata_draft")  # fmt: skip


def session(master: str = "local[*]", app: str = "kfmt", log_level: str = "ERROR"):
    """A Spark session set up for kfmt: loopback, the current Python for workers, kafka-log registered."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kfmt.spark

    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
    )
    from kfmt.spark.jvm import jar

    if jar():  # the JVM engine (kfmt.spark.read(..., engine="jvm"))
        builder = builder.config("spark.jars", jar())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    kfmt.spark.register(spark)
    return spark


def job_session(master: str, app: str = "kfmt"):
    """(session, started) for a job: the process's running Spark session if it has one (a notebook's, a test
    suite's), else a new one from ``session``; the job stops the session at its end only if ``started``."""
    from pyspark.sql import SparkSession

    started = SparkSession.getActiveSession() is None
    return session(master, app), started


def compare(spark, paths, formats=DEFAULT_FORMATS, codecs=("none", "lz4"), fields=None) -> dict:
    """The numbers of `kfmt diff --corpus`, computed by Spark: each source batch re-encoded in every format.

    ``fields``: the formats whose bytes are attributed to schema fields (default all; others get ``{}``).

    Rows of one source batch are consecutive within an input partition (segments split only at batch
    boundaries), so each task regroups them and re-encodes them with the same function as `kfmt diff`.
    """
    from pyspark.sql import functions as F

    # a task's cost is its batches re-encoded 16 ways, not its bytes: a few splits per core keep both busy
    splits = 4 * spark.sparkContext.defaultParallelism
    df = (spark.read.format("kafka-log").option("on_corrupt", "skip").option("min_partitions", splits)
          .load(paths if isinstance(paths, str) else ",".join(paths))
          .select("file", "position", "key", "value", "headers", "timestamp"))  # fmt: skip
    fmts, cods = tuple(formats), tuple(codecs)
    from kfmt.log.measure import TOTALS, fid

    only = None if fields is None else frozenset(fid(_mod(f)) for f in fields)
    out_schema = "format string, codec string, field string, " + ", ".join(f"{c} long" for c in TOTALS)
    summed = (
        df.mapInArrow(lambda it: _compare_partition(it, fmts, cods, only), out_schema)
        .groupBy("format", "codec", "field")
        .agg(*(F.sum(c).alias(c) for c in TOTALS))
        .collect()
    )
    from kfmt.log.measure import finish_totals, new_totals

    out = new_totals([_mod(f) for f in fmts], cods)
    for r in summed:
        acc = out[r["format"]][r["codec"]]
        if r["field"] is None:
            for c in TOTALS:
                acc[c] += r[c]
        else:
            acc["fields"][r["field"]] = acc["fields"].get(r["field"], 0) + r["bytes"]
    return finish_totals(out)


def _mod(f):
    from kfmt.codec.formats import get_format

    return get_format(f)


def _compare_partition(iterator, formats, codecs, fields=None):
    import pyarrow as pa

    import kfmt
    from kfmt.log.measure import TOTALS, add_batch, new_totals

    mods = [_mod(f) for f in formats]
    totals = new_totals(mods, codecs)
    current: object = None
    recs: list = []
    for batch in iterator:
        d = batch.to_pydict()
        for i in range(batch.num_rows):
            k = (d["file"][i], d["position"][i])
            if k != current:
                if recs:
                    add_batch(totals, mods, codecs, recs, fields)
                current, recs = k, []
            ts = d["timestamp"][i]
            recs.append(kfmt.Record(key=d["key"][i], value=d["value"][i],
                                    headers=[(h["key"], h["value"]) for h in d["headers"][i] or []],
                                    timestamp=-1 if ts is None else _ms(ts)))  # fmt: skip
    if recs:
        add_batch(totals, mods, codecs, recs, fields)
    rows = []
    for f, per in totals.items():
        for c, acc in per.items():
            rows.append(dict(format=f, codec=c, field=None, **{t: acc[t] for t in TOTALS}))
            for field, n in acc["fields"].items():
                rows.append(dict(format=f, codec=c, field=field, **(dict.fromkeys(TOTALS, 0) | {"bytes": n})))
    schema = pa.schema([("format", pa.string()), ("codec", pa.string()), ("field", pa.string())]
                       + [(t, pa.int64()) for t in TOTALS])  # fmt: skip
    yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _ms(ts) -> int:
    import datetime as _dt

    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_dt.timezone.utc)
    return round(ts.timestamp() * 1000)


def convert(spark, src, dst, *, magic: int, codec: str = "none", segment_bytes: int = 1024**3,
            skip_corrupt: bool = False, overwrite: bool = False) -> dict:  # fmt: skip
    """Convert a log directory with Spark: read with kafka-log, write with kafka-log (one job-level commit).

    Accounts for every input record and byte, as ``kfmt convert`` does: returns ``records_in`` (decoded,
    control records included), ``records_out`` (read back from ``dst``), ``records_lost`` and ``lost``
    (per kind: what magic 0/1 cannot carry), and ``corrupt_batches`` / ``bytes_unread`` (with
    ``skip_corrupt`` corrupt batches and unreadable tails are left out and counted; without it the job
    fails and nothing is written). Refuses to write into (or above) its input, and an existing ``dst``
    unless ``overwrite``. The job writes into a staging folder beside ``dst`` that is published, with a
    ``_KFMT_SUCCESS`` marker holding these counts, by one rename once the output has been read back
    (kfmt.storage.publish): a killed or failed run leaves nothing that looks complete.
    """
    from pathlib import Path

    from pyspark.sql import functions as F

    from kfmt.storage.publish import MARKER, Staging

    s, d = Path(src).resolve(), Path(dst).resolve()
    if s == d or s in d.parents or d in s.parents:
        raise ValueError(f"kfmt spark convert: refusing to write {dst} over or around its input {src}")
    # an existing destination is refused here, before any Spark job runs
    with Staging(d, overwrite=overwrite) as st:
        # control batches and producer state are carried over as `kfmt convert` carries them
        reader = spark.read.format("kafka-log").option("include_control", "true")
        if skip_corrupt:
            reader = reader.option("on_corrupt", "quarantine")
        df = reader.load(src)
        good = F.col("error").isNull()
        counts = [
            F.sum(good.cast("long")).alias("records_in"),
            F.sum((~good).cast("long")).alias("corrupt_batches"),
            F.sum(F.when(~good, F.length("raw")).otherwise(0)).alias("bytes_unread"),
        ]
        if magic < 2:  # what an old magic cannot carry is counted and reported, then left out (as Kafka does)
            counts += [
                F.sum(F.col("is_control").cast("long")).alias("control records"),
                F.sum(F.size("headers")).alias("headers"),
                F.sum((F.col("producer_id") != -1).cast("long")).alias("records with producer state"),
                F.sum(F.col("is_transactional").cast("long")).alias("transactional records"),
                F.sum((F.col("partition_leader_epoch") != -1).cast("long")).alias("records with a leader epoch"),
                F.sum(F.col("delete_horizon").isNotNull().cast("long")).alias("records with a delete horizon"),
            ]
            if magic == 0:
                counts.append(F.sum(F.col("timestamp").isNotNull().cast("long")).alias("timestamps"))
        row = df.agg(*counts).collect()[0].asDict()
        res: dict[str, Any] = {k: int(row.pop(k) or 0) for k in ("records_in", "corrupt_batches", "bytes_unread")}
        res["lost"] = {k: int(v) for k, v in row.items() if v}
        res["records_lost"] = res["lost"].get("control records", 0)
        out = df.filter(good)
        if magic < 2:
            out = out.filter(~F.col("is_control")).select("topic", "partition", "offset", "key", "value",
                                                           "timestamp", "timestampType", "batch_base_offset")  # fmt: skip
        (out.write.format("kafka-log").mode("overwrite").option("magic", magic).option("codec", codec)
            .option("segment_bytes", segment_bytes).save(str(st.root)))  # fmt: skip
        res["records_out"] = spark.read.format("kafka-log").option("include_control", "true").load(str(st.root)).count()
        (st.root / MARKER).unlink(missing_ok=True)  # the writer's own marker: replaced by the job's
        st.publish({"tool": "kfmt spark convert", "source": str(s), "magic": magic, "codec": codec, **res})
    return res


_MEMBERS = ("array<struct<memberId: string, groupInstanceId: string, clientId: string, clientHost: string, "
            "subscription: struct<Topics: array<string>>, assignment: struct<AssignedPartitions: "
            "array<struct<Topic: string, Partitions: array<int>>>>>>")  # fmt: skip


def offsets(spark, path: str):
    """The committed-offset history and the group membership changes in an archived ``__consumer_offsets``
    (a log directory, or its partition folders), read offline with its records decoded by name.

    Returns ``(commits, groups, undecoded)``: ``commits`` a row per offset commit or deletion (a tombstone) in
    log order: group, topic, partition, committed ``offset``, ``leader_epoch``, ``metadata``,
    ``commit_time``, ``expire_time`` (NULL for none), ``deleted``, and where it is in the log (``log_partition``,
    ``log_offset``, ``log_time``); ``groups`` a row per group metadata record: group, ``generation``,
    ``protocol_type``, ``protocol``, ``leader``, ``members`` (member ids), ``joined`` and ``left`` (against the
    group's record before), ``member_details`` (each member's client id and host, its subscribed topics and
    assigned partitions, read from its ConsumerProtocol metadata when the group is a consumer group),
    ``deleted`` (the group removed), where it is in the log; ``undecoded`` the rows whose
    payload did not decode whole, with ``payload_error`` (nothing is dropped unsaid)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.read.format("kafka-log").option("subscribe", "__consumer_offsets").option("decode_payloads", "true")
    df = df.load(path).select(
        F.col("partition").alias("log_partition"), F.col("offset").alias("log_offset"),
        F.col("timestamp").alias("log_time"), "key_decoded", "value_decoded", "payload_error",
        F.get_json_object("key_decoded", "$.type").alias("key_type"),
    )  # fmt: skip

    def k(field):
        return F.get_json_object("key_decoded", f"$.data.{field}")

    def v(field):
        return F.get_json_object("value_decoded", f"$.data.{field}")

    def ms(col):
        return F.when(col.cast("long") >= 0, F.timestamp_millis(col.cast("long")))

    where = ["log_partition", "log_offset", "log_time"]
    commits = df.where(F.col("key_type") == "OffsetCommitKey").select(
        k("group").alias("group"), k("topic").alias("topic"), k("partition").cast("int").alias("partition"),
        v("offset").cast("long").alias("offset"), v("leaderEpoch").cast("int").alias("leader_epoch"),
        v("metadata").alias("metadata"), ms(v("commitTimestamp")).alias("commit_time"),
        ms(v("expireTimestamp")).alias("expire_time"), F.col("value_decoded").isNull().alias("deleted"), *where,
    )  # fmt: skip
    parsed = F.from_json(v("members"), _MEMBERS)
    members = parsed.getField("memberId")
    details = F.transform(parsed, lambda m: F.struct(
        m["memberId"].alias("member_id"), m["clientId"].alias("client_id"), m["clientHost"].alias("client_host"),
        m["subscription"]["Topics"].alias("topics"), m["assignment"]["AssignedPartitions"].alias("assigned")))  # fmt: skip
    groups = df.where(F.col("key_type") == "GroupMetadataKey").select(
        k("group").alias("group"), v("generation").cast("int").alias("generation"),
        v("protocolType").alias("protocol_type"), v("protocol").alias("protocol"), v("leader").alias("leader"),
        F.coalesce(members, F.array().cast("array<string>")).alias("members"), details.alias("member_details"),
        F.col("value_decoded").isNull().alias("deleted"), *where,
    )  # fmt: skip
    before = F.lag("members").over(Window.partitionBy("group").orderBy("log_partition", "log_offset"))
    groups = groups.withColumn("joined", F.array_except("members", F.coalesce(before, F.array().cast("array<string>"))))
    groups = groups.withColumn("left", F.array_except(F.coalesce(before, F.array().cast("array<string>")), "members"))
    undecoded = df.where(F.col("payload_error").isNotNull()).select(*where, "payload_error")
    return commits, groups, undecoded


def render_compare(res: dict, markdown=True, on_disk: dict | None = None) -> str:
    """The comparison as a table; ``on_disk`` (bytes, records, payload of the corpus as written) its first row."""
    from kfmt.log.measure import overhead_per_record, table

    rows = [("(on disk, as written)", "mixed", on_disk)] if on_disk else []
    rows += [(f, c, acc) for f, per in res.items() for c, acc in per.items()]
    body = []
    for f, c, acc in rows:
        ovh = overhead_per_record(acc)
        if ovh is None:
            body.append([f, c, "n/a", "", "", "cannot carry this codec"])
            continue
        body.append([f, c, acc["bytes"], acc["records"], f"{acc['bytes'] / acc['records']:.2f}", f"{ovh:.2f}"])
    return table(["format", "codec", "total bytes", "records", "bytes/record", "overhead/record"], body, markdown)


def _check_args(args) -> str | None:
    """What is wrong with the command line, checked before Spark starts (None: nothing)."""
    from pathlib import Path

    from kfmt.codec.formats import format_ids

    paths = args.logdir.split(",") if args.job in ("compare", "offsets") else [args.src]
    for p in paths:
        if not Path(p).exists():
            return f"no such file or directory: {p}"
    if args.job == "convert" and not args.overwrite:
        from kfmt.storage.publish import occupied

        if occupied(Path(args.dst)):
            return f"{args.dst} exists (pass --overwrite to replace it)"
    if args.job == "compare":
        unknown = [f for f in args.formats.split(",") if f not in format_ids()]
        if unknown:
            return f"unknown format(s) {', '.join(unknown)}; known: {', '.join(format_ids())}"
        from kfmt.runtime.compression import CODECS

        bad = [c for c in args.codecs.split(",") if c not in CODECS]
        if bad:
            return f"unknown codec(s) {', '.join(bad)}; use {', '.join(CODECS)}"
    elif args.job == "convert" and args.magic < 2 and args.codec == "zstd":
        return "zstd cannot be written with magic 0 or 1"
    return None


def _reason(e: BaseException) -> str:
    """The one line of a failed Spark job that says what went wrong: the reader's ``...Error: kafka-log: ...``."""
    from kfmt.spark.errors import one_line

    lines = str(e).splitlines()
    line = one_line(str(e))
    if line is not None:
        return line
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    return first or type(e).__name__


@contextmanager
def _spark_output_to_log():
    """Spark's JVM and its Python workers write banners, stack traces and progress straight to file
    descriptor 2; send that to a log file, so the terminal gets kfmt's own one-line messages (which name
    the log when something failed). Yields (stream for kfmt's messages, log path)."""
    sys.stderr.flush()
    log = tempfile.NamedTemporaryFile(prefix="kfmt-spark-", suffix=".log", delete=False)
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    ours = os.fdopen(os.dup(saved), "w", buffering=1)
    old, sys.stderr = sys.stderr, ours
    try:
        yield ours, log.name
    finally:
        sys.stderr = old
        ours.close()
        os.dup2(saved, 2)
        os.close(saved)
        log.close()


def _print_jar(args) -> int:
    from kfmt.spark.jvm import jar

    del args
    if jar() is None:
        print("kfmt spark jar: the jar is not built (make setup, with a JDK)", file=sys.stderr)
        return 1
    print(jar())
    return 0


def _print_options(args) -> int:
    """``kfmt spark options``: the kafka-log source's read and write options, one line each."""
    from kfmt.spark.source import WRITE_OPTIONS
    from kfmt.table.options import READ_OPTIONS

    for what, known in (("read", READ_OPTIONS), ("write", WRITE_OPTIONS)):
        if args.which in (what, "all"):
            print(f"# {what} options (spark.read / df.write .format('kafka-log').option(name, value))")
            width = max(map(len, known))
            for name, said in known.items():
                print(f"{name:<{width}}  {said}")
    return 0


def run(args) -> int:
    problem = _check_args(args)
    if problem:
        print(f"kfmt spark {args.job}: {problem}", file=sys.stderr)
        return 2
    with _spark_output_to_log() as (err, log):
        out = _Messages(err, log)
        rc = _run(args, out)
    if not out.named_log and os.path.exists(log):  # kept only when a message pointed the user at it
        os.unlink(log)
    return rc


class _Messages:
    """Where ``kfmt spark`` says things: the terminal's stderr, and the log that holds Spark's own output."""

    def __init__(self, err, log: str):
        self.err, self.log, self.named_log = err, log, False

    def say(self, text: str) -> None:
        print(text, file=self.err)

    def fail(self, text: str) -> int:
        """A one-line failure that names Spark's log (kept for the user); returns exit status 1."""
        self.named_log = True
        print(f"{text} (Spark's log: {self.log})", file=self.err)
        return 1


def _run(args, out: _Messages) -> int:
    t0 = time.time()
    try:
        spark, started = job_session(args.master)
    except Exception as e:
        return out.fail(f"kfmt spark {args.job}: Spark did not start: {_reason(e)}")
    try:
        if args.job == "offsets":
            return _offsets_job(spark, args, out, t0)
        if args.job == "compare":
            try:
                res = compare(spark, args.logdir, args.formats.split(","), args.codecs.split(","))
            except Exception as e:
                return out.fail(f"kfmt spark compare: {_reason(e)}")
            if args.json:
                import json

                print(json.dumps(res))
            else:
                print(render_compare(res, markdown=args.markdown))
        else:
            try:
                res = convert(spark, args.src, args.dst, magic=args.magic, codec=args.codec,
                              segment_bytes=args.segment_bytes, skip_corrupt=args.skip_corrupt,
                              overwrite=args.overwrite)  # fmt: skip
            except FileExistsError as e:
                out.say(f"kfmt spark convert: {e}")
                return 2
            except Exception as e:  # a Spark job failure wraps the reader's one-line reason
                why = _reason(e).replace("option on_corrupt=skip or quarantine", "--skip-corrupt")
                return out.fail(f"kfmt spark convert: {why}; nothing written")
            kinds = ", ".join(f"{k} {v}" for k, v in res["lost"].items())
            if kinds:
                out.say(f"kfmt spark convert: not carried over to magic {args.magic}: {kinds}")
            print(f"converted {res['records_out']} of {res['records_in']} records from {args.src} to {args.dst} "
                  f"(magic {args.magic}, codec {args.codec}; {res['records_lost']} not carried over)")  # fmt: skip
            if res["corrupt_batches"]:
                out.say(f"kfmt spark convert: {res['corrupt_batches']} corrupt batch(es) or unreadable tail(s), "
                        f"{res['bytes_unread']} input byte(s) not read")  # fmt: skip
                return 1
    finally:
        if started:
            spark.stop()
    out.say(f"done in {time.time() - t0:.1f}s")
    return 0


def _utc(t) -> str:
    """A timestamp Spark gave (naive, in the session's local time) as dump prints one: UTC, milliseconds, ``Z``."""
    from datetime import timezone

    if t is None:
        return "-"
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _offsets_table(rows: list[dict]) -> None:
    """The last commit per group and partition as a table with a header; ``read at`` is where that commit record
    is in the log read (``__consumer_offsets`` partition ``@`` offset)."""
    table = [("group", "topic-partition", "offset", "committed (UTC)", "read at (__consumer_offsets partition@offset)")]
    for d in rows:
        offset = "deleted" if d["deleted"] else str(d["offset"])
        table.append((d["group"], f"{d['topic']}-{d['partition']}", offset, _utc(d["commit_time"]),
                      f"{d['log_partition']}@{d['log_offset']}"))  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for r in table:
        print("  ".join(c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) + f"  {r[4]}")


def _offsets_job(spark, args, out: _Messages, t0: float) -> int:
    """`kfmt spark offsets`: the last committed offset of every group, topic and partition (table or JSON
    lines), the full histories written to --out as Parquet; exit 1 if a record did not decode."""
    import json

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    try:
        commits, groups, undecoded = offsets(spark, args.logdir)
        latest = commits.withColumn("n", F.row_number().over(Window.partitionBy("group", "topic", "partition")
                                                             .orderBy(F.desc("log_partition"), F.desc("log_offset"))))  # fmt: skip
        rows = latest.where("n = 1").drop("n").orderBy("group", "topic", "partition").collect()
        changes = groups.where(F.size("joined") + F.size("left") > 0).count()
        n_commits, n_groups, bad = commits.count(), groups.count(), undecoded.collect()
        if args.out:
            commits.write.mode("errorifexists").parquet(os.path.join(args.out, "commits"))
            groups.write.mode("errorifexists").parquet(os.path.join(args.out, "groups"))
    except Exception as e:
        return out.fail(f"kfmt spark offsets: {_reason(e)}")
    if args.json:
        for r in rows:
            d = r.asDict()
            print(json.dumps({k: (str(x) if k.endswith("time") and x is not None else x) for k, x in d.items()}))
    else:
        _offsets_table([r.asDict() for r in rows])
    out.say(f"kfmt spark offsets: {n_commits} offset commit(s) of {len(rows)} group partition(s), {n_groups} group "
            f"metadata record(s) ({changes} membership change(s)){' written to ' + args.out if args.out else ''}")  # fmt: skip
    for r in bad[:20]:
        out.say(f"kfmt spark offsets: __consumer_offsets-{r['log_partition']} offset {r['log_offset']}: "
                f"{r['payload_error']}")  # fmt: skip
    if bad:
        out.say(f"kfmt spark offsets: {len(bad)} record(s) did not decode whole (a record that does not decode is "
                "left out of the histories; a member's metadata that does not parse stays bytes)")  # fmt: skip
        return 1
    out.say(f"done in {time.time() - t0:.1f}s")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("spark", help="Spark jobs over Kafka log directories (compare formats, convert, offsets)")
    jobs = s.add_subparsers(dest="job", required=True, metavar="JOB")
    c = jobs.add_parser("compare", help="bytes per format and codec over a corpus, computed with Spark")
    c.add_argument("logdir", help="log directory, partition folder or segment files (comma-separated)")
    c.add_argument("--formats", default=",".join(DEFAULT_FORMATS), help="format ids, comma-separated")
    c.add_argument("--codecs", default="none,lz4", help="codecs, comma-separated (default none,lz4)")
    c.add_argument("--master", default="local[*]", help=MASTER_HELP)
    c.add_argument("--json", action="store_true")
    c.add_argument("--markdown", action="store_true")
    c.set_defaults(func=run)
    v = jobs.add_parser("convert", help="convert a log directory to another magic/codec with Spark")
    v.add_argument("src")
    v.add_argument("dst")
    v.add_argument("--magic", type=int, default=2, choices=(0, 1, 2))
    v.add_argument("--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    v.add_argument("--segment-bytes", type=positive_int, default=1024**3, help="roll segments at this size")
    v.add_argument("--master", default="local[*]", help=MASTER_HELP)
    v.add_argument("--overwrite", action="store_true", help="replace DST if it exists (default: refuse)")
    v.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="leave corrupt batches and unreadable tails out, count them and exit 1 (default: fail, write nothing)",
    )
    v.set_defaults(func=run)
    o = jobs.add_parser("offsets", help="committed offsets and group membership from an archived __consumer_offsets",
                        description="Read an archived __consumer_offsets (a log directory or its partition folders) "
                        "offline, its records decoded by name: print the last committed offset of every group, topic "
                        "and partition, and with --out write the whole commit history (every commit and deletion, "
                        "with commit and expiry times) and every group metadata record (generation, protocol, leader, "
                        "members, who joined and left) as Parquet under DIR/commits and DIR/groups. Exit status: 0, 1 "
                        "if a record did not decode (each named), 2 usage error.")  # fmt: skip
    o.add_argument("logdir", help="log directory or __consumer_offsets-N folders (comma-separated)")
    o.add_argument("--out", metavar="DIR", help="write the histories here as Parquet (DIR/commits, DIR/groups)")
    o.add_argument("--json", action="store_true", help="the last commits as JSON lines")
    o.add_argument("--master", default="local[*]", help=MASTER_HELP)
    o.set_defaults(func=run)
    j = jobs.add_parser("jar", help="print the path of kfmt's jar (the kafka-log source: spark-submit --jars)",
                        description="Print the path of kfmt's jar, the kafka-log Spark source (a JVM application or "
                        "spark-sql puts it on the classpath with --jars). Exit status: 0, or 1 when it is not built "
                        "(make setup builds it where a JDK is installed).")  # fmt: skip
    j.set_defaults(func=_print_jar)
    p = jobs.add_parser("options", help="list the kafka-log source's read and write options, one line each",
                        description="List the options of spark.read.format('kafka-log') and df.write.format("
                        "'kafka-log'), with what each does; starts no Spark. Exit status: 0.")  # fmt: skip
    p.add_argument("which", nargs="?", default="all", choices=("read", "write", "all"))
    p.set_defaults(func=_print_options)
