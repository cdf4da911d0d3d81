"""A log directory read as Kafka reads it (issue: no silent answers, no false alarms).

Layouts are written as Kafka writes them: partition folders ``<topic>-<partition>``, Kafka's suffixed
folders ``<topic>-<partition>.<uuid without dashes>-delete|-future|-stray`` (LocalLog), segments with the
``.index``/``.timeindex`` a broker's recovery builds, ``leader-epoch-checkpoint`` and the log dir's offset
checkpoints in Kafka's text format (version line, count line, entries), ``partition.metadata`` (``version: 0``,
``topic_id: <Uuid>``) and a KRaft ``meta.properties``. What Kafka's own tool says of each case is stated where
kfmt is held to it.
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import kfmt
from kfmt.logdir.indexes import segment_files
from kfmt.logdir.layout import find_segments

TOPIC_ID = "vE1bKX0JTHa0Bq0rYwqG8A"  # a real-looking Uuid (URL-safe base64 of 16 random bytes)
EPOCHS = [0, 0, 0, 0, 3, 3, 3, 3]  # the leader epoch of each batch: epoch 3 from offset 40


def _batches(epochs=EPOCHS, base=0, per=10, t0=1_700_000_000_000):
    out = []
    for i, epoch in enumerate(epochs):
        recs = [kfmt.Record(key=b"k%d" % j, value=b"v" * 50, timestamp=t0 + (base + i * per + j) * 1000)
                for j in range(per)]  # fmt: skip
        out.append(kfmt.encode_batch(recs, base_offset=base + i * per, partition_leader_epoch=epoch))
    return out


def write_partition(folder: Path, epochs=EPOCHS, *, checkpoint: str | None = None, topic_id: str = TOPIC_ID):
    """A partition folder as a broker leaves it: two segments (offsets 0-39 and 40-79) with their indexes,
    leader-epoch-checkpoint and partition.metadata."""
    folder.mkdir(parents=True)
    batches = _batches(epochs)
    half = len(batches) // 2
    for base, part in ((0, batches[:half]), (half * 10, batches[half:])):
        for path, data in segment_files(folder / f"{base:020d}.log", b"".join(part), base):
            path.write_bytes(data)
    (folder / "leader-epoch-checkpoint").write_text(checkpoint or "0\n2\n0 0\n3 40\n")
    (folder / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    return folder


def write_log_dir(root: Path, recovery: int = 80) -> Path:
    """A KRaft broker's log dir: orders-0 and orders-1, offset checkpoints, meta.properties."""
    root.mkdir(parents=True, exist_ok=True)
    write_partition(root / "orders-0")
    write_partition(root / "orders-1")
    for name, off in (("recovery-point-offset-checkpoint", recovery), ("replication-offset-checkpoint", 80),
                      ("log-start-offset-checkpoint", 0)):  # fmt: skip
        (root / name).write_text(f"0\n2\norders 0 {off}\norders 1 80\n")
    (root / "meta.properties").write_text(
        "#\n#Tue Nov 24 10:00:00 UTC 2026\nnode.id=1\ndirectory.id=J8qmwAXDSJO1y4M0lN1nbg\nversion=1\n"
        "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
    )
    return root


def dump(*args) -> tuple[int, str, str]:
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", *map(str, args)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


# ------------------------------------------------------------------ 1. every input form, one answer
def test_bytes_give_the_same_answer_as_a_path(tmp_path):
    seg = b"".join(_batches())
    gz = tmp_path / "00000000000000000000.log"
    gz.write_bytes(gzip.compress(seg))
    idx = tmp_path / "00000000000000000000.index"
    idx.write_bytes(segment_files(Path("00000000000000000000.log"), seg * 20, 0)[1][1])
    for f in (gz, idx):
        with pytest.raises(kfmt.CodecError) as by_path:
            list(kfmt.read_batches(f))
        with pytest.raises(kfmt.CodecError) as by_bytes:
            list(kfmt.read_batches(f.read_bytes()))
        assert str(by_bytes.value) == str(by_path.value)
    assert "gzip-compressed stream" in str(by_path.value) or "entry header" in str(by_path.value)


