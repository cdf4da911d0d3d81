"""`make bench-spark`: records/s decoded through the kafka-log data source vs a Python UDF using kafka-python.

Same corpus (synthesized, every codec, legacy segments included), same Spark session, medians of
several runs. Both produce the record columns of Spark's Kafka source (offset, timestamp, key, value,
headers) for every record and aggregate over them, so neither side can skip decoding.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time


def kafka_python_records(content):
    """The baseline UDF body: parse a whole segment with kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    out = []
    records = MemoryRecords(bytes(content))
    while (batch := records.next_batch()) is not None:
        if getattr(batch, "is_control_batch", False):
            continue
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))
    return out


RECORD_COLUMNS = (
    "offset long, timestamp timestamp, key binary, value binary, headers array<struct<key: string, value: binary>>"
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=60000, help="records per partition of the corpus")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--master", default="local[*]")
    args = p.parse_args(argv)

    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType

    from kfmt.spark.jobs import session
    from kfmt.tools.synth import SynthConfig, synth

    corpus = tempfile.mkdtemp(prefix="kfmt-bench-")
    summary = synth(corpus, SynthConfig(records=args.records, segment_bytes=1024 * 1024))
    n_expected = sum(v["records"] for v in summary.values())
    spark = session(args.master, "kfmt-bench")
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    rec_type = ArrayType(StructType([StructField("offset", LongType()), StructField("timestamp", LongType()),
                                     StructField("key", BinaryType()), StructField("value", BinaryType()),
                                     StructField("headers", ArrayType(header))]))  # fmt: skip
    parse = F.udf(kafka_python_records, rec_type)

    def ours():
        # the same five columns the baseline produces, declared as the schema (the reader builds only those)
        df = spark.read.format("kafka-log").schema(RECORD_COLUMNS).load(corpus)
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    def ours_all_columns():
        df = spark.read.format("kafka-log").load(corpus)
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    def baseline():
        files = spark.read.format("binaryFile").option("pathGlobFilter", "*.log").option("recursiveFileLookup", "true")
        recs = files.load(corpus).select(F.explode(parse("content")).alias("r"))
        return recs.agg(F.count("*").alias("n"), F.sum(F.length("r.value")).alias("bytes"),
                        F.sum(F.size("r.headers")).alias("headers")).collect()[0]  # fmt: skip

    results = {}
    jobs = (("kfmt kafka-log data source", ours), ("Python UDF + kafka-python", baseline),
            ("kfmt, all 20 columns", ours_all_columns))  # fmt: skip
    for name, job in jobs:
        job()  # warm up (Python workers, JIT of the plan)
        times, row = [], None
        for _ in range(args.runs):
            t = time.perf_counter()
            row = job()
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        results[name] = (row["n"], row["bytes"], med, row["n"] / med)
    spark.stop()
    print(f"# kfmt bench-spark: {n_expected} records, master {args.master}, median of {args.runs} runs\n")
    print("| reader | records | value bytes | seconds | records/s |")
    print("|---|---|---|---|---|")
    for name, (n, b, s, rps) in results.items():
        print(f"| {name} | {n} | {b} | {s:.2f} | {rps:,.0f} |")
    (n1, b1, _, r1), (n2, b2, _, r2), (n3, b3, _, r3) = results.values()
    same = (n1, b1) == (n2, b2) == (n3, b3)
    print(f"\nkfmt / baseline (same five columns): {r1 / r2:.2f}x records/s; with all 20 columns: {r3 / r2:.2f}x"
          + ("" if same else "  (WARNING: results differ)"))  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
