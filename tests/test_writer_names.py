"""The writer takes only what Kafka would take (issue 45): topic names by Kafka's ``Topic.validate`` and partitions
as int32s from 0, refused before a byte is written in one line that names the row, the value and the rule, the
same line from both engines; no file outside the table on any input; a topic keeps its id across writes; header
keys that are not UTF-8 written as their bytes by both engines; folders a reader cannot map back to a topic and
partition named, as Kafka's log loader would refuse them."""

import json
import os
import subprocess
import sys
import threading

import pytest

import kfmt
from kfmt.logdir.files import read_partition_metadata
from kfmt.logdir.layout import topic_partition
from kfmt.logdir.names import parse_folder, row_problem, topic_problem
from kfmt.spark.writer import commit_partitions

# Kafka's Topic.validate (clients/.../common/internals/Topic.java): empty, "." and "..", over 249 characters,
# a character outside [a-zA-Z0-9._-]; names it takes, including ones that look like partition folders
KAFKA_REFUSES = ["", ".", "..", "x" * 250, "../x", "a/b", "/abs/t", "t 1", "t\n", "é", "t:1", "a\\b", "\U0001f600"]
KAFKA_TAKES = ["t", "t-1", "x" * 249, "...", "_", "-", "a.b_c-D9", "__consumer_offsets", "t--1"]


@pytest.mark.parametrize("name", KAFKA_REFUSES)
def test_topic_names_kafka_refuses(name):
    assert topic_problem(name) is not None and topic_problem(name.encode("utf-8", "surrogatepass")) is not None


@pytest.mark.parametrize("name", KAFKA_TAKES)
def test_topic_names_kafka_takes(name):
    assert topic_problem(name) is None


def test_the_refusal_is_one_line_naming_row_value_and_rule():
    line = row_problem("a\nb", 0, 41)
    assert "\n" not in line and "offset 41" in line and '"a\\nb"' in line and "[a-zA-Z0-9._-]" in line
    assert "offset 9" in row_problem("t", 2**31, 9) and "2147483648" in row_problem("t", 2**31, 9)
    assert "x'C3FF41'" in row_problem(b"\xc3\xffA", 0, 0)  # bytes that are not UTF-8, in hex
    assert row_problem("t", 0, 0) is None and row_problem("t", 2**31 - 1, 0) is None


def test_folder_names_map_back_as_kafkas_log_loader_maps_them():
    # UnifiedLog.parseTopicPartitionName: the partition is what follows the last '-', an int32; the topic not empty
    assert parse_folder("orders-0") == ("orders", 0) and parse_folder("t-1-0") == ("t-1", 0)
    assert parse_folder("t--1") == ("t-", 1)  # as Kafka reads it (the writer refuses partition -1)
    for name in ("-0", "orders", "t-x", "t-", "t-2147483648", "t-99999999999"):
        assert parse_folder(name) is None, name
    from pathlib import Path

    assert topic_partition(Path("/d/t-99999999999")) == ("t-99999999999", -1)  # never a partition out of int32


# -- both engines, on a table of hostile rows --------------------------------------------------------------

HOSTILE = [
    ("..", 0),
    ("../x", 0),
    ("../../../escaped", 0),
    ("/abs/t", 0),
    ("a/b", 0),
    ("", 0),
    (".", 0),
    ("x" * 250, 0),
    ("é", 0),
    ("t", -1),
    ("t", 2**31),
    (None, 0),
    ("t", None),
]
#: what Spark strings may hold and Python's str cannot say: bytes that are not UTF-8, an encoded surrogate
RAW_TOPICS = [b"\xc3\xffA", b"\xed\xa0\x80", b"t\x00", "\U0001f600".encode()]


def test_the_jvm_engine_judges_every_name_as_kfmt_logdir_names_does():
    """The differential: kfmt.jvm.Names (the JVM engine's writer) against kfmt.logdir.names on every hostile row and
    on names Kafka takes, word for word."""
    from kfmt.spark.jvm import jar, name_check

    if jar() is None:
        pytest.skip("the JVM engine is not built")
    rows = [(None if t is None else t.encode("utf-8", "surrogatepass"), p, 7) for t, p in HOSTILE]
    rows += [(t, 0, 9) for t in RAW_TOPICS]
    rows += [(n.encode(), p, 3) for n in KAFKA_TAKES for p in (0, 2**31 - 1)]
    rows += [(n.encode("utf-8", "surrogatepass"), 0, -1) for n in KAFKA_REFUSES]
    want = [row_problem(t, p, o) for t, p, o in rows]
    assert name_check(rows) == want
    assert all(w is not None for w in want[: len(HOSTILE) + len(RAW_TOPICS)])


