"""Structured Streaming: readStream.format("kafka-log") tails a log directory while batches are appended (partial
writes included), restarts from its checkpoint with every record written once, and writeStream appends
segments. Expected records come from kafka-python's reader of the same bytes where it applies, and from what
the test appended."""

import json
import os
import threading
import time

import pytest

import kfmt

pytest.importorskip("pyspark")


def _batch(base: int, n: int, topic_tag: str = "") -> bytes:
    recs = [kfmt.Record(key=b"k%d" % (base + i), value=f"{topic_tag}v{base + i}".encode(), timestamp=10_000 + base + i,
                        headers=[("h", b"%d" % i)]) for i in range(n)]  # fmt: skip
    return kfmt.encode_batch(recs, base_offset=base, codec="lz4" if base % 2 else "none")


def _offsets(spark, path):
    return sorted((r.partition, r.offset) for r in spark.read.parquet(path).select("partition", "offset").collect())


def _wait_for(pred, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.3)
    return False


def test_tailing_while_batches_are_appended(spark, tmp_path):
    """A query on a processing-time trigger while another thread appends batches to two partitions, some in
    two writes (the first half of a batch alone is waited for), rolls a segment, then the query is stopped,
    more is appended, and a restart from the checkpoint reads only the rest: every offset exactly once."""
    logs = tmp_path / "logs"
    for p in (0, 1):
        (logs / f"t-{p}").mkdir(parents=True)
        (logs / f"t-{p}" / f"{0:020d}.log").write_bytes(_batch(0, 5))
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    df = spark.readStream.format("kafka-log").option("startingOffsets", "earliest").load(str(logs))
    assert df.isStreaming

    def start():
        return (df.select("partition", "offset", "value", "headers").writeStream.format("parquet")
                .option("checkpointLocation", ck).trigger(processingTime="300 milliseconds").start(out))  # fmt: skip

    q = start()
    ends = {0: 5, 1: 5}
    halves = []

    def append():
        for step in range(6):
            for p in (0, 1):
                if p == 0 and step == 3:  # roll: a new segment named by the next offset
                    (logs / "t-0" / f"{ends[0]:020d}.log").touch()
                seg = sorted((logs / f"t-{p}").glob("*.log"))[-1]
                blob = _batch(ends[p], 3)
                with open(seg, "ab") as f:
                    if step % 2:
                        f.write(blob[:25])
                        f.flush()
                        halves.append((p, ends[p]))
                        time.sleep(0.8)  # long enough for triggers to see the half batch
                        f.write(blob[25:])
                    else:
                        f.write(blob)
                ends[p] += 3
            time.sleep(0.2)

    t = threading.Thread(target=append)
    t.start()
    t.join()
    q.processAllAvailable()
    want = sorted((p, o) for p in (0, 1) for o in range(ends[p]))
    assert _wait_for(lambda: len(_offsets(spark, out)) >= len(want))
    assert _offsets(spark, out) == want and halves
    progress = [p for p in q.recentProgress if p["numInputRows"]]
    assert len(progress) >= 2  # read in several micro-batches while the appends went on
    q.stop()
    for p in (0, 1):
        seg = sorted((logs / f"t-{p}").glob("*.log"))[-1]
        with open(seg, "ab") as f:
            f.write(_batch(ends[p], 4))
        ends[p] += 4
    q = start()
    q.processAllAvailable()
    q.stop()
    want = sorted((p, o) for p in (0, 1) for o in range(ends[p]))
    assert _offsets(spark, out) == want  # restarted from the checkpoint: nothing twice, nothing missed
    values = {(r.partition, r.offset): r.value for r in spark.read.parquet(out).collect()}
    assert all(values[k] == f"v{k[1]}".encode() for k in want)


def _engines():
    """The engines a stream is decoded by: the JVM engine (the default, where the jar is built) and kfmt's Python
    data source (engine=python, the fallback)."""
    from kfmt.spark.jvm import jar

    return ["jvm", "python"] if jar() else ["python"]


