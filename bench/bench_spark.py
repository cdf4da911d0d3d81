"""`make bench-spark`: records/s decoded through the kafka-log data source vs a Python UDF using kafka-python.

Same corpus (synthesized, every codec, legacy segments included), same Spark session, medians of
several runs. Both produce the record columns of Spark's Kafka source (offset, timestamp, key, value,
headers) for every record and aggregate over them, so neither side can skip decoding. The data source
runs with each backend built here (option ``backend``): native (Arrow-direct) and python (decoded objects
gathered into columns, the reader before the native backend); besides wall time, the CPU seconds of the
Python workers (the decoding) are summed from their /proc entries, so the per-CPU-second figure does not
depend on how busy the machine's other core is. With moto installed (the test extra), the same corpus is
also read from an S3 API server started on 127.0.0.1 (``--no-s3`` to leave it out): the figure then
includes that server's own CPU (a Python process on the same two cores) and its HTTP round trips.

Against Spark's own Parquet reader (what a user gets by converting the logs once): the same rows written to
Parquet beforehand (not timed), then the same query on both: group by topic and partition with the count,
the sum of the value lengths and the largest timestamp. That comparison counts the CPU seconds of the whole
process tree (this driver, Spark's JVM, every Python worker and daemon), so Spark's JVM-side Parquet
decoding is counted as the Python workers' decoding is.
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


def main(argv=None) -> int:  # noqa: C901 - older than the rule; to be split
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=60000, help="records per partition of the corpus")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=0,
                   help="rounds of the Parquet comparison (default: --runs, at least 5; 1 for a quick check)")  # fmt: skip
    p.add_argument("--master", default="local[*]")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="one round, nothing warmed up: the results are checked, "
        "the timings are not worth quoting (the suite's slice)",
    )
    p.add_argument("--no-s3", action="store_true", help="leave out the run against a loopback S3 server")
    p.add_argument("--only-parquet", action="store_true", help="only the comparison with Spark's Parquet reader")
    args = p.parse_args(argv)

    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType

    import kfmt.spark
    from kfmt.spark import jvm
    from kfmt.spark.jobs import job_session
    from kfmt.tools.synth import SynthConfig, synth

    corpus = _scratch("kfmt-bench-")
    summary = synth(corpus, SynthConfig(records=args.records, segment_bytes=1024 * 1024))
    n_expected = sum(v["records"] for v in summary.values())
    spark, started = job_session(args.master, "kfmt-bench")
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    rec_type = ArrayType(StructType([StructField("offset", LongType()), StructField("timestamp", LongType()),
                                     StructField("key", BinaryType()), StructField("value", BinaryType()),
                                     StructField("headers", ArrayType(header))]))  # fmt: skip
    parse = F.udf(kafka_python_records, rec_type)

    from kfmt.codec.formats import available_backends

    def ours(backend=None):
        # the same five columns the baseline produces, declared as the schema (the reader builds only those)
        reader = spark.read.format("kafka-log").option("engine", "python").schema(RECORD_COLUMNS)
        df = (reader.option("backend", backend) if backend else reader).load(corpus)
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    def _agg(df):
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    def ours_all_columns():
        df = spark.read.format("kafka-log").option("engine", "python").load(corpus)
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    def baseline():
        files = spark.read.format("binaryFile").option("pathGlobFilter", "*.log").option("recursiveFileLookup", "true")
        recs = files.load(corpus).select(F.explode(parse("content")).alias("r"))
        return recs.agg(F.count("*").alias("n"), F.sum(F.length("r.value")).alias("bytes"),
                        F.sum(F.size("r.headers")).alias("headers")).collect()[0]  # fmt: skip

    import contextlib

    stack = contextlib.ExitStack()
    s3_opts = None
    if not args.no_s3:
        try:
            import moto  # noqa: F401
        except ImportError:
            print("(moto not installed: no S3 run)", file=sys.stderr)
        else:
            import os

            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
            from s3server import s3_server

            endpoint, client = stack.enter_context(s3_server())
            client.create_bucket(Bucket="bench")
            for root, _, names in os.walk(corpus):
                for n in names:
                    if n.endswith(".log"):
                        path = os.path.join(root, n)
                        with open(path, "rb") as f:
                            client.put_object(Bucket="bench", Key=os.path.relpath(path, corpus), Body=f.read())
            s3_opts = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "test",
                       "s3.secret_key": "test"}  # fmt: skip

    def ours_s3():
        df = spark.read.format("kafka-log").schema(RECORD_COLUMNS).options(**s3_opts).load("s3://bench/")
        return df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                      F.sum(F.size("headers")).alias("headers")).collect()[0]  # fmt: skip

    parquet = _scratch("kfmt-bench-parquet-") + "/t"
    spark.read.format("kafka-log").load(corpus).select("topic", "partition", "timestamp", "value").write.parquet(
        parquet
    )

    def grouped(df):
        rows = df.groupBy("topic", "partition").agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"),
                                                    F.max("timestamp").alias("last")).collect()  # fmt: skip
        return {"n": sum(r["n"] for r in rows), "bytes": sum(r["bytes"] for r in rows)}

    def query_ours():
        return grouped(spark.read.format("kafka-log").option("engine", "python")
                       .schema("topic string, partition int, timestamp timestamp, value binary").load(corpus))  # fmt: skip

    def query_plain():  # the README's first Spark line as a user writes it: no schema, Spark prunes the columns
        return grouped(spark.read.format("kafka-log").load(corpus))

    def query_parquet():
        return grouped(spark.read.parquet(parquet))

    def query_jvm():
        return grouped(kfmt.spark.read(spark, corpus, engine="jvm",
                                       schema="topic string, partition int, timestamp timestamp, value binary"))  # fmt: skip

    spark.dataSource.register(floor_source(parquet))

    def query_floor():
        return grouped(spark.read.format("kfmt-bench-floor").load())

    tree = {}
    queries = {PYTHON: query_ours, "Spark's Parquet reader": query_parquet, FLOOR: query_floor}
    if args.smoke:  # the suite's slice: the floor decodes nothing, and the Python engine wrote the Parquet files
        del queries[PYTHON], queries[FLOOR]
    if jvm.jar() is not None:
        queries[JVM] = query_jvm
        queries[PLAIN] = query_plain
        # (the suite's slice leaves the read_committed and decode_payloads pairs out: tests/test_jvm.py checks those)
        pairs = option_queries(spark, corpus, grouped, payloads=not args.smoke)
        for ours_name, theirs_name, ours_q, theirs_q in pairs:
            queries[ours_name], queries[theirs_name] = ours_q, theirs_q
    for job in queries.values() if not args.smoke else ():
        job()  # warm up (workers, the floor's cached batches)
    samples: dict = {name: [] for name in queries}
    order = list(queries.items())
    for r in range(args.rounds or max(args.runs, 5)):  # rounds interleaved, each query once per round, rotated
        for name, job in order[r % len(order) :] + order[: r % len(order)]:
            time.sleep(0.3)  # the JVM's background work after the last query (JIT, concurrent GC) settles first
            c0, t = tree_cpu(), time.perf_counter()
            row = job()
            samples[name].append((time.perf_counter() - t, tree_cpu() - c0, row))
    for name, got in samples.items():
        row = got[-1][2]
        tree[name] = (row["n"], row["bytes"], statistics.median(w for w, _, _ in got),
                      statistics.median(c for _, c, _ in got))  # fmt: skip

    results = {}
    jobs = [] if args.only_parquet else [("kfmt kafka-log data source", ours), ("Python UDF + kafka-python", baseline),
            ("kfmt, all 20 columns", ours_all_columns)]  # fmt: skip
    if jvm.jar() is not None and jobs:  # no Python worker: its worker CPU is 0 (the tree table counts the JVM)
        jobs.append(("kfmt, JVM engine", lambda: _agg(kfmt.spark.read(spark, corpus, engine="jvm",
                                                                        schema=RECORD_COLUMNS))))  # fmt: skip
    if "native" in available_backends() and jobs:
        jobs += [("kfmt, native backend", lambda: ours("native")), ("kfmt, python backend", lambda: ours("python"))]
    if s3_opts and jobs:
        jobs.append(("kfmt, from S3 (moto on 127.0.0.1)", ours_s3))
    for name, job in jobs:
        if not args.smoke:
            job()  # warm up (Python workers, JIT of the plan)
        times, cpus, row = [], [], None
        for _ in range(args.runs):
            c0 = worker_cpu()
            t = time.perf_counter()
            row = job()
            times.append(time.perf_counter() - t)
            cpus.append(worker_cpu() - c0)
        med, cpu = statistics.median(times), statistics.median(cpus)
        results[name] = (row["n"], row["bytes"], med, row["n"] / med, cpu, row["n"] / cpu if cpu else float("nan"))
    if started:
        spark.stop()
    stack.close()
    print(f"# kfmt bench-spark: {n_expected} records, master {args.master}, median of {args.runs} runs\n")
    print("| reader | records | value bytes | seconds | records/s | worker CPU s | records per worker CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name, (n, b, s, rps, cpu, rpc) in results.items():
        print(f"| {name} | {n} | {b} | {s:.2f} | {rps:,.0f} | {cpu:.2f} | {rpc:,.0f} |")
    print("\n| group by topic, partition (count, sum of value lengths, max timestamp) | records | value bytes | "
          "seconds | process-tree CPU s |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, (n, b, s, cpu) in tree.items():
        print(f"| {name} | {n} | {b} | {s:.2f} | {cpu:.2f} |")
    pn, pb, _, pc = tree["Spark's Parquet reader"]
    ok, ob, _, oc = tree.get(PYTHON, (pn, pb, 0, float("nan")))
    fn, fb, _, fc = tree.get(FLOOR, (pn, pb, 0, float("nan")))
    jn, jb, _, jc = tree.get(JVM, (pn, pb, 0, float("nan")))
    ln, lb, _, lc = tree.get(PLAIN, (pn, pb, 0, float("nan")))
    print(f"\nkafka-log / Parquet, CPU seconds of the whole process tree: {lc / pc:.2f}x (format('kafka-log')"
          f".load(path), no schema), {jc / pc:.2f}x (JVM engine, schema given), {oc / pc:.2f}x (Python engine)"
          + ("" if (ok, ob) == (pn, pb) == (fn, fb) == (jn, jb) == (ln, lb) else "  (WARNING: results differ)"))  # fmt: skip
    print(
        f"a Python data source that only hands over ready Arrow batches / Parquet: {fc / pc:.2f}x "
        "(the floor of any Python data source on this query)"
    )
    for ours_name, theirs_name, _, _ in pairs if jvm.jar() is not None else []:
        o, t = tree[ours_name], tree[theirs_name]
        print(
            f"{ours_name} / {theirs_name}: {o[3] / t[3]:.2f}x CPU"
            + ("" if o[:2] == t[:2] else "  (WARNING: results differ)")
        )
    rows = list(results.values())
    same = len({(r[0], r[1]) for r in rows}) <= 1 and (ok, ob) == (pn, pb) == (fn, fb) == (jn, jb) == (ln, lb)
    if rows:
        r1, r2, r3 = rows[0][3], rows[1][3], rows[2][3]
        print(f"\nkfmt / baseline (same five columns): {r1 / r2:.2f}x records/s; with all 20 columns: {r3 / r2:.2f}x"
              + ("" if same else "  (WARNING: results differ)"))  # fmt: skip
    if "kfmt, native backend" in results:
        nat, py = results["kfmt, native backend"], results["kfmt, python backend"]
        print(f"native / python backend in the data source: {nat[3] / py[3]:.2f}x records/s, "
              f"{nat[5] / py[5]:.2f}x records per worker CPU-second")  # fmt: skip
    if "kfmt, JVM engine" in results:
        print(f"JVM engine / Python engine (same five columns): {results['kfmt, JVM engine'][3] / rows[0][3]:.2f}x "
              "records/s")  # fmt: skip
    if "kfmt, from S3 (moto on 127.0.0.1)" in results:
        remote = results["kfmt, from S3 (moto on 127.0.0.1)"]
        print(f"from the loopback S3 server / from local disk: {remote[3] / rows[0][3]:.2f}x records/s")
    return 0 if same else 1


FLOOR = "Python data source handing over ready Arrow batches (the floor)"
PYTHON = "kafka-log data source, Python engine (logs in place)"
JVM = "kafka-log, JVM engine (kfmt.spark.read(..., engine='jvm', schema=...))"
PLAIN = "spark.read.format('kafka-log').load(path), no schema (the README's first line)"


def floor_source(parquet: str):
    """A Python data source that decodes nothing: each worker loads the Parquet copy's rows into memory once and
    hands the same Arrow batches over for every query, so its cost is what Spark's Python data source path itself
    costs (the task, the Arrow stream to the JVM, the JVM's rows): the least any Python source can take."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Part(InputPartition):
        def __init__(self, i):
            self.i = i

    class Reader(DataSourceReader):
        def partitions(self):
            return [Part(i) for i in range(4)]

        def read(self, part):
            import glob

            import pyarrow as pa
            import pyarrow.parquet as pq

            cache = sys.__dict__.setdefault("_kfmt_bench_floor", {})  # kept per worker process, across tasks
            if parquet not in cache:
                schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                    ("timestamp", pa.timestamp("us", tz="UTC")), ("value", pa.binary())])  # fmt: skip
                table = pq.read_table(sorted(glob.glob(f"{parquet}/*.parquet"))).select(schema.names).cast(schema)
                cache[parquet] = table.to_batches(max_chunksize=8192)
            yield from cache[parquet][part.i :: 4]

    class Floor(DataSource):
        @classmethod
        def name(cls):
            return "kfmt-bench-floor"

        def schema(self):
            return "topic string, partition int, timestamp timestamp, value binary"

        def reader(self, schema):
            return Reader()

    return Floor


