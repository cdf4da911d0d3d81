"""The kafka-log Spark data source and jobs (local[2], one shared session, a small synthesized corpus)."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import kfmt
import kfmt.spark
from kfmt.logdir.layout import find_segments
from kfmt.tools.synth import SynthConfig, synth

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    synth(d, SynthConfig(seed=7, topics=("orders", "clicks"), partitions=2, records=300, segment_bytes=24 * 1024))
    return d


def _expected(paths, include_control=False):
    rows = set()
    for seg in find_segments(paths):
        for b in kfmt.read_batches(open(seg.path, "rb").read()):
            if b.is_control and not include_control:
                continue
            for r in b.records:
                rows.add((seg.topic, seg.partition, r.offset, r.key, r.value, tuple(r.headers),
                          r.timestamp if r.timestamp != -1 else None, b.magic))  # fmt: skip
    return rows


def _rows(df):
    out = set()
    for r in df.select("topic", "partition", "offset", "key", "value", "headers", "timestamp", "magic").collect():
        ts = round(r["timestamp"].timestamp() * 1000) if r["timestamp"] is not None else None
        out.add((r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                 tuple((h["key"], h["value"]) for h in r["headers"]), ts, r["magic"]))  # fmt: skip
    return out


def test_rows_equal_read_batches(spark, corpus):
    df = spark.read.format("kafka-log").load(str(corpus))
    assert _rows(df) == _expected(corpus)
    with_ctl = spark.read.format("kafka-log").option("include_control", "true").load(str(corpus))
    assert with_ctl.filter("is_control").count() > 0
    assert set(df.columns) >= {"key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
                               "magic", "codec", "batch_base_offset", "producer_id", "producer_epoch",
                               "base_sequence", "is_transactional", "is_control"}  # fmt: skip


def _slices(partitions):
    return [s for p in partitions for s in p.slices]


def test_small_segments_share_tasks(spark, corpus):
    from kfmt.spark import KafkaLogReader

    segs = find_segments(str(corpus))
    parts = KafkaLogReader({"path": str(corpus), "min_partitions": "2"}).partitions()
    assert len(parts) < len(segs)  # packed: fewer tasks than files
    assert sorted(s.path for s in _slices(parts)) == sorted(s.path for s in segs)  # every segment, once
    one_each = KafkaLogReader({"path": str(corpus), "open_cost_bytes": str(1 << 40)}).partitions()
    assert len(one_each) == len(segs)
    df = spark.read.format("kafka-log").option("min_partitions", "2").load(str(corpus))
    assert _rows(df) == _expected(corpus)


def test_user_schema_projects_columns(spark, corpus):
    cols = "magic int, value binary, topic string, offset long, headers array<struct<key: string, value: binary>>"
    df = spark.read.format("kafka-log").schema(cols).load(str(corpus))
    assert df.columns == ["magic", "value", "topic", "offset", "headers"]
    got = {(r["topic"], r["offset"], r["value"], tuple((h["key"], h["value"]) for h in r["headers"]), r["magic"])
           for r in df.collect()}  # fmt: skip
    assert got == {(t, o, v, h, m) for t, _p, o, _k, v, h, _ts, m in _expected(corpus)}
    with pytest.raises(Exception, match="no column 'size'"):
        spark.read.format("kafka-log").schema("offset long, size int").load(str(corpus)).collect()
    with pytest.raises(Exception, match="column 'offset' is bigint, not int"):
        spark.read.format("kafka-log").schema("offset int").load(str(corpus)).collect()


def test_options_prune_segments_and_keep_rows(spark, corpus):
    """Pruning comes from options (part of the relation), as in Spark's Kafka source: subscribe, assign,
    startingOffsets (inclusive) and endingOffsets (exclusive)."""
    from kfmt.spark import KafkaLogReader

    all_parts = _slices(KafkaLogReader({"path": str(corpus)}).partitions())
    opts = {"path": str(corpus), "subscribe": "orders", "startingOffsets": '{"orders": {"0": 250, "1": 250}}'}
    pruned = _slices(KafkaLogReader(opts).partitions())
    assert 0 < len(pruned) < len(all_parts) and all(p.topic == "orders" for p in pruned)
    df = (spark.read.format("kafka-log").option("subscribe", "orders")
          .option("startingOffsets", '{"orders": {"0": 250, "1": 250}}')
          .option("endingOffsets", '{"orders": {"0": 280, "1": -1}}').load(str(corpus)))  # fmt: skip
    expected = {
        row for row in _expected(corpus) if row[0] == "orders" and row[2] >= 250 and (row[1] == 1 or row[2] < 280)
    }
    assert _rows(df) == expected and expected
    assert spark.read.format("kafka-log").option("assign", '{"clicks": [1]}').load(str(corpus)).select(
        "topic", "partition"
    ).distinct().collect() == [("clicks", 1)]


def test_reused_dataframe_and_view_answer_every_query(spark, corpus):
    """Spark reuses a Python source's planned partitions across queries on one DataFrame: every query
    must still return what a fresh load() returns."""
    expected = _expected(corpus)
    df = spark.read.format("kafka-log").load(str(corpus))
    n = len(expected)
    assert df.count() == n
    assert df.where("partition = 0").count() == sum(1 for r in expected if r[1] == 0)
    assert df.count() == n
    assert df.filter("topic = 'nope'").count() == 0  # prunes everything: an empty result, not an error
    assert df.count() == n
    df.createOrReplaceTempView("kl")
    assert spark.sql("SELECT count(*) FROM kl WHERE topic = 'orders'").collect()[0][0] == sum(
        1 for r in expected if r[0] == "orders")  # fmt: skip
    by_topic = {r[0]: r[1] for r in spark.sql("SELECT topic, count(*) FROM kl GROUP BY topic").collect()}
    assert by_topic == {t: sum(1 for r in expected if r[0] == t) for t in {r[0] for r in expected}}
    assert spark.read.format("kafka-log").option("subscribe", "nope").load(str(corpus)).count() == 0


def test_options_are_validated_on_the_driver(spark, corpus):
    for opts, msg in (({"startingOffset": "earliest"}, "unknown read option"),
                      ({"on_corrupt": "ignore"}, "on_corrupt"), ({"split_bytes": "big"}, "integer"),
                      ({"isolation": "serializable"}, "isolation"),
                      ({"kafka.isolation.level": "read-committed"}, "isolation")):  # fmt: skip
        with pytest.raises(Exception, match=msg):
            r = spark.read.format("kafka-log")  # a DataFrameReader keeps its options: a fresh one each time
            for k, v in opts.items():
                r = r.option(k, v)
            r.load(str(corpus)).count()
    with pytest.raises(Exception, match="no such file"):
        spark.read.format("kafka-log").load(str(corpus / "missing")).count()


def test_read_committed_leaves_out_aborted_transactions(spark, corpus):
    from kfmt.log.txn import transactions_of_files

    committed = spark.read.format("kafka-log").option("kafka.isolation.level", "read_committed").load(str(corpus))
    got = _rows(committed)
    every = _expected(corpus)
    dropped = every - got
    assert dropped and got <= every
    for topic, part in {(r[0], r[1]) for r in dropped}:
        segs = sorted(s.path for s in find_segments(str(corpus)) if (s.topic, s.partition) == (topic, part))
        t = transactions_of_files(segs)
        undecided = min(t.open.values(), default=None)  # a transaction without a marker: above the LSO
        assert all(any(lo <= r[2] <= hi for _, lo, hi in t.aborted) or (undecided is not None and r[2] >= undecided)
                   for r in dropped if (r[0], r[1]) == (topic, part))  # fmt: skip


def test_large_segments_split_at_batch_boundaries(spark, corpus):
    from kfmt.spark import KafkaLogReader

    parts = KafkaLogReader({"path": str(corpus), "split_bytes": "4096"}).partitions()
    assert len(parts) > len(find_segments(str(corpus)))
    assert all(len(p.slices) == 1 for p in parts)  # each slice (4 KiB + the open cost) fills a task
    df = spark.read.format("kafka-log").option("split_bytes", "4096").load(str(corpus))
    assert _rows(df) == _expected(corpus)


@pytest.fixture(scope="module")
def corrupt_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corrupt") / "bad-0"
    d.mkdir()
    blobs = [kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=i) for i in range(3)], base_offset=3 * k)
             for k in range(3)]  # fmt: skip
    data = bytearray(b"".join(blobs))
    data[len(blobs[0]) + 30] ^= 0xFF  # corrupt the second batch (CRC-covered header)
    (d / f"{0:020d}.log").write_bytes(bytes(data))
    return d, len(blobs[0])


def test_on_corrupt_modes(spark, corrupt_dir):
    d, pos = corrupt_dir
    reader = spark.read.format("kafka-log")
    with pytest.raises(Exception) as e:
        reader.load(str(d)).collect()
    assert f"at byte {pos}" in str(e.value) and "00000000000000000000.log" in str(e.value)
    assert sorted(r.offset for r in reader.option("on_corrupt", "skip").load(str(d)).collect()) == [0, 1, 2, 6, 7, 8]
    q = reader.option("on_corrupt", "quarantine").load(str(d)).collect()
    bad = [r for r in q if r.error is not None]
    assert len(bad) == 1 and bad[0].position == pos and "crc" in bad[0].error and len(bad[0].raw) > 61
    assert len([r for r in q if r.error is None]) == 6


def test_a_failure_is_one_line_in_a_session_with_the_jar_at_start(spark, corrupt_dir, tmp_path):
    """The suite's session has kfmt's jar in spark.jars from its start: a damaged segment and a tar archive each
    fail as kfmt's one line (tests/test_spark_sessions.py makes the sessions that add the jar later)."""
    import tarfile

    from kfmt.spark.errors import KafkaLogError

    d, _ = corrupt_dir
    with pytest.raises(KafkaLogError, match=r"^kafka-log: corrupt batch in .* at byte \d+"):
        spark.read.format("kafka-log").load(str(d)).count()
    with tarfile.open(tmp_path / "logs.tgz", "w:gz") as t:
        t.add(d, arcname="logs")
    with pytest.raises(KafkaLogError, match="a tar archive, not a Kafka log file"):
        spark.read.format("kafka-log").load(str(tmp_path / "logs.tgz")).count()