@pytest.mark.parametrize("engine", _engines())
def test_starting_offsets_and_trigger_limits(spark, tmp_path, engine):
    """startingOffsets latest (the default, as Spark's Kafka source) reads only what comes after the start;
    JSON starts mid-batch; maxOffsetsPerTrigger splits the backlog over several micro-batches. Both engines cut
    the micro-batches the same way (kfmt.spark.stream decides, asked by the JVM source on the driver)."""
    logs = tmp_path / "logs" / "t-0"
    logs.mkdir(parents=True)
    seg = logs / f"{0:020d}.log"
    seg.write_bytes(b"".join(_batch(b, 10) for b in range(0, 100, 10)))

    def run(name, **opts):
        reader = spark.readStream.format("kafka-log").option("engine", engine)
        for k, v in opts.items():
            reader = reader.option(k, v)
        df = reader.load(str(tmp_path / "logs"))
        return df.writeStream.format("memory").queryName(f"{name}_{engine}").start()

    q = run("latest")
    q.processAllAvailable()
    with open(seg, "ab") as f:
        f.write(_batch(100, 4))
    q.processAllAvailable()
    described = q.lastProgress["sources"][0]["description"]
    q.stop()
    assert ("jvm engine" in described) == (engine == "jvm"), described
    assert sorted(r.offset for r in spark.sql(f"select offset from latest_{engine}").collect()) == [100, 101, 102, 103]
    q = run("mid", startingOffsets=json.dumps({"t": {"0": 37}}), maxOffsetsPerTrigger=20)
    q.processAllAvailable()
    batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    ends = [p["sources"][0]["endOffset"] for p in q.recentProgress if p["numInputRows"]]
    q.stop()
    assert sorted(r.offset for r in spark.sql(f"select offset from mid_{engine}").collect()) == list(range(37, 104))
    assert len(batches) >= 3 and max(batches) <= 20
    first = json.loads(ends[0]) if isinstance(ends[0], str) else ends[0]
    assert first == {"t": {"0": 57}}, ends  # as Spark's Kafka source writes offsets
    q = run("parts", startingOffsets="earliest", minPartitions=4)  # ranges cut at batch boundaries
    q.processAllAvailable()
    q.stop()
    assert sorted(r.offset for r in spark.sql(f"select offset from parts_{engine}").collect()) == list(range(104))
    with pytest.raises(Exception, match="a stream has no end"):
        run("bad", endingOffsets="latest").processAllAvailable()


def _txn(base: int, n: int, pid: int) -> bytes:
    recs = [kfmt.Record(key=b"t%d" % (base + i), value=b"txn", timestamp=10_000 + base + i) for i in range(n)]
    return kfmt.encode_batch(recs, base_offset=base, producer_id=pid, producer_epoch=0, is_transactional=True)


def _marker(base: int, pid: int, kind: str) -> bytes:
    return kfmt.encode_batch([kfmt.control_record(kind, coordinator_epoch=0, timestamp=20_000 + base)],
                             base_offset=base, producer_id=pid, producer_epoch=0, is_transactional=True,
                             is_control=True)  # fmt: skip


@pytest.mark.parametrize("engine", _engines())
def test_a_read_committed_stream_stops_at_the_last_stable_offset(spark, tmp_path, engine):
    """read_committed streams as a Kafka consumer reads: a micro-batch ends at the partition's last stable offset
    (the first offset of its earliest open transaction), so records after an open transaction wait, even ones
    outside it; once its marker comes they are read, the transaction's records only if it committed, and
    aborted ones never. The records read are read_arrow's read_committed rows of the final log; segments rolled
    during the stream and a transaction spanning two segments included."""
    logs = tmp_path / "logs" / "t-0"
    logs.mkdir(parents=True)
    first = logs / f"{0:020d}.log"
    first.write_bytes(_batch(0, 10) + _txn(10, 5, pid=7) + _batch(15, 5) + _txn(20, 3, pid=8))
    reader = (spark.readStream.format("kafka-log").option("engine", engine).option("startingOffsets", "earliest")
              .option("isolation", "read_committed"))  # fmt: skip
    q = reader.load(str(tmp_path / "logs")).writeStream.format("memory").queryName(f"committed_{engine}").start()

    def offsets():
        return sorted(r.offset for r in spark.sql(f"select offset from committed_{engine}").collect())

    try:
        q.processAllAvailable()
        assert offsets() == list(range(10)), offsets()  # 15-19 wait behind pid 7's open transaction
        with open(first, "ab") as f:
            f.write(_marker(23, pid=7, kind="abort") + _batch(24, 2))
        q.processAllAvailable()
        assert offsets() == list(range(10)) + list(range(15, 20)), offsets()  # now pid 8's (at 20) holds them
        second = logs / f"{26:020d}.log"  # rolled: pid 8's transaction ends in the next segment
        second.write_bytes(_txn(26, 2, pid=8) + _marker(28, pid=8, kind="commit") + _batch(29, 3))
        q.processAllAvailable()
        assert "jvm engine" in q.lastProgress["sources"][0]["description"] or engine == "python"
    finally:
        q.stop()
    want = kfmt.read_arrow(str(tmp_path / "logs"), columns=["offset"], isolation="read_committed").column(0)
    assert offsets() == want.to_pylist() == [*range(10), *range(15, 23), 24, 25, 26, 27, 29, 30, 31]