def _tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, ds, fs in os.walk(root) for f in ds + fs)


def _write(spark, df, target, engine, mode="overwrite", **options):
    """The one line a write fails with, or None."""
    try:
        df.write.format("kafka-log").mode(mode).options(engine=engine, **options).save(str(target))
    except Exception as e:  # noqa: BLE001 - the error is the answer being checked
        return str(e)
    return None


#: the rows written through Spark by both engines (each kind of refusal; every hostile row is judged above)
WRITTEN = [("../../../escaped", 0), ("/abs/t", 0), ("t", -1), ("t", 2**31), (None, 0), ("t", None)]


def test_both_engines_refuse_hostile_rows_in_kafkas_words_writing_nothing(spark, tmp_path):
    parent = tmp_path / "deep" / "er" / "parent"
    table = parent / "T"
    table.mkdir(parents=True)
    before = _tree(tmp_path)
    for topic, part in WRITTEN:
        expected = row_problem(topic, part, 7)
        assert expected is not None
        df = spark.createDataFrame([(topic, part, 7, b"v")], "topic string, partition long, offset long, value binary")
        for engine in ("jvm", "python"):
            got = _write(spark, df, table, engine)
            assert got == expected, (engine, topic, part, got)
            assert _tree(tmp_path) == before, (engine, topic, part, _tree(tmp_path))  # nothing created anywhere
    # a topic whose text is not UTF-8 (Spark strings may hold any bytes)
    raw = spark.sql("SELECT CAST(unhex('C3FF41') AS STRING) AS topic, 0 AS partition, 7L AS offset, X'76' AS value")
    for engine in ("jvm", "python"):
        assert _write(spark, raw, table, engine) == row_problem(b"\xc3\xffA", 0, 7), engine
        assert _tree(tmp_path) == before


def test_both_engines_refuse_columns_that_cannot_name_a_partition(spark, tmp_path):
    from kfmt.logdir.names import NEED_COLUMNS, PARTITION_COLUMN, TOPIC_COLUMN

    cases = [
        (spark.createDataFrame([("t", "0", 0)], "topic string, partition string, offset long"), PARTITION_COLUMN),
        (spark.createDataFrame([(1, 0, 0)], "topic int, partition int, offset long"), TOPIC_COLUMN),
        (spark.createDataFrame([("t", 0)], "topic string, offset long"), NEED_COLUMNS),
    ]
    for df, line in cases:
        for engine in ("jvm", "python"):
            assert _write(spark, df, tmp_path / "T", engine) == line, engine
    assert not list((tmp_path / "T").rglob("*.log")) if (tmp_path / "T").exists() else True


def test_a_topic_that_looks_like_a_partition_folder_reads_back_as_itself(spark, tmp_path):
    df = spark.createDataFrame(
        [("t-1", 0, 0, b"v"), ("t", 1, 0, b"w")], "topic string, partition int, offset long, value binary"
    )
    for engine in ("jvm", "python"):
        out = tmp_path / engine
        assert _write(spark, df, out, engine) is None
        back = sorted((r.topic, r.partition, r.value) for r in spark.read.format("kafka-log").load(str(out)).collect())
        assert back == [("t", 1, b"w"), ("t-1", 0, b"v")], engine


def _id(folder):
    fields, problems = read_partition_metadata(folder / "partition.metadata")
    assert problems == []
    return fields[0]["topic_id"]


def _dump_summary(path):
    return subprocess.run(
        [sys.executable, "-m", "kfmt", "dump", "--summary", str(path)], capture_output=True, text=True
    )


@pytest.mark.parametrize("engine", ["jvm", "python"])
def test_a_topic_keeps_its_id_across_writes(spark, tmp_path, engine):
    schema = "topic string, partition int, offset long, value binary"
    out = tmp_path / "T"
    assert _write(spark, spark.createDataFrame([("t", 0, 0, b"a")], schema), out, engine) is None
    first = _id(out / "t-0")
    assert _write(spark, spark.createDataFrame([("t", 1, 0, b"b")], schema), out, engine, mode="append") is None
    assert _id(out / "t-1") == first
    r = _dump_summary(out)
    assert r.returncode == 0, r.stdout + r.stderr
    # an overwrite keeps it too, and leaves no folder of the old table with another id
    assert _write(spark, spark.createDataFrame([("t", 2, 0, b"c")], schema), out, engine) is None
    assert _id(out / "t-2") == first and not (out / "t-0").exists() and not (out / "t-1").exists()
    # an id given that differs from the table's is refused on append, in one line
    other = json.dumps({"t": "B" * 22})
    got = _write(spark, spark.createDataFrame([("t", 3, 0, b"d")], schema), out, engine, mode="append", topic_ids=other)
    assert got is not None and "\n" not in got and "one topic has one id" in got and not (out / "t-3").exists()