def test_write_then_read(spark, corpus, tmp_path):
    df = spark.read.format("kafka-log").load(str(corpus))
    out = tmp_path / "out"
    df.write.format("kafka-log").mode("overwrite").option("codec", "zstd").option("segment_bytes", 20000).save(str(out))
    back = spark.read.format("kafka-log").load(str(out))
    assert {r[:-1] for r in _rows(back)} == {r[:-1] for r in _expected(corpus)}  # same records, all magic 2 now
    assert {r[0] for r in back.select("codec").distinct().collect()} == {"zstd"}
    assert not list(out.rglob("*.tmp"))
    legacy = tmp_path / "v1"
    orders = df.filter("topic = 'orders'")
    with pytest.raises(Exception, match="magic 1 cannot carry headers"):  # refused, never dropped silently
        orders.write.format("kafka-log").mode("overwrite").option("magic", 1).save(str(legacy))
    assert not legacy.exists() or not list(legacy.rglob("*.log"))  # a failed job leaves nothing behind
    plain = orders.select("topic", "partition", "offset", "key", "value", "timestamp")
    plain.write.format("kafka-log").mode("overwrite").option("magic", 1).save(str(legacy))
    assert {r.magic for r in spark.read.format("kafka-log").load(str(legacy)).select("magic").distinct().collect()} == {
        1
    }


