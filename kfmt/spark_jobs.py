"""Spark jobs behind `kfmt spark ...`: format comparison and conversion at scale."""

from __future__ import annotations

import os
import sys
import time

DEFAULT_FORMATS = ("kafka_v0", "kafka_v1", "kafka_v2", "v2_no_record_attributes", "kip98_draft",
                   "kip82_header_wrapper", "enriched_metadata_draft")  # fmt: skip


def session(master: str = "local[*]", app: str = "kfmt"):
    """A Spark session set up for kfmt: loopback, the current Python for workers, kafka-log registered."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kfmt.spark

    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kfmt.spark.register(spark)
    return spark


def compare(spark, paths, formats=DEFAULT_FORMATS, codecs=("none", "lz4")) -> dict:
    """The numbers of `kfmt diff --corpus`, computed by Spark: each source batch re-encoded in every format.

    Rows of one source batch are consecutive within an input partition (segments split only at batch
    boundaries), so each task regroups them and re-encodes them with the same function as `kfmt diff`.
    """
    from pyspark.sql import functions as F

    df = (spark.read.format("kafka-log").option("on_corrupt", "skip").load(paths if isinstance(paths, str) else ",".join(paths))
          .select("file", "position", "key", "value", "headers", "timestamp"))  # fmt: skip
    fmts, cods = tuple(formats), tuple(codecs)
    from kfmt.diff import TOTALS

    out_schema = "format string, codec string, field string, " + ", ".join(f"{c} long" for c in TOTALS)
    summed = (
        df.mapInArrow(lambda it: _compare_partition(it, fmts, cods), out_schema)
        .groupBy("format", "codec", "field")
        .agg(*(F.sum(c).alias(c) for c in TOTALS))
        .collect()
    )
    from kfmt.diff import finish_totals, new_totals

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
    from kfmt.api import get_format

    return get_format(f)


def _compare_partition(iterator, formats, codecs):
    import pyarrow as pa

    import kfmt
    from kfmt.diff import TOTALS, add_batch, new_totals

    mods = [_mod(f) for f in formats]
    totals = new_totals(mods, codecs)
    current, recs = None, []
    for batch in iterator:
        d = batch.to_pydict()
        for i in range(batch.num_rows):
            k = (d["file"][i], d["position"][i])
            if k != current:
                if recs:
                    add_batch(totals, mods, codecs, recs)
                current, recs = k, []
            ts = d["timestamp"][i]
            recs.append(kfmt.Record(key=d["key"][i], value=d["value"][i],
                                    headers=[(h["key"], h["value"]) for h in d["headers"][i] or []],
                                    timestamp=-1 if ts is None else _ms(ts)))  # fmt: skip
    if recs:
        add_batch(totals, mods, codecs, recs)
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


def convert(spark, src, dst, *, magic: int, codec: str = "none", segment_bytes: int = 1024**3) -> int:
    """Convert a log directory with Spark: read with kafka-log, write with kafka-log (atomic segment files).

    Refuses to write into (or above) its input, so the input is never overwritten.
    """
    from pathlib import Path

    s, d = Path(src).resolve(), Path(dst).resolve()
    if s == d or s in d.parents or d in s.parents:
        raise ValueError(f"kfmt spark convert: refusing to write {dst} over or around its input {src}")
    df = spark.read.format("kafka-log").load(src)
    n = df.count()
    (df.write.format("kafka-log").mode("overwrite").option("magic", magic).option("codec", codec)
       .option("segment_bytes", segment_bytes).save(dst))  # fmt: skip
    return n


def render_compare(res: dict, markdown=True) -> str:
    from kfmt.diff import table

    body = []
    for f, per in res.items():
        for c, acc in per.items():
            if not acc["records"]:
                body.append([f, c, "n/a", "", "", "cannot carry this codec"])
                continue
            body.append([f, c, acc["bytes"], acc["records"], f"{acc['bytes_per_record']:.2f}",
                         f"{(acc['bytes'] - acc['payload']) / acc['records']:.2f}"])  # fmt: skip
    return table(["format", "codec", "total bytes", "records", "bytes/record", "overhead/record"], body, markdown)


def run(args) -> int:
    t0 = time.time()
    spark = session(args.master)
    try:
        if args.job == "compare":
            res = compare(spark, args.logdir, args.formats.split(","), args.codecs.split(","))
            if args.json:
                import json

                print(json.dumps(res))
            else:
                print(render_compare(res, markdown=args.markdown))
        else:
            n = convert(spark, args.src, args.dst, magic=args.magic, codec=args.codec, segment_bytes=args.segment_bytes)
            print(f"converted {n} rows from {args.src} to {args.dst} (magic {args.magic}, codec {args.codec})")
    finally:
        spark.stop()
    print(f"done in {time.time() - t0:.1f}s", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("spark", help="Spark jobs over Kafka log directories (compare formats, convert)")
    jobs = s.add_subparsers(dest="job", required=True, metavar="JOB")
    c = jobs.add_parser("compare", help="bytes per format and codec over a corpus, computed with Spark")
    c.add_argument("logdir", help="log directory, partition folder or segment files (comma-separated)")
    c.add_argument("--formats", default=",".join(DEFAULT_FORMATS), help="format ids, comma-separated")
    c.add_argument("--codecs", default="none,lz4", help="codecs, comma-separated (default none,lz4)")
    c.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    c.add_argument("--json", action="store_true")
    c.add_argument("--markdown", action="store_true")
    c.set_defaults(func=run)
    v = jobs.add_parser("convert", help="convert a log directory to another magic/codec with Spark")
    v.add_argument("src")
    v.add_argument("dst")
    v.add_argument("--magic", type=int, default=2, choices=(0, 1, 2))
    v.add_argument("--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    v.add_argument("--segment-bytes", type=int, default=1024**3)
    v.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    v.set_defaults(func=run)