def tree_cpu() -> float:
    """CPU seconds used so far by this process and every process below it (Spark's JVM, its Python daemons and
    workers), reaped children included (each /proc stat's utime, stime, cutime and cstime)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    stats, parent = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])
        stats[int(pid)] = sum(int(x) for x in fields[11:15]) / tick
    me, total = os.getpid(), 0.0
    for pid, cpu in stats.items():
        p = pid
        while p not in (me, 0, 1) and p in parent:
            p = parent[p]
        total += cpu if p == me else 0.0
    return total


def worker_cpu() -> float:
    """CPU seconds used so far by this user's pyspark Python workers and daemons (from /proc)."""
    import os

    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if b"pyspark.daemon" not in cmd and b"pyspark.worker" not in cmd:
                continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


def option_queries(spark, corpus: str, grouped, payloads: bool = True) -> list:
    """(kafka-log query, Parquet query, ...) pairs for the options the issue names: read_committed on the corpus, and
    on_corrupt=skip on a damaged copy of it (every third segment with a byte flipped halfway), each against Parquet
    of the same rows (written once, untimed, from what kfmt's Python engine reads)."""
    import os
    import shutil

    damaged = _scratch("kfmt-bench-damaged-") + "/logs"
    shutil.copytree(corpus, damaged)
    segs = sorted(os.path.join(r, n) for r, _, ns in os.walk(damaged) for n in ns if n.endswith(".log"))
    for p in segs[::3]:
        with open(p, "r+b") as f:
            size = os.path.getsize(p)
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0xFF]))
    cols = ("topic", "partition", "timestamp", "value")
    out = []
    sets = [("read_committed", corpus, {"isolation": "read_committed"}),
            ("on_corrupt=skip, damaged corpus", damaged, {"on_corrupt": "skip"})]  # fmt: skip
    for label, path, opts in sets if payloads else sets[1:]:  # (the suite's slice: skip's only)
        pq = _scratch("kfmt-bench-parquet-") + "/t"
        spark.read.format("kafka-log").options(engine="python", **opts).load(path).select(*cols).write.parquet(pq)

        def ours(path=path, opts=opts):
            return grouped(spark.read.format("kafka-log").options(**opts).load(path))

        def theirs(pq=pq):
            return grouped(spark.read.parquet(pq))

        out.append((f"format('kafka-log'), {label}", f"Parquet of those rows ({label})", ours, theirs))
    if payloads:
        out.append(payload_queries(spark))
    return out