def test_writer_is_one_job_overwrite_append_and_any_partitioning(spark, corpus, tmp_path):
    df = spark.read.format("kafka-log").option("include_control", "true").load(str(corpus))
    n = df.count()
    out = tmp_path / "w"
    # rows of one topic-partition spread over tasks in any order still land in ordered, disjoint segments
    df.repartition(5).write.format("kafka-log").mode("overwrite").option("segment_bytes", 16000).save(str(out))
    back = spark.read.format("kafka-log").option("include_control", "true").load(str(out))
    assert back.count() == n
    for d in out.iterdir():
        ranges = [(b.base_offset, b.last_offset) for seg in sorted(d.glob("*.log")) for b in kfmt.read_batches(seg)]
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), d
    # producer state, transactional flags and control batches are kept
    cols = ("topic, partition, offset, producer_id, producer_epoch, base_sequence, is_transactional, is_control, "
            "partition_leader_epoch, timestampType, delete_horizon, timestamp")  # fmt: skip
    assert df.filter("partition_leader_epoch > 0").count() > 0
    v2 = "magic = 2"  # legacy rows are up-converted as Kafka does (CreateTime, no leader epoch): compared below
    assert {tuple(r) for r in back.filter("topic != 'legacy'").selectExpr(*cols.split(", ")).collect()} == {
        tuple(r) for r in df.filter(v2).selectExpr(*cols.split(", ")).collect()}  # fmt: skip
    base = "topic, partition, offset, key, value, timestamp"
    assert {tuple(r) for r in back.filter("topic = 'legacy'").selectExpr(*base.split(", ")).collect()} == {
        tuple(r) for r in df.filter("magic < 2").selectExpr(*base.split(", ")).collect()}  # fmt: skip
    # overwrite replaces the target's segments: no rows left over from before
    df.filter("topic = 'orders'").write.format("kafka-log").mode("overwrite").save(str(out))
    assert spark.read.format("kafka-log").option("include_control", "true").load(str(out)).count() == df.filter(
        "topic = 'orders'").count()  # fmt: skip
    assert not [p for p in out.rglob("*") if "staging" in p.name]
    # append: offsets already there are refused, new ones are added
    with pytest.raises(Exception, match="already holds offsets"):
        df.filter("topic = 'orders'").write.format("kafka-log").mode("append").save(str(out))
    with pytest.raises(Exception, match="unknown write option"):
        df.write.format("kafka-log").mode("overwrite").option("codex", "zstd").save(str(out))


def test_writer_keeps_log_append_time_leader_epoch_and_delete_horizon(spark, tmp_path):
    src = tmp_path / "src" / "t-0"
    src.mkdir(parents=True)
    recs = [kfmt.Record(key=b"k%d" % i, value=None if i == 2 else b"v", timestamp=1000 + i) for i in range(3)]
    (src / "00000000000000000000.log").write_bytes(
        kfmt.encode_batch(recs, timestamp_type=1, max_timestamp=5000, partition_leader_epoch=4, codec="gzip")
        + kfmt.encode_batch(recs, base_offset=3, has_delete_horizon=True, base_timestamp=86400000,
                            partition_leader_epoch=5, producer_id=11, producer_epoch=2, base_sequence=7)
        # timestamps as Kafka may store them: before 1970, beyond what Spark's timestamps hold, none (-1)
        + kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=t) for t in (-2, 2**62, -1)], base_offset=6)
    )  # fmt: skip
    out = tmp_path / "out"
    spark.read.format("kafka-log").load(str(src.parent)).write.format("kafka-log").mode("overwrite").save(str(out))
    keep = ("base_offset", "last_offset", "partition_leader_epoch", "timestamp_type", "max_timestamp",
            "has_delete_horizon", "producer_id", "producer_epoch", "base_sequence")  # fmt: skip

    def facts(folder):
        return [
            (tuple(getattr(b, f) for f in keep), [(r.offset, r.key, r.value, r.timestamp) for r in b.records])
            for seg in sorted(folder.rglob("*.log")) for b in kfmt.read_batches(seg)
        ]  # fmt: skip

    assert facts(out) == facts(src.parent)
    (b1, b2, _) = [b for seg in out.rglob("*.log") for b in kfmt.read_batches(seg)]
    assert b1.timestamp_type == 1 and b1.max_timestamp == 5000 and b2.base_timestamp == 86400000


def test_every_save_mode(spark, corpus, tmp_path):
    """Spark runs Python sources only in append/overwrite; kfmt.spark.save gives errorifexists (default) and
    ignore their meaning, and a plain df.write.save() is refused by Spark before anything is written."""
    from pyspark.errors import AnalysisException

    import kfmt.spark

    df = spark.read.format("kafka-log").load(str(corpus)).filter("topic = 'orders'")
    n = df.count()
    out = tmp_path / "modes"
    with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("kafka-log").save(str(out))
    assert not out.exists() or not list(out.rglob("*.log"))
    assert kfmt.spark.save(df, str(out)) is True  # errorifexists on an empty target writes
    assert spark.read.format("kafka-log").load(str(out)).count() == n
    assert (out / "_KFMT_SUCCESS").exists()  # written last, by the job's commit
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*.log"))
    with pytest.raises(FileExistsError, match="already holds"):
        kfmt.spark.save(df, str(out))
    assert kfmt.spark.save(df, str(out), mode="ignore") is False
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*.log")) == before
    assert kfmt.spark.save(df, str(out), mode="overwrite", codec="lz4") is True
    assert {b.codec for seg in out.rglob("*.log") for b in kfmt.read_batches(seg)} == {"lz4"}
    with pytest.raises(ValueError, match="unknown save mode"):
        kfmt.spark.save(df, str(out), mode="upsert")
    # a job killed before its commit left its staging folder: the next write job removes it
    stale = out / f".kfmt-staging-{2**22 + 7}-{'ab' * 16}"
    (stale / "t-0").mkdir(parents=True)
    kfmt.spark.save(df, str(out), mode="overwrite")
    assert not stale.exists()
    with pytest.raises(ValueError, match="unknown write option"):
        kfmt.spark.save(df, str(out), mode="overwrite", codex="lz4")