def test_a_folder_or_a_text_file_is_one_line_saying_what_to_pass(tmp_path):
    with pytest.raises(IsADirectoryError, match="read_arrow"):
        list(kfmt.read_batches(tmp_path))
    f = tmp_path / "x.log"
    f.write_bytes(b"".join(_batches()))
    with open(f) as text, pytest.raises(TypeError, match="binary mode"):
        list(kfmt.read_batches(text))


# ------------------------------------------------------------------ 2. Kafka's suffixed folders
def test_suffixed_folders_are_left_out_and_said(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs")
    for suffix in ("delete", "future", "stray"):
        shutil.copytree(root / "orders-0", root / f"orders-0.{uuid.uuid4().hex}-{suffix}")
    left: list = []
    segs = find_segments(root, left_out=left)
    assert {(s.topic, s.partition) for s in segs} == {("orders", 0), ("orders", 1)}
    assert len(segs) == 4 and sorted(s for _, s in left) == ["delete", "future", "stray"]
    future = find_segments(root, include_suffixed="future")
    assert len(future) == 6 and {(s.topic, s.partition) for s in future} == {("orders", 0), ("orders", 1)}
    rc, out, err = dump(root, "--summary", "--json")
    assert rc == 0, err
    assert err.count("note: left out:") == 3 and "pending deletion" in err
    assert json.loads(out)["records"] == {str(root / "orders-0"): 80, str(root / "orders-1"): 80}  # each once
    # asked for by name, a suffixed folder is read, with its real topic and partition
    delete = next(root.glob("orders-0.*-delete"))
    assert {(s.topic, s.partition) for s in find_segments(delete)} == {("orders", 0)}


def test_suffixed_folders_are_left_out_of_read_arrow_and_spark_options(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs")
    shutil.copytree(root / "orders-0", root / f"orders-0.{uuid.uuid4().hex}-future")
    assert kfmt.read_arrow(root).num_rows == 160
    assert kfmt.read_arrow(root, include_suffixed="future").num_rows == 240


# ------------------------------------------------------------------ 3. two copies of one partition
def test_two_replicas_are_two_logs_and_compare_finds_the_divergence(tmp_path):
    a = write_partition(tmp_path / "broker1" / "orders-0")
    b = write_partition(tmp_path / "broker2" / "orders-0")
    rc, out, err = dump(a, b, "--summary", "--json")
    assert rc == 0, err  # before: 221 false "offsets go backwards" problems
    assert json.loads(out)["records"] == {str(a): 80, str(b): 80}  # summed apart, each folder named
    rc, out, _ = dump("--compare", a, b)
    assert rc == 0 and "identical" in out
    # the second replica's last batch differs (another leader wrote offsets 70-79 at epoch 4)
    last = sorted(b.glob("*.log"))[-1]
    batches = _batches([0, 0, 0, 0, 3, 3, 3, 4])
    last.write_bytes(b"".join(batches[4:]))
    rc, out, _ = dump("--compare", a, b)
    assert rc == 1 and "diverge at offset 70" in out, out
    # a follower that is behind is not divergent
    shutil.rmtree(b)
    write_partition(b, EPOCHS)
    last = sorted(b.glob("*.log"))[-1]
    last.write_bytes(b"".join(_batches()[4:6]))
    rc, out, _ = dump("--compare", a, b)
    assert rc == 0 and "first copy goes on from offset 60" in out, out


# ------------------------------------------------------------------ 5. a closed pipe is not a problem
def test_a_closed_output_pipe_stops_quietly(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs")
    p = subprocess.run(f"{sys.executable} -m kfmt dump --records {root} | head -1", shell=True, capture_output=True,
                       text=True, executable="/bin/bash")  # fmt: skip
    assert "Broken pipe" not in p.stderr and "unreadable" not in p.stderr and "Traceback" not in p.stderr
    status = subprocess.run(f"set -o pipefail; {sys.executable} -m kfmt dump --records {root} | head -1",
                            shell=True, executable="/bin/bash").returncode  # fmt: skip
    assert status in (0, 141)


# ------------------------------------------------------------------ 6. times, offsets from the end, counts
def test_time_of_day_offsets_from_the_end_and_count(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs")
    part = root / "orders-0"
    rc, out, err = dump(part, "--json", "--records", "--time", "2023-11-14T22:13:40Z:")
    assert rc == 0, err
    got = [json.loads(x)["offset"] for x in out.splitlines()]
    assert got == list(range(20, 80))  # 1_700_000_020_000 ms is 2023-11-14T22:13:40Z
    rc, out, err = dump(part, "--json", "--records", "--offsets", "-5:")
    assert rc == 0 and [json.loads(x)["offset"] for x in out.splitlines()] == [75, 76, 77, 78, 79], err
    rc, out, err = dump(part, "--json", "--records", "--count", "3")
    assert rc == 0 and [json.loads(x)["offset"] for x in out.splitlines()] == [0, 1, 2]
    assert "stopped after --count 3" in err


# ------------------------------------------------------------------ 7. checks at kafka-dump-log's level and beyond
def test_time_index_timestamp_mismatch_is_reported(tmp_path):
    part = write_partition(tmp_path / "orders-0")
    ti = sorted(part.glob("*.timeindex"))[0]
    data = bytearray(ti.read_bytes())
    assert data, "the broker-built time index has entries"
    ts, rel = struct.unpack_from(">qi", data, 0)
    struct.pack_into(">q", data, 0, ts + 5)  # raised 5 ms: kafka-dump-log reports "timestamp mismatch"
    ti.write_bytes(bytes(data))
    rc, _, err = dump(part)
    assert rc == 1 and "timestamp mismatch" in err, err


def test_folder_files_are_checked_with_the_folder(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs")
    assert dump(root)[0] == 0
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("garbage\n")
    rc, _, err = dump(root / "orders-0")
    assert rc == 1 and "'garbage' is not a version number" in err
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 30\n")  # epoch 3 from 30: contradicts
    rc, _, err = dump(root / "orders-0")
    assert rc == 1 and "carry epoch 0, but the entry covering offset 30 says epoch 3" in err, err
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")  # epoch 3 not written yet: a note
    rc, _, err = dump(root / "orders-0")
    assert rc == 0 and "not written yet" in err, err
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 40\n")
    (root / "orders-1" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    rc, _, err = dump(root)
    assert rc == 1 and "zero Uuid" in err
    (root / "orders-1" / "partition.metadata").write_text("version: 0\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw\n")
    rc, _, err = dump(root)
    assert rc == 1 and "topic orders has 2 topic ids" in err


def test_broker_checkpoints_and_meta_properties_are_read(tmp_path):
    root = write_log_dir(tmp_path / "kafka-logs", recovery=95)  # a recovery point past orders-0's end (80)
    (root / "cleaner-offset-checkpoint").write_text("0\n0\n")
    (root / "some-notes.txt").write_text("hello")
    rc, _, err = dump(root)
    assert rc == 1 and "recovery point 95 is past the partition's end (log end offset 80)" in err, err
    assert "some-notes.txt: note: skipped: not a Kafka log file" in err  # kafka-dump-log: "Ignoring unknown file"
    write_log_dir(tmp_path / "ok")
    (tmp_path / "ok" / "meta.properties").write_text("version=1\nnode.id=x\n")
    rc, _, err = dump(tmp_path / "ok")
    assert rc == 1 and "needs cluster.id" in err and "node.id 'x' is not an integer" in err


def test_a_kraft_snapshot_is_labelled_as_one(tmp_path):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    data = b"".join(_batches([1, 1]))
    (meta / "00000000000000000000.log").write_bytes(data)
    (meta / "00000000000000000020-0000000001.checkpoint").write_bytes(data)
    rc, out, err = dump(meta)
    assert rc == 0, err
    assert "KRaft snapshot: end offset 20, epoch 1" in out and "partition -1" not in out


# ------------------------------------------------------------------ 8. kafka-dump-log's fields, kcat's output
def test_batch_and_record_fields_of_kafka_dump_log(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(kfmt.encode_batch([kfmt.Record(key=b"k", value=b"value", timestamp=5)] * 3, producer_id=7,
                                    producer_epoch=0, base_sequence=2147483646))  # fmt: skip
    rc, out, _ = dump(f, "--json")
    b = json.loads(out)
    assert rc == 0 and b["last_sequence"] == 0 and b["is_valid"] is True and b["delete_horizon_ms"] is None
    rc, out, _ = dump(f, "--json", "--records")
    recs = [json.loads(x) for x in out.splitlines()]
    assert [(r["sequence"], r["key_size"], r["value_size"]) for r in recs] == [(2147483646, 1, 5), (2147483647, 1, 5),
                                                                               (0, 1, 5)]  # fmt: skip
    rc, out, _ = dump(f, "--template", "%t/%p@%o %k=%s (%S)\\n")
    assert out.splitlines() == [f"{tmp_path.name}/-1@{o} k=value (5)" for o in range(3)]
    rc, out, _ = dump(f, "--payload-only")
    assert out == "value\nvalue\nvalue\n"


# ------------------------------------------------------------------ 9. one-line errors
def test_one_line_errors_where_there_were_tracebacks_or_silence(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"".join(_batches([0] * 300)))
    env_bad = subprocess.run([sys.executable, "-m", "kfmt", "dump", str(f)], capture_output=True, text=True,
                             env={"KFMT_BACKEND": "bogus", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert env_bad.returncode == 2 and "Traceback" not in env_bad.stderr and "bogus" in env_bad.stderr
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = subprocess.run([sys.executable, "-m", "kfmt", "explain", "--bytes", str(empty)], capture_output=True, text=True)
    assert r.returncode == 1 and "empty" in r.stderr
    renamed = tmp_path / "00000000000000000000.index"
    shutil.copy(f, renamed)
    rc, _, err = dump(renamed)
    assert rc == 1 and len(err.splitlines()) <= 25 and "segment under an index's name" in err
    with pytest.raises(ValueError, match="a list of column names"):
        kfmt.read_arrow(f, columns="offset")
    with pytest.raises(TypeError, match=r"\(str, bytes"):
        kfmt.Record(headers={"a": b"b"})
    with pytest.raises(kfmt.CodecError, match="no records"):
        kfmt.encode_batch([])
    rc, _, err = dump(f, "--topic", "nope")
    assert rc == 2 and "no log matches" in err
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--summary", "-"], input=f.read_bytes(),
                       capture_output=True)  # fmt: skip
    assert r.returncode == 0 and b"records per log" in r.stdout and b"  -  " in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--json", "-"], input=f.read_bytes(), capture_output=True)
    assert r.returncode == 0 and {json.loads(x)["file"] for x in r.stdout.splitlines()} == {"-"}  # batches too


def test_a_string_default_on_an_integer_field_is_a_located_schema_error(tmp_path):
    root = Path(__file__).resolve().parents[1]
    schemas = tmp_path / "schemas"
    shutil.copytree(root / "schemas", schemas)
    v2 = schemas / "kafka_v2.yaml"
    v2.write_text(
        v2.read_text().replace("      - name: attributes\n", '      - name: attributes\n        default: "x"\n', 1)
    )
    r = subprocess.run([sys.executable, "-m", "kfmt", "generate", "--schemas", str(schemas), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "kafka_v2.yaml:" in r.stderr and "must be an integer" in r.stderr


@pytest.mark.named_backends
@pytest.mark.parametrize("magic", [1, 2])
def test_timestamps_arrow_cannot_hold_are_null_with_the_raw_value_kept(magic):
    """#23 item 11. Kafka stores any int64 timestamp; -1 is its NO_TIMESTAMP. The batch is built by
    kafka-python's record builders (an independent encoder). Every backend gives one answer: `timestamp`
    is the Arrow/Spark microsecond timestamp, NULL for -1 and for values beyond +-9,223,372,036,854,775 ms
    (which microseconds cannot hold); `timestamp_ms` keeps every value as written; -2 is a real instant
    (1969-12-31T23:59:59.998Z), not NULL."""
    import pyarrow as pa
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    stamps = [0, -1, -2, 9_223_372_036_854_775, 9_223_372_036_854_776, 2**63 - 1, -(2**63) + 1]
    if magic == 2:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)  # fmt: skip
        for i, ts in enumerate(stamps):
            b.append(i, timestamp=ts, key=None, value=b"v", headers=[])
        data = bytes(b.build())
    else:
        b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
        for i, ts in enumerate(stamps):
            b.append(i, timestamp=ts, key=None, value=b"v")
        data = bytes(b.build())
    want_ms = [None if ts == -1 else ts for ts in stamps]
    want_us = [None if ts == -1 or abs(ts) > 9_223_372_036_854_775 else ts * 1000 for ts in stamps]
    from kfmt.codec.formats import available_backends

    for backend in available_backends():
        t = kfmt.read_arrow(data, backend=backend)
        assert t.column("timestamp_ms").to_pylist() == want_ms, backend
        assert t.column("timestamp").cast(pa.int64()).to_pylist() == want_us, backend
        assert t.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")


# Each broker text file as the Java class that loads it reads it (apache/kafka at tests/fixtures/kafka/COMMIT):
# (file kind, bytes, the problem expected or None for healthy, the rule)
_CKPT = "CheckpointFile.CheckpointReadBuffer"
TEXT_RULES = [
    ("offset", b"", None, f"{_CKPT}: no first line is an empty list (brokers create these files empty)"),
    ("offset", b"0\n", None, f"{_CKPT}: no count line is an empty list"),
    ("offset", b"0\n0\n", None, f"{_CKPT}: a count of 0 and no entries"),
    ("offset", b"0\r\n1\r\nt 0 5\r\n", None, "BufferedReader.readLine ends lines at \\r\\n too"),
    ("offset", b"0\n1\nt 0 5", None, "BufferedReader.readLine: the last line needs no terminator"),
    ("offset", b"0\n1\nt\t0   5  \n", None, "OffsetCheckpointFile splits at \\s+ (String.split drops trailing blanks)"),
    ("offset", b"+0\n1\nt 0 +5\n", None, "Integer.parseInt / Long.parseLong take a sign"),
    ("offset", b" 0\n0\n", "is not a version number", "Integer.parseInt takes no blank"),
    ("offset", b"1\n0\n", "unknown version 1", f"{_CKPT}: the version must be 0"),
    ("offset", b"0\n2\nt 0 5\n", "the count line says 2", f"{_CKPT}: the count must match"),
    ("offset", b"0\n1\n t 0 5\n", "is not 'topic partition offset'", "a leading blank makes an empty first field"),
    ("offset", b"0\n1\nt 0 99999999999999999999\n", "is not 'topic partition offset'", "Long.parseLong overflows"),
    ("offset", b"0\n2\nt 0 5\n\n", "is not 'topic partition offset'", "an empty line is a malformed entry"),
    ("offset", b"0\n1\n\xff 0 5\n", "not UTF-8", "Files.newBufferedReader decodes UTF-8 strictly"),
    ("epoch", b"", None, f"{_CKPT}: empty (brokers create leader-epoch-checkpoint empty)"),
    ("epoch", b"0\n2\n0 0\n3 40\n", None, "LeaderEpochCheckpointFile: epoch startOffset"),
    ("epoch", b"0\n1\n-1 0\n", "negative", "LeaderEpochFileCache.assign refuses a negative epoch"),
    ("epoch", b"0\n2\n3 40\n2 50\n", "Kafka drops epoch 3", "LeaderEpochFileCache truncates non-monotonic entries"),
    ("epoch", b"0\n1\n0 0 7\n", "is not 'epoch startOffset'", "LeaderEpochCheckpointFile wants two fields"),
    ("partition", b"version: 0\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw\n", None, "PartitionMetadataReadBuffer"),
    ("partition", b"version: 1\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw\nmore\n", None, "a newer version is read; later lines ignored"),
    ("partition", b"v:\t0\nid:  3dDwKJ4yQjC3ZDT8ttKxzw", None, "split at :\\s+; the names are not checked"),
    ("partition", b"version: 0\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzx\n", None, "Java's Base64 ignores the bits past 16 bytes"),
    ("partition", b"version: 0\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw==\n", None, "Uuid.fromString: padding allowed"),
    ("partition", b"", "is not 'version: <value>'", "an empty file fails (a null first line)"),
    ("partition", b"version:0\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw\n", "is not 'version: <value>'", "no blank after ':'"),
    ("partition", b"version: -1\ntopic_id: 3dDwKJ4yQjC3ZDT8ttKxzw\n", "unknown version", "the version must be >= 0"),
    ("partition", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "zero Uuid", "the zero Uuid is refused"),
    ("meta", b"#c\nversion=0\n", None, "MetaProperties: version 0 may lack broker.id"),
    ("meta", b"broker.id=3\n", None, "MetaProperties: version defaults to 0"),
    ("meta", b"version = 1\nnode.id : 2\ncluster.id\\\n  =abc\n", None, "java.util.Properties: separators, continuations"),
    ("meta", b"version=1\nnode.id=2\ncluster.id=c\ndirectory.id=3dDwKJ4yQjC3ZDT8ttKxzw\n", None, "a KRaft log dir"),
    ("meta", b"version=1\nnode.id=2\n", "needs cluster.id", "MetaProperties.Builder.build: version 1 needs cluster.id"),
    ("meta", b"version=2\n", "unknown version", "MetaPropertiesVersion: 0 or 1"),
    ("meta", b"version=0\nbroker.id=x\n", "is not an integer", "PropertiesUtils.loadRequiredIntProp"),
    ("meta", b"directory.id=zz\n", "is not a Uuid", "Uuid.fromString"),
    ("quorum", b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}\n', None,
     "FileQuorumStateStore"),
    ("quorum", b"", "empty", "FileQuorumStateStore: File ended prematurely"),
    ("quorum", b'{"leaderEpoch":2,"data_version":7}\n', "data_version 7", "FileQuorumStateStore: supported versions"),
]  # fmt: skip


@pytest.mark.parametrize("kind,data,problem,rule", TEXT_RULES, ids=[f"{c[0]}-{i}" for i, c in enumerate(TEXT_RULES)])
def test_broker_text_files_by_kafkas_rules(tmp_path, kind, data, problem, rule):
    from kfmt.logdir.files import READERS, kind_of

    name = {"offset": "recovery-point-offset-checkpoint", "epoch": "leader-epoch-checkpoint",
            "partition": "partition.metadata", "meta": "meta.properties", "quorum": "quorum-state"}[kind]  # fmt: skip
    f = tmp_path / name
    f.write_bytes(data)
    _, problems = READERS[kind_of(f)](f)
    if problem is None:
        assert problems == [], rule
    else:
        assert len(problems) == 1 and problem in problems[0], (rule, problems)