def consumer_offsets(records: int) -> bytes:
    """A ``__consumer_offsets`` segment as a group coordinator writes one: offset commits (OffsetCommitKey v1,
    OffsetCommitValue v3) of 50 groups over 20 topics of 12 partitions, offsets and commit times moving on, and
    every 25th record a group's metadata (GroupMetadataValue v3 of 8 members with their ConsumerProtocol
    subscriptions and assignments: a real broker's, tests/vectors/kafka_internal_payloads.json); one record a
    batch, as the coordinator appends them."""
    import json
    import os
    import random
    import struct

    import kfmt

    def text(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    here = os.path.dirname(os.path.abspath(__file__))
    vectors = json.load(open(os.path.join(here, "..", "tests", "vectors", "kafka_internal_payloads.json")))["records"]
    group_value = next(bytes.fromhex(r["value"]) for r in vectors if r["topic"] == "__consumer_offsets"
                       and bytes.fromhex(r["key"])[:2] == b"\x00\x02")  # fmt: skip
    rng, out, ts = random.Random(7), bytearray(), 1_769_000_000_000
    for i in range(records):
        g, ts = rng.randrange(50), ts + rng.randrange(1, 40)
        if i % 25 == 0:
            key, value = struct.pack(">h", 2) + text(f"group-{g}"), group_value
        else:
            topic, part = f"topic-{rng.randrange(20)}", rng.randrange(12)
            key = struct.pack(">h", 1) + text(f"group-{g}") + text(topic) + struct.pack(">i", part)
            value = struct.pack(">hqi", 3, i * 7 + part, rng.randrange(30)) + text("") + struct.pack(">q", ts)
        out += kfmt.encode_batch([kfmt.Record(key=key, value=value, timestamp=ts)], base_offset=i)
    return bytes(out)


def payload_queries(spark) -> tuple:
    """decode_payloads on a ``__consumer_offsets`` log (:func:`consumer_offsets`: 200,000 records), against Parquet
    of the decoded rows: records per key type, and the decoded values' length."""
    import os

    from pyspark.sql import functions as F

    logs = _scratch("kfmt-bench-offsets-") + "/logs"
    os.makedirs(f"{logs}/__consumer_offsets-0")
    with open(f"{logs}/__consumer_offsets-0/{0:020d}.log", "wb") as f:
        f.write(consumer_offsets(200_000))
    cols = ("topic", "partition", "offset", "key_decoded", "value_decoded", "payload_error")
    pq = _scratch("kfmt-bench-parquet-") + "/t"
    spark.read.format("kafka-log").options(engine="python", decode_payloads="true").load(logs).select(
        *cols
    ).write.parquet(pq)

    def by_type(df):
        rows = df.groupBy(F.get_json_object("key_decoded", "$.type").alias("type")).agg(
            F.count("*").alias("n"), F.sum(F.length("value_decoded")).alias("bytes")).collect()  # fmt: skip
        return {"n": sum(r["n"] for r in rows), "bytes": sum(r["bytes"] or 0 for r in rows)}

    def ours():
        return by_type(spark.read.format("kafka-log").option("decode_payloads", "true").load(logs))

    def theirs():
        return by_type(spark.read.parquet(pq))

    label = "decode_payloads, __consumer_offsets"
    return (f"format('kafka-log'), {label}", f"Parquet of the decoded rows ({label})", ours, theirs)


def _scratch(prefix: str) -> str:
    """A temporary folder removed when the benchmark exits (its segments can be a gigabyte)."""
    import atexit
    import shutil

    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


if __name__ == "__main__":
    sys.exit(main())