def test_compare_equals_diff_corpus_mode(spark, corpus):
    from kfmt.log.measure import corpus_sizes
    from kfmt.spark.jobs import compare

    fmts, codecs = ["kafka_v1", "kafka_v2", "kip98_draft"], ["none", "lz4"]
    whole = corpus_sizes(fmts, [str(corpus)], tuple(codecs))
    assert compare(spark, str(corpus), fmts, codecs) == whole
    # the demo attributes only the fields it reports: the other formats' totals stay, their fields are left out
    only_v2 = compare(spark, str(corpus), fmts, codecs, fields=["kafka_v2"])
    assert only_v2["kafka_v2"] == whole["kafka_v2"] and only_v2["kafka_v1"]["none"]["fields"] == {}
    assert {k: v for k, v in only_v2["kafka_v1"]["none"].items() if k != "fields"} == {
        k: v for k, v in whole["kafka_v1"]["none"].items() if k != "fields"
    }


def test_reader_ships_only_picklable_state(corpus):
    """Executors need nothing but importable modules: unpickle in a fresh interpreter and read."""
    from kfmt.spark import KafkaLogReader

    r = KafkaLogReader({"path": str(corpus)})
    blob = pickle.dumps((r, r.partitions()[0]))
    code = ("import pickle, sys; r, p = pickle.loads(sys.stdin.buffer.read()); "
            "n = sum(b.num_rows for b in r.read(p)); print(n)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True)
    assert int(out.stdout) > 0


def test_synth_is_deterministic_and_kafka_python_reads_it(tmp_path):
    from kafka.record.memory_records import MemoryRecords

    a, b = tmp_path / "a", tmp_path / "b"
    cfg = SynthConfig(seed=3, topics=("t",), partitions=1, records=200, segment_bytes=8000)
    synth(a, cfg)
    synth(b, cfg)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    for seg in find_segments(str(a)):
        data = open(seg.path, "rb").read()
        ours = [(r.offset, r.key, r.value) for bt in kfmt.read_batches(data) for r in bt.records]
        theirs, mr = [], MemoryRecords(data)
        while (bt := mr.next_batch()) is not None:
            theirs += [(r.offset, r.key, r.value) for r in bt]
        assert ours == theirs


def test_spark_convert_keeps_producer_state_and_markers(spark, corpus, tmp_path):
    from kfmt.spark.jobs import convert

    out = tmp_path / "sc"
    convert(spark, str(corpus), str(out), magic=2, codec="zstd")
    fields = ("base_offset", "last_offset", "producer_id", "producer_epoch", "base_sequence", "is_transactional",
              "is_control")  # fmt: skip
    for seg in find_segments(str(corpus)):
        if seg.topic == "legacy":
            continue
        src = [tuple(getattr(b, f) for f in fields) for b in kfmt.read_batches(seg.path)]
        got = [tuple(getattr(b, f) for f in fields) for p in sorted((out / f"{seg.topic}-{seg.partition}").glob("*.log"))
               for b in kfmt.read_batches(p)]  # fmt: skip
        assert set(src) <= set(got)
    assert any(b.is_control for p in out.rglob("*.log") for b in kfmt.read_batches(p))
    # published whole with its counts; an existing output is refused unless overwrite; nothing left beside it
    import json

    marker = json.loads((out / "_KFMT_SUCCESS").read_text())
    assert marker["records_out"] == marker["records_in"] > 0 and marker["tool"] == "kfmt spark convert"
    with pytest.raises(FileExistsError):
        convert(spark, str(corpus), str(out), magic=2, codec="zstd")
    res = convert(spark, str(corpus), str(out), magic=2, codec="lz4", overwrite=True)
    assert json.loads((out / "_KFMT_SUCCESS").read_text())["codec"] == "lz4" and res["records_out"] > 0
    assert [p.name for p in tmp_path.iterdir() if ".kfmt-" in p.name] == []


@pytest.fixture(scope="module")
def mutated_logs(tmp_path_factory):
    """Damaged logs mixing v0, v1 and v2 (one topic-partition per log), and kfmt.convert's figures for each."""
    import random

    from conftest import mixed_log, mutated
    from kfmt.log.conversion import convert as convert_bytes

    rng = random.Random(77)
    src = tmp_path_factory.mktemp("mutated") / "src"
    logs = []
    for i in range(12):
        data = mutated(rng, mixed_log(rng))
        (src / f"t-{i}").mkdir(parents=True)
        (src / f"t-{i}" / "00000000000000000000.log").write_bytes(data)
        logs.append(data)
    expect = [convert_bytes(d, to_magic=1, skip_corrupt=True) for d in logs]
    assert sum(not e.complete for e in expect) >= 3, "the seed must damage some logs"
    return src, expect


def test_spark_convert_accounts_for_every_record_of_mutated_mixed_logs(spark, tmp_path, mutated_logs):
    """records in = records out + records reported lost, and every unread byte counted, on damaged logs mixing
    v0, v1 and v2 (one topic-partition per log); the per-log figures agree with kfmt.convert's."""
    from kfmt.spark.jobs import convert

    src, expect = mutated_logs
    for magic, codec in ((2, "zstd"), (1, "gzip")):
        res = convert(spark, str(src), str(tmp_path / f"out{magic}"), magic=magic, codec=codec, skip_corrupt=True)
        assert res["records_in"] == res["records_out"] + res["records_lost"], res
        assert res["records_in"] == sum(e.records_in for e in expect)
        assert res["bytes_unread"] == sum(e.bytes_unread for e in expect)
        if magic == 1:
            assert res["records_lost"] == sum(e.records_lost for e in expect) > 0


def _spark_convert_cli(*args):
    """`kfmt spark convert` (its own Spark session, so in a subprocess)."""
    return subprocess.run([sys.executable, "-m", "kfmt", "spark", "convert", *args, "--master", "local[2]"],
                          capture_output=True, text=True)  # fmt: skip


def _cli_in_session(spark, capfd, *argv):
    """`kfmt spark ...` called in a process where a Spark session runs: it uses that session and leaves it
    running (the tests' shared one; a notebook's). Returns (exit status, stdout, stderr)."""
    from kfmt.tools.cli import main

    capfd.readouterr()
    rc = main(["spark", *argv])
    out, err = capfd.readouterr()
    assert spark.range(3).count() == 3, "the caller's session was stopped"
    return rc, out, err


def test_spark_convert_command_counts_the_damage(spark, capfd, tmp_path, mutated_logs):
    """The command line with --skip-corrupt: the damage counted, exit 1."""
    src, expect = mutated_logs
    rc, out, err = _cli_in_session(spark, capfd, "convert", str(src), str(tmp_path / "cli"), "--skip-corrupt")
    assert rc == 1 and "corrupt batch(es) or unreadable tail(s)" in err, err[-2000:]
    assert f"of {sum(e.records_in for e in expect)} records" in out


def test_spark_convert_command_without_skip_corrupt_writes_nothing(tmp_path, mutated_logs):
    """Without --skip-corrupt the job fails with the reader's one-line reason and nothing is written."""
    src, _ = mutated_logs
    r = _spark_convert_cli(str(src), str(tmp_path / "strict"))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    reason = [ln for ln in r.stderr.splitlines() if ln.startswith("kfmt spark convert:")]
    assert len(reason) == 1 and "kafka-log: corrupt batch in" in reason[0] and "nothing written" in reason[0]
    log = reason[0].rsplit("(Spark's log: ", 1)[1].rstrip(")")
    kept = open(log).read()  # Spark's own report of the failed task is kept, in the log the message names
    assert "ERROR" in kept and "corrupt batch in" in kept
    os.unlink(log)
    assert not list((tmp_path / "strict").rglob("*.log"))


def test_damaged_framing_never_fails_skip_or_quarantine(spark, corpus, tmp_path):
    """A huge size in the middle, an entry size below 14, a zero-filled tail, a non-UTF-8 header key: skip
    and quarantine read what read_batches(on_corrupt=...) reads, one quarantine row per damaged region."""
    import struct

    seg = sorted(corpus.glob("orders-0/*.log"))[0].read_bytes()
    entries = [(p, e) for p, e, _ in kfmt.scan(seg)]
    bad = bytearray(seg)
    struct.pack_into(">i", bad, entries[2][0] + 8, 0x7FFF0000)
    struct.pack_into(">i", bad, entries[5][0] + 8, 3)
    bad += bytes(300_000)
    odd = kfmt.encode_batch([kfmt.Record(value=b"v", headers=[("h\udcff", b"1")], timestamp=1)], base_offset=10**6)
    bad += odd
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(bytes(bad))
    errors: list = []
    want = sum(len(b.records) for b in kfmt.read_batches(bytes(bad), on_corrupt=errors.append) if not b.is_control)
    assert len(errors) == 3 and errors[-1].zero_filled
    skip = spark.read.format("kafka-log").option("on_corrupt", "skip").load(str(tmp_path))
    assert skip.count() == want
    q = spark.read.format("kafka-log").option("on_corrupt", "quarantine").load(str(tmp_path))
    bad_rows = q.filter("error is not null").select("position", "error", "raw").collect()
    assert sorted(r["position"] for r in bad_rows) == sorted(e.batch_position for e in errors)
    assert max(len(r["raw"]) for r in bad_rows) <= 1 << 20
    assert q.filter("error is null").count() == want
    keys = [h["key"] for r in skip.filter("offset = 1000000").collect() for h in r["headers"]]
    assert keys == ["h\ufffd"]
    with pytest.raises(Exception, match="kafka-log: corrupt batch"):
        spark.read.format("kafka-log").load(str(tmp_path)).count()


def test_spark_cli_checks_arguments_before_starting_spark(corpus, capsys):
    from kfmt.tools.cli import main

    assert main(["spark", "compare", str(corpus / "missing")]) == 2
    assert main(["spark", "compare", str(corpus), "--formats", "kafka_v9"]) == 2
    assert main(["spark", "convert", str(corpus), "x", "--magic", "1", "--codec", "zstd"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "kafka_v9" in err and "zstd" in err


#: Fetch responses real brokers sent (kafka-rust's test data, MIT): the README's protocol example reads one
RAW_FETCH = (
    Path(__file__).resolve().parent.parent.parent
    / "shared/fixtures/wire-captures/kafka-rust+kafka-rust/raw-fetch-responses-not-pcap"
)


def _readme_python_blocks():
    """Every Python block of the README and the docs, in the site's order."""
    from test_readme import doc_blocks

    return [text for _, text, _ in doc_blocks("python")]


def test_readme_python_blocks_run(spark, corpus, tmp_path, monkeypatch):
    """Every Python block of the README runs as written: /data/kafka-logs is a synthesized corpus, the
    segment file the first block opens is one of its segments, `spark` is a live session, and the S3
    endpoint is an S3 API server started here (moto) whose bucket "tiered" holds the corpus laid out as a
    remote storage plugin writes it."""
    import shutil

    pytest.importorskip("moto")
    from s3server import s3_server

    blocks = _readme_python_blocks()
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    shutil.copy(sorted(corpus.glob("orders-0/*.log"))[0], tmp_path / "00000000000000000000.log")
    shutil.copy(RAW_FETCH / "fetch2.mytopic.nocompression.kafka.0900", tmp_path)  # the protocol's example frame
    captures = RAW_FETCH.parent.parent  # the kafka-capture blocks: /data/kafka.pcapng, /data/captures (a folder
    shutil.copy(captures / "ntop+nDPI" / "kafka.pcapng", tmp_path)  # of the public captures, one at its top too)
    shutil.copytree(captures, tmp_path / "captures")
    shutil.copy(captures / "ntop+nDPI" / "kafka.pcapng", tmp_path / "captures")
    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="tiered")
        s3.create_bucket(Bucket="archive")
        for seg in find_segments(corpus):
            key = f"{seg.topic}-{'T' * 22}/{seg.partition}/{seg.base_offset:020d}-seg.log"
            s3.put_object(Bucket="tiered", Key=key, Body=open(seg.path, "rb").read())
        for block in blocks:
            code = block.replace("/data/kafka-logs", str(corpus)).replace("/data/out", str(tmp_path / "out"))
            code = code.replace("/data/kafka.pcapng", str(tmp_path / "kafka.pcapng"))
            code = code.replace("/data/captures", str(tmp_path / "captures"))
            code = code.replace("http://127.0.0.1:9000", endpoint)
            exec(compile(code, "README.md", "exec"), {"spark": spark, "print": lambda *a, **k: None})
        archived = [o["Key"] for o in s3.list_objects_v2(Bucket="archive")["Contents"]]
    assert list((tmp_path / "out").rglob("*.log"))  # the Spark block wrote the whole DataFrame
    total = spark.read.format("kafka-log").load(str(corpus)).count()
    assert sum(1 for k in archived if k.endswith(".log")) and any(k.endswith(".timeindex") for k in archived)
    assert spark.read.parquet(str(tmp_path / "out-stream")).count() == total  # the streaming block, once each


def test_docs_sql_blocks_run(spark, corpus, tmp_path, monkeypatch):
    """Every SQL statement of the README's and the docs' ```sql blocks runs in Spark as written (/data/kafka-logs is
    the synthesized corpus), and the query gives the source's rows."""
    from test_readme import doc_blocks

    monkeypatch.chdir(tmp_path)  # a managed table's warehouse, if any, goes here
    blocks = [text for _, text, _ in doc_blocks("sql")]
    assert blocks
    spark.sql("DROP TABLE IF EXISTS logs")
    try:
        for block in blocks:
            for statement in (x.strip() for x in block.split(";")):
                if statement:
                    got = spark.sql(statement.replace("/data/kafka-logs", str(corpus))).collect()
        want = spark.read.format("kafka-log").load(str(corpus)).groupBy("topic").count().orderBy("topic").collect()
        assert [tuple(r) for r in got] == [tuple(r) for r in want] and got
    finally:
        spark.sql("DROP TABLE IF EXISTS logs")


def test_reading_from_an_s3_server_equals_local(spark, corpus):
    """The corpus uploaded to an S3 API server on 127.0.0.1 (moto): load('s3a://...') gives the rows
    load(local path) gives, pushdown-style options included."""
    pytest.importorskip("moto")
    from s3server import s3_server

    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="logs")
        for seg in find_segments(corpus):
            rel = os.path.relpath(seg.path, corpus)
            s3.put_object(Bucket="logs", Key=f"kafka/{rel}", Body=open(seg.path, "rb").read())
        reader = (spark.read.format("kafka-log").option("s3.endpoint", endpoint).option("s3.region", "us-east-1")
                  .option("s3.access_key", "test").option("s3.secret_key", "test"))  # fmt: skip
        remote = reader.load("s3a://logs/kafka")
        assert _rows(remote) == _rows(spark.read.format("kafka-log").load(str(corpus)))
        only = reader.option("subscribe", "orders").load("s3://logs/kafka")
        assert only.count() == spark.read.format("kafka-log").option("subscribe", "orders").load(str(corpus)).count()
        assert {r["file"].split("://")[0] for r in remote.select("file").distinct().collect()} == {"s3a"}


def test_writing_to_an_s3_server(spark, corpus, tmp_path):
    """save() to s3a:// (append, then overwrite) on the S3 API server: the objects written are the segments,
    indexes and broker files a local write gives, byte for byte, and reading them back gives the rows. (The store
    is written by the Python data source, the local folder by the JVM's writer: zstd, whose bytes both engines'
    compressors write alike; lz4 and snappy libraries differ in the compressed bytes they choose.)"""
    pytest.importorskip("moto")
    from s3server import s3_server

    df = spark.read.format("kafka-log").load(str(corpus))
    opts = {
        "magic": 2,
        "codec": "zstd",
        "segment_bytes": 16 * 1024,
        "topic_ids": json.dumps({t: c * 22 for t, c in (("orders", "A"), ("clicks", "B"), ("legacy", "C"))}),
    }
    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="out")
        store = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "test", "s3.secret_key": "test"}
        kfmt.spark.save(df, "s3a://out/logs", mode="errorifexists", **opts, **store)
        local = tmp_path / "local"
        kfmt.spark.save(df, str(local), mode="errorifexists", **opts)
        # (pyarrow leaves a "logs/" folder marker when the staging folder goes, as S3 consoles make them)
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket="out")["Contents"] if not o["Key"].endswith("/")}
        files = {str(p.relative_to(local)): p for p in local.rglob("*") if p.is_file()}
        assert {k.removeprefix("logs/") for k in keys} == set(files)  # no staging left behind
        for rel, p in files.items():
            if rel != "_KFMT_SUCCESS":
                assert s3.get_object(Bucket="out", Key=f"logs/{rel}")["Body"].read() == p.read_bytes(), rel
        reader = spark.read.format("kafka-log").options(**store)
        back = reader.load("s3a://out/logs")
        cols = ("topic", "partition", "offset", "key", "value")
        assert sorted(back.select(*cols).collect()) == sorted(df.select(*cols).collect())
        with pytest.raises(Exception, match="already holds"):
            kfmt.spark.save(df, "s3a://out/logs", mode="errorifexists", **store)
        with pytest.raises(Exception, match="already holds offsets"):
            kfmt.spark.save(df, "s3a://out/logs", mode="append", **store)
        orders = df.filter("topic = 'orders'")
        kfmt.spark.save(orders, "s3a://out/logs", mode="overwrite", **opts, **store)
        after = {o["Key"] for o in s3.list_objects_v2(Bucket="out")["Contents"]}
        assert not any(k.startswith("logs/clicks-") and k.endswith(".log") for k in after)
        assert reader.load("s3a://out/logs").count() == orders.count()