def test_damaged_framing_stops_the_query(spark, tmp_path):
    logs = tmp_path / "logs" / "t-0"
    logs.mkdir(parents=True)
    bad = bytearray(_batch(0, 3))
    (logs / f"{0:020d}.log").write_bytes(bytes(bad) + b"\x00" * 8 + b"\x00\x00\x00\x05" + b"x" * 20)
    df = spark.readStream.format("kafka-log").option("startingOffsets", "earliest").load(str(tmp_path / "logs"))
    q = df.writeStream.format("memory").queryName("damaged").start()
    with pytest.raises(Exception, match=rf"log.entry.size at byte {len(bad) + 8}: entry size 5 is below the minimum"):
        q.processAllAvailable()
    q.stop()


def test_write_stream_appends_segments_once(spark, tmp_path):
    """writeStream.format("kafka-log"): each micro-batch is appended as segments with their indexes; the
    output, read back with kafka-python, holds every record once, also after a restart."""
    from kafka.record import MemoryRecords

    src = tmp_path / "logs" / "t-0"
    src.mkdir(parents=True)
    seg = src / f"{0:020d}.log"
    seg.write_bytes(_batch(0, 6))
    out, ck = tmp_path / "klog", str(tmp_path / "ck")
    df = spark.readStream.format("kafka-log").option("startingOffsets", "earliest").load(str(tmp_path / "logs"))

    def run():
        q = df.writeStream.format("kafka-log").option("codec", "zstd").option("checkpointLocation", ck).start(str(out))
        q.processAllAvailable()
        return q

    q = run()
    with open(seg, "ab") as f:
        f.write(_batch(6, 4))
    q.processAllAvailable()
    q.stop()
    with open(seg, "ab") as f:
        f.write(_batch(10, 3))
    run().stop()
    got = []
    for log in sorted((out / "t-0").glob("*.log")):
        assert log.with_suffix(".index").is_file() and log.with_suffix(".timeindex").is_file()
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            got += [(r.offset, r.value) for r in mr.next_batch()]
    assert got == [(o, f"v{o}".encode()) for o in range(13)]
    assert sorted(os.listdir(out / "_kfmt_stream"))  # the micro-batches committed
    # nothing staged is left behind once the queries stopped (#24 item 4)
    assert not list(out.rglob(".kfmt-*")), sorted(map(str, out.rglob(".kfmt-*")))


def test_a_replayed_micro_batch_is_not_written_twice(tmp_path):
    """Spark replays the last micro-batch after a crash between the sink's commit and its own commit log:
    the second commit of the same batch id writes nothing."""
    from kfmt.spark.stream import KafkaLogStreamWriter

    out = tmp_path / "klog"
    w = KafkaLogStreamWriter({"path": str(out), "checkpointLocation": "x"})

    def stage(name, blob):
        staged = tmp_path / "staging" / name
        staged.parent.mkdir(exist_ok=True)
        staged.write_bytes(blob)

        class Msg:  # as a task reports a staged file: its records and bytes
            files = [("t", 0, str(staged), sum(len(b.records) for b in kfmt.read_batches(blob)), len(blob))]
            skipped = 0

        return Msg()

    w.commit([stage("a", _batch(0, 3))], 0)
    seg = out / "t-0" / f"{0:020d}.log"
    first = seg.read_bytes()
    w.commit([stage("a", _batch(0, 3))], 0)  # the replay
    assert seg.read_bytes() == first
    # a crash after the segments went in and before the batch id did: the replay sees its offsets in place
    w.commit([stage("b", _batch(3, 2))], 1)
    (out / "_kfmt_stream" / "1").unlink()
    after = {p.name: p.read_bytes() for p in (out / "t-0").iterdir()}
    w.commit([stage("b", _batch(3, 2))], 1)
    assert {p.name: p.read_bytes() for p in (out / "t-0").iterdir()} == after
    assert (out / "_kfmt_stream" / "1").is_file()
    assert [r.offset for b in kfmt.read_batches(seg) for r in b.records] == list(range(3))
    # offsets that overlap without being the same batch are still refused
    with pytest.raises(ValueError, match="already holds offsets"):
        w.commit([stage("c", _batch(4, 3))], 2)
    assert sum(len(b.records) for s in (out / "t-0").glob("*.log") for b in kfmt.read_batches(s)) == 5