def _stage(tmp_path, name, base):
    p = tmp_path / "staging" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)], base_offset=base))
    return str(p)


def test_racing_appenders_of_a_new_topic_never_both_give_it_an_id(tmp_path, monkeypatch):
    """Two appends giving a new topic its first partitions: each chose a new id before taking the table; the one
    that commits second finds the other's id under the lock and is refused, so the table keeps one id."""
    import kfmt.spark.writer as writer

    out = tmp_path / "T"
    chosen = writer._ids_to_write
    once = threading.Event()

    def racing(tree, topics, given, replace):
        ids = chosen(tree, topics, given, replace)
        if not once.is_set():  # the other writer commits between this one's choice and its commit
            once.set()
            commit_partitions(out, {("t", 1): [_stage(tmp_path, "b", 0)]})
        return ids

    monkeypatch.setattr(writer, "_ids_to_write", racing)
    with pytest.raises(ValueError, match="got the id .* from a write committed meanwhile"):
        commit_partitions(out, {("t", 0): [_stage(tmp_path, "a", 0)]})
    assert not (out / "t-0").exists() and (out / "t-1" / "partition.metadata").exists()
    r = _dump_summary(out)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_commit_refuses_names_kafka_refuses(tmp_path):
    """The driver's commit checks again what the tasks named (a stream's or the JVM's pieces come to it too)."""
    for topic, part in [("../x", 0), ("t", -1)]:
        with pytest.raises(ValueError, match="which Kafka refuses"):
            commit_partitions(tmp_path / "T", {(topic, part): [_stage(tmp_path, "a", 0)]})
    assert not (tmp_path / "x-0").exists() and not (tmp_path / "T" / "t--1").exists()


def test_header_keys_that_are_not_utf8_are_written_as_their_bytes_by_both_engines(spark, tmp_path):
    df = spark.sql(
        "SELECT 't' AS topic, 0 AS partition, 0L AS offset, X'76' AS value, "
        "array(named_struct('key', CAST(unhex('C3FF41') AS STRING), 'value', X'01'), "
        "named_struct('key', CAST(unhex('EDA080') AS STRING), 'value', X'02')) AS headers"
    )
    files = {}
    for engine in ("jvm", "python"):
        out = tmp_path / engine
        assert _write(spark, df, out, engine, topic_ids=json.dumps({"t": "A" * 22})) is None
        files[engine] = (out / "t-0" / "00000000000000000000.log").read_bytes()
        [b] = [b for _, _, b in kfmt.scan(files[engine])]
        keys = [k.encode("utf-8", "surrogateescape") for k, _ in b.records[0].headers]
        assert keys == [b"\xc3\xffA", b"\xed\xa0\x80"], engine
    assert files["jvm"] == files["python"]


def test_dump_names_folders_kafka_would_not_load(tmp_path):
    """A segment in a folder whose name is not <topic>-<partition>: read as topic <name>, partition -1, with a
    note saying Kafka's log loader refuses it (never silently read as another topic)."""
    seg = kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)])
    for name in ("-0", "orders", "t-99999999999"):
        (tmp_path / "d" / name).mkdir(parents=True)
        (tmp_path / "d" / name / "00000000000000000000.log").write_bytes(seg)
    (tmp_path / "d" / "ok-0").mkdir()
    (tmp_path / "d" / "ok-0" / "00000000000000000000.log").write_bytes(seg)
    r = _dump_summary(tmp_path / "d")
    text = r.stdout + r.stderr
    for name in ("-0", "orders", "t-99999999999"):
        assert f"'{name}' is not a partition folder's name" in text, text
    assert "'ok-0' is not" not in text
    rows = kfmt.read_arrow(str(tmp_path / "d"), columns=["topic", "partition"]).to_pylist()
    assert sorted((r["topic"], r["partition"]) for r in rows) == [
        ("-0", -1), ("ok", 0), ("orders", -1), ("t-99999999999", -1)
    ]  # fmt: skip