def test_kafka_source_options_offline(spark, corpus):
    """A job written for Spark's Kafka source: includeHeaders gives NULL headers where a record has none,
    minPartitions is min_partitions, and options that cannot apply to files are refused with the reason."""
    plain = spark.read.format("kafka-log").load(str(corpus))
    spark_like = (
        spark.read.format("kafka-log").option("includeHeaders", "true").option("minPartitions", 3).load(str(corpus))
    )
    assert spark_like.count() == plain.count()
    empty = plain.filter("size(headers) = 0").count()
    assert empty > 0 and spark_like.filter("headers IS NULL").count() == empty
    assert spark_like.filter("size(headers) > 0").count() == plain.filter("size(headers) > 0").count()
    for opt, why in (("kafka.bootstrap.servers", "not a broker"), ("failOnDataLoss", "on_corrupt"),
                     ("maxOffsetsPerTrigger", "micro-batch"), ("kafka.security.protocol", "Kafka client setting")):  # fmt: skip
        with pytest.raises(Exception, match=why):
            spark.read.format("kafka-log").option(opt, "x").load(str(corpus)).count()


def _first_at(corpus, ts):
    """Per topic-partition, the first offset whose record (control records too) has a timestamp >= ts, read
    with read_batches: what a broker's ListOffsets by timestamp answers."""
    first: dict = {}
    for seg in find_segments(corpus):
        for b in kfmt.read_batches(seg.path):
            for r in b.records:
                if r.timestamp >= ts and (seg.topic, seg.partition) not in first:
                    first[(seg.topic, seg.partition)] = r.offset
    return first