def test_tailing_a_store(spark, tmp_path):
    """On an S3 API server (127.0.0.1): new segment objects are picked up as they appear, one of them stored
    zstd-compressed whole (in frames per chunk) as a remote storage plugin does with compression on."""
    import zstandard

    pytest.importorskip("moto")
    from s3server import s3_server

    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="tiered")
        prefix = "orders-AAAAAAAAAAAAAAAAAAAAAA/0"
        s3.put_object(Bucket="tiered", Key=f"{prefix}/{0:020d}-seg0.log", Body=_batch(0, 5))
        df = (spark.readStream.format("kafka-log").option("startingOffsets", "earliest")
              .option("s3.endpoint", endpoint).option("s3.region", "us-east-1")
              .option("s3.access_key", "test").option("s3.secret_key", "test").load("s3://tiered/"))  # fmt: skip
        q = df.select("topic", "partition", "offset").writeStream.format("memory").queryName("tiered").start()
        q.processAllAvailable()
        raw = _batch(5, 7) + _batch(12, 3)
        packed = b"".join(zstandard.ZstdCompressor().compress(raw[i : i + 300]) for i in range(0, len(raw), 300))
        s3.put_object(Bucket="tiered", Key=f"{prefix}/{5:020d}-seg1.log", Body=packed)
        q.processAllAvailable()
        q.stop()
        rows = sorted(tuple(r) for r in spark.sql("select topic, partition, offset from tiered").collect())
        assert rows == [("orders", 0, o) for o in range(15)]


def test_stream_reader_offsets_without_a_session(tmp_path):
    """The reader's offsets step by step (planned and read in this process): a half-written batch is not
    in the latest offset until complete, a cap shares offsets by backlog, a commit forgets the entry
    positions before it, and each range reads exactly its records."""
    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from kfmt.spark.stream import KafkaLogStreamReader

    for p in (0, 1):
        (tmp_path / f"t-{p}").mkdir()
        (tmp_path / f"t-{p}" / f"{0:020d}.log").write_bytes(_batch(0, 4) + _batch(4, 4))
    r = KafkaLogStreamReader({"path": str(tmp_path), "startingOffsets": "earliest"}, ("partition", "offset"))
    start = r.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    blob = _batch(8, 5)
    with open(tmp_path / "t-0" / f"{0:020d}.log", "ab") as f:
        f.write(blob[:-1])
    assert r.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 8, "1": 8}}  # the partial batch waits
    with open(tmp_path / "t-0" / f"{0:020d}.log", "ab") as f:
        f.write(blob[-1:])
    capped = r.latestOffset(start, ReadMaxRows(7))
    assert sum(capped["t"].values()) <= 7 and capped["t"]["0"] >= capped["t"]["1"] > 0
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 13, "1": 8}}

    def rows(a, b):
        got = [
            x
            for part in r.partitions(a, b)
            for batch in r.read(part)
            for x in zip(*pa.Table.from_batches([batch]).to_pydict().values())
        ]  # noqa: E501
        return sorted(got)

    assert rows(start, capped) == sorted((p, o) for p in (0, 1) for o in range(capped["t"][str(p)]))
    assert rows(capped, end) == sorted((p, o) for p in (0, 1) for o in range(capped["t"][str(p)], end["t"][str(p)]))
    r.commit(end)
    assert r.tails[("t", 0)].lasts == [12]  # positions before the committed offset are forgotten
    # minPartitions: the ranges cut at batch boundaries into that many input partitions, the same records
    cut = KafkaLogStreamReader({"path": str(tmp_path), "startingOffsets": "earliest", "minPartitions": "5"},
                               ("partition", "offset"))  # fmt: skip
    a, b = cut.initialOffset(), cut.latestOffset(None, ReadAllAvailable())
    parts = cut.partitions(a, b)
    assert len(r.partitions(a, b)) == 2 and len(parts) >= 5
    assert all(s.start < s.end for part in parts for s in part.slices)
    got = sorted(x for part in parts for batch in cut.read(part) for x in zip(*batch.to_pydict().values()))
    assert got == sorted((p, o) for p in (0, 1) for o in range(end["t"][str(p)]))
    assert rows(capped, end) == sorted((p, o) for p in (0, 1) for o in range(capped["t"][str(p)], end["t"][str(p)]))


def test_a_starting_timestamp_takes_precedence_over_starting_offsets(tmp_path):
    """As in Spark's Kafka source: with startingTimestamp, startingOffsets (even latest) does not apply."""
    from kfmt.spark.stream import KafkaLogStreamReader

    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / f"{0:020d}.log").write_bytes(_batch(0, 4) + _batch(4, 4))  # timestamps 10000 + offset
    opts = {"path": str(tmp_path), "startingOffsets": "latest", "startingTimestamp": "10005"}
    assert KafkaLogStreamReader(opts).initialOffset() == {"t": {"0": 5}}
    assert KafkaLogStreamReader({"path": str(tmp_path)}).initialOffset() == {"t": {"0": 8}}  # latest by default


def test_a_stream_killed_and_restarted_reads_every_record_once(spark, tmp_path):
    """A slice of `make test-streams` (tests/stream_kills.py): the query SIGKILLed at random moments while a producer
    appends, restarted from its checkpoint each time; every appended record is in the kafka-log sink's output
    exactly once. The slice: one kill, the JVM engine (the default); the campaign: KFMT_STREAM_TRIALS kills with
    each engine. The last run, which reads the rest from the checkpoint, is a query in the suite's session."""
    from stream_kills import campaign

    trials = int(os.environ.get("KFMT_STREAM_TRIALS", "1"))
    engines = _engines() if "KFMT_STREAM_TRIALS" in os.environ else _engines()[:1]
    seed = int(os.environ.get("KFMT_STREAM_SEED", "7"))
    for engine in engines:
        res = campaign(tmp_path / engine, trials, engine, seed, spark)
        assert res["kills"] == trials and res["records"] > 0 and res["partitions"] == 3  # one appeared meanwhile
        print(f"\nstream kills ({engine} engine, seed {seed}): {res['kills']} SIGKILLs and restarts, "
              f"{res['records']} records appended meanwhile, each in the output exactly once")  # fmt: skip


@pytest.mark.parametrize("engine", _engines())
def test_available_now_after_a_crash_reads_what_is_there(spark, tmp_path, engine):
    """Trigger.AvailableNow restarted after a crash that left a micro-batch planned but not committed: the source
    (either engine) re-runs that batch and then reads on to what was there at the start (in maxOffsetsPerTrigger
    steps), instead of stopping after the re-run batch."""
    logs = tmp_path / "logs" / "t-0"
    logs.mkdir(parents=True)
    seg = logs / f"{0:020d}.log"
    seg.write_bytes(b"".join(_batch(b, 10) for b in range(0, 50, 10)))
    out, ck = str(tmp_path / "out"), tmp_path / "ck"
    df = (spark.readStream.format("kafka-log").option("engine", engine).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", 20).load(str(tmp_path / "logs")).select("partition", "offset"))  # fmt: skip

    def run(**trigger):
        q = df.writeStream.format("parquet").option("checkpointLocation", str(ck)).trigger(**trigger).start(out)
        q.awaitTermination() if "availableNow" in trigger else q.processAllAvailable()
        q.stop()
        return q

    run(processingTime="100 milliseconds")
    assert _offsets(spark, out) == [(0, o) for o in range(50)]
    last = max(int(f.name) for f in (ck / "commits").iterdir() if f.name.isdigit())
    for f in (ck / "commits" / str(last), ck / "commits" / f".{last}.crc"):  # the crash: planned, not committed
        f.unlink(missing_ok=True)
    with open(seg, "ab") as f:
        f.write(b"".join(_batch(b, 10) for b in range(50, 120, 10)))
    q = run(availableNow=True)
    assert _offsets(spark, out) == [(0, o) for o in range(120)]
    assert max(p["numInputRows"] for p in q.recentProgress) <= 20 and len(q.recentProgress) >= 4