def test_timestamp_options(spark, corpus):
    """startingTimestamp / endingTimestamp / ...ByTimestamp select offsets as Spark's Kafka source does:
    from (to, exclusive) the first record at or after the timestamp in each partition."""
    df = spark.read.format("kafka-log").load(str(corpus))
    ms = sorted(round(r[0].timestamp() * 1000) for r in df.select("timestamp").collect() if r[0] is not None)
    t = ms[len(ms) // 2]
    first = _first_at(corpus, t)
    all_rows = {(r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect()}
    tps = {(tp, p) for tp, p, _ in all_rows}
    want_from = {x for x in all_rows if (x[0], x[1]) in first and x[2] >= first[(x[0], x[1])]}
    want_to = {x for x in all_rows if (x[0], x[1]) not in first or x[2] < first[(x[0], x[1])]}
    assert want_from and want_to and want_from | want_to == all_rows
    key = ("topic", "partition", "offset")
    missing = tps - set(first)  # partitions with no record that late (the legacy v0 one has no timestamps)

    def reader():  # a fresh one each time: DataFrameReader.option() changes the reader it is called on
        return spark.read.format("kafka-log")

    if missing:
        with pytest.raises(Exception, match="no record with a timestamp at or after"):
            reader().option("startingTimestamp", t).load(str(corpus)).count()
    got = (
        reader().option("startingTimestamp", t).option("startingOffsetsByTimestampStrategy", "latest").load(str(corpus))
    )
    assert {tuple(r) for r in got.select(*key).collect()} == want_from
    got = reader().option("endingTimestamp", str(t)).load(str(corpus))
    assert {tuple(r) for r in got.select(*key).collect()} == want_to
    tp = sorted(first)[0]
    per = json.dumps({tp[0]: {str(tp[1]): t}})
    got = reader().option("startingOffsetsByTimestamp", per).option("subscribe", tp[0]).load(str(corpus))
    assert {tuple(r) for r in got.select(*key).collect()} == {
        x for x in all_rows if x[0] == tp[0] and (x[1] != tp[1] or x[2] >= first[tp])
    }
    with pytest.raises(Exception, match="milliseconds"):
        reader().option("startingTimestamp", "yesterday").load(str(corpus)).count()


def test_partitions_follow_the_session(corpus):
    """register() takes the session's parallelism and file-split sizes as the reader's defaults."""
    from kfmt.spark import KafkaLogReader, session_defaults

    class Conf:
        def get(self, k, d=None):
            return {"spark.sql.files.maxPartitionBytes": "64k", "spark.sql.files.openCostInBytes": "1024b"}.get(k, d)

    class Ctx:
        defaultParallelism = 7

    class Session:
        conf, sparkContext = Conf(), Ctx()

    defaults = session_defaults(Session())
    assert defaults == {"min_partitions": 7, "split_bytes": 64 * 1024, "open_cost_bytes": 1024}
    r = KafkaLogReader({"path": str(corpus)}, None, defaults)
    assert (r.min_partitions, r.split_bytes, r.open_cost) == (7, 65536, 1024)
    total = sum(s.size for s in r.segments)
    assert len(r.partitions()) >= min(7, total // 65536)
    assert KafkaLogReader({"path": str(corpus), "minPartitions": "3"}, None, defaults).min_partitions == 3


def test_register_runs_local_workers_on_the_drivers_python(tmp_path):
    """A newcomer's shell (#23 item 10): the venv not activated, no PYSPARK_PYTHON, `python3` on PATH
    without kfmt or PySpark. Spark alone would start its workers on that `python3` and fail with
    ModuleNotFoundError; register() points a local session's workers at the driver's interpreter."""
    import shutil
    import textwrap

    log = tmp_path / "orders-0"
    log.mkdir()
    (log / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v%d" % i) for i in range(3)]))
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").write_text("#!/bin/sh\necho 'a python3 without kfmt' >&2\nexit 3\n")
    (bare / "python3").chmod(0o755)
    script = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        import kfmt.spark
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        kfmt.spark.register(spark)
        print("ROWS", spark.read.format("kafka-log").load({str(tmp_path)!r}).count())
        spark.stop()
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bare}:{os.path.dirname(shutil.which('java') or '/usr/bin/java')}:/usr/bin:/bin"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert "ROWS 3" in out.stdout, out.stderr[-2000:]


def test_a_batch_being_written_does_not_fail_a_spark_read(spark, tmp_path):
    """#24 item 5: a live partition's last segment ends in a batch cut short; a batch read returns the
    complete batches' rows (the cut one left out and logged, as Kafka's fetch leaves it out), not a failed
    job with a "corrupt batch"."""
    d = tmp_path / "orders-0"
    d.mkdir()
    done = kfmt.encode_batch([kfmt.Record(value=b"v%d" % i) for i in range(4)])
    cut = kfmt.encode_batch([kfmt.Record(value=b"w")], base_offset=4)[:30]
    (d / f"{0:020d}.log").write_bytes(done + cut)
    rows = spark.read.format("kafka-log").load(str(tmp_path)).select("offset").collect()
    assert sorted(r["offset"] for r in rows) == [0, 1, 2, 3]


def _offsets_dir(tmp_path):
    """__consumer_offsets-0 with a real broker's records (tests/vectors/kafka_internal_payloads.json), a commit
    deleted by a tombstone, and a value cut short (which must be reported, not dropped)."""
    import json

    vectors = json.loads((Path(__file__).parent / "vectors" / "kafka_internal_payloads.json").read_text())["records"]
    recs = [kfmt.Record(key=bytes.fromhex(r["key"]), value=bytes.fromhex(r["value"]), timestamp=1769791662893 + i)
            for i, r in enumerate(r for r in vectors if r["topic"] == "__consumer_offsets")]  # fmt: skip
    commit = next(r for r in recs if r.key[:2] == b"\x00\x01")
    recs.append(kfmt.Record(key=commit.key, value=None, timestamp=1769791662999))  # the commit deleted
    recs.append(kfmt.Record(key=commit.key, value=commit.value[:-3], timestamp=1769791663000))  # damaged
    d = tmp_path / "logs" / "__consumer_offsets-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(kfmt.encode_batch(recs))
    return d.parent


def test_offsets_job(spark, tmp_path):
    """`kfmt spark offsets`: the commit history (the deletion included), group membership with who joined,
    and the record that does not decode reported with its error."""
    from kfmt.spark.jobs import offsets

    commits, groups, undecoded = offsets(spark, str(_offsets_dir(tmp_path)))
    rows = [r.asDict() for r in commits.orderBy("log_offset").collect()]
    assert [(r["group"], r["topic"], r["partition"], r["offset"], r["deleted"]) for r in rows] == [
        ("DEVSmileCDR", "batch2.work.notification.SHR_PROD.persistence", 0, 0, False),
        ("DEVSmileCDR", "batch2.work.notification.SHR_PROD.persistence", 0, None, True)]  # fmt: skip
    assert rows[0]["commit_time"] is not None and rows[0]["leader_epoch"] == -1 and rows[0]["expire_time"] is None
    g = groups.collect()[0].asDict()
    assert (g["group"], g["generation"], g["protocol"], len(g["members"])) == ("DEVSmileCDR", 1, "range", 8)
    assert sorted(g["joined"]) == sorted(g["members"]) and g["left"] == []
    d = g["member_details"][0].asDict()  # from the member's ConsumerProtocol subscription
    assert d["topics"] == ["batch2.work.notification.SHR_PROD.persistence"] and d["client_id"].startswith("consumer-")
    bad = undecoded.collect()
    assert len(bad) == 1 and bad[0]["log_offset"] == 3 and bad[0]["payload_error"].startswith("value")


def test_offsets_command(spark, capfd, tmp_path):
    rc, out, err = _cli_in_session(spark, capfd, "offsets", str(_offsets_dir(tmp_path)), "--json")
    assert rc == 1, err  # the damaged record
    last = [json.loads(x) for x in out.splitlines()]
    assert len(last) == 1 and last[0]["deleted"] is True  # the last word on that partition: deleted
    assert "__consumer_offsets-0 offset 3: value" in err and "1 record(s) did not decode whole" in err


def test_offsets_command_prints_a_table_with_a_header_and_utc_times(spark, capfd, tmp_path):
    rc, out, err = _cli_in_session(spark, capfd, "offsets", str(_offsets_dir(tmp_path)))
    lines = out.splitlines()
    assert rc == 1 and lines[0].split()[:4] == ["group", "topic-partition", "offset", "committed"], out
    assert "read at (__consumer_offsets partition@offset)" in lines[0]
    assert len(lines) == 2 and lines[1].split()[2] == "deleted" and lines[1].split()[-1] == "0@2", out
    assert lines[1].split()[3].endswith("Z") or lines[1].split()[3] == "-", out  # as dump prints times


def test_real_brokers_log_dirs(spark):
    """#34: the six real brokers' log dirs (one folder of log dirs) through the Spark source and, where it is
    built, the JVM engine: every record kafka-python reads (tests/test_real_brokers.py), by file and offset."""
    from collections import Counter

    from test_real_brokers import FIXTURES, NAMES, _oracle

    want = Counter((r[0], r[2], r[4], r[5]) for n in NAMES for r in _oracle(FIXTURES / n)
                   if r[1] != "kraft-snapshot" and not r[7])  # fmt: skip
    engines = [("python", spark.read.format("kafka-log").load(str(FIXTURES)))]
    from kfmt.spark.jvm import jar

    if jar():
        engines.append(("jvm", kfmt.spark.read(spark, str(FIXTURES), engine="jvm")))
    for name, df in engines:
        got = Counter(
            (r["file"], r["offset"], r["key"], r["value"])
            for r in df.select("file", "offset", "key", "value").collect()
        )
        assert got == want, name
