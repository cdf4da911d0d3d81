"""The kafka-log source's JVM engine (kfmt.spark.jvm, the jvm backend's Java decoders): the rows of the Python
engine, column for column, and the records kafka-python's builders wrote; a corrupt batch fails with where."""

import json
import os
from pathlib import Path

import pytest

import kfmt.spark
from kfmt.spark import jvm
from kfmt.tools.synth import SynthConfig, synth

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(jvm.jar() is None, reason="the JVM engine is not built here (no JDK)")

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers", "timestamp_ms",
           "magic", "codec", "batch_base_offset", "producer_id", "producer_epoch", "base_sequence",
           "is_transactional", "is_control", "partition_leader_epoch", "delete_horizon", "file", "position",
           "error", "raw")  # fmt: skip


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("jvm-corpus")  # every codec, transactions with aborts, magic 0 and 1 segments
    synth(d, SynthConfig(seed=11, topics=("orders", "clicks"), partitions=2, records=400, segment_bytes=20 * 1024))
    return d


def _engine(df) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "jvm" if "kafka-log-jvm" in plan else "python"


def _rows(df, columns=COLUMNS):
    return sorted((tuple(r) for r in df.select(*columns).collect()), key=lambda r: repr(r))


def test_generated_decoders():
    """A Java decoder per log format the backend lowers; the registry says why the others have none."""
    made = jvm.java_formats()
    assert {"kafka_v0", "kafka_v1", "kafka_v2"} <= made
    registry = (ROOT / "generated" / "jvm" / "Formats.java").read_text()
    assert "kip98_draft: no Java decoder: the jvm backend does not lower" in registry
    for f in made:
        assert f"new {''.join(w.capitalize() for w in f.split('_'))}()" in registry


OPTION_SETS = [
    {},
    {"isolation": "read_committed"},
    {"include_control": "true"},
    {"includeHeaders": "true"},
    {"verify_crc": "false"},
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "defaults")
def test_same_rows_as_the_python_engine(spark, corpus, options):
    a = kfmt.spark.read(spark, str(corpus), engine="jvm", **options)
    b = kfmt.spark.read(spark, str(corpus), engine="python", **options)
    assert (_engine(a), _engine(b)) == ("jvm", "python")
    ra, rb = _rows(a), _rows(b)
    assert len(ra) > 1000 and {r[9] for r in ra} == {0, 1, 2}  # legacy and v2 rows
    assert ra == rb


def test_offset_bounds_and_projection(spark, corpus):
    parts = {str(p): {"0": 40, "1": 7} for p in ("orders", "clicks")}
    ends = {str(p): {"0": 300, "1": 250} for p in ("orders", "clicks")}
    opts = {"startingOffsets": json.dumps(parts), "endingOffsets": json.dumps(ends)}
    a = kfmt.spark.read(spark, str(corpus), engine="jvm", **opts).select("topic", "partition", "offset", "value")
    b = kfmt.spark.read(spark, str(corpus), engine="python", **opts).select("topic", "partition", "offset", "value")
    ra = _rows(a, ("topic", "partition", "offset", "value"))
    assert ra == _rows(b, ("topic", "partition", "offset", "value"))
    bounded = [(t, p, o) for t, p, o, _ in ra if t in parts]
    assert bounded and all(parts[t][str(p)] <= o < ends[t][str(p)] for t, p, o in bounded)
    narrow = kfmt.spark.read(spark, str(corpus), engine="jvm", schema="offset long, value binary")
    assert narrow.columns == ["offset", "value"] and narrow.count() == kfmt.spark.read(spark, str(corpus)).count()


def _kafka_python_log(tmp_path):
    """A partition folder written by kafka-python's builders: v2 batches in every codec with headers, then
    magic 0 and 1 message sets (plain and compressed wrappers); and the records put in."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    folder = tmp_path / "kp-0"
    folder.mkdir()
    want, parts, offset = [], [], 0
    for magic, codecs in ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3))):
        for codec in codecs:
            b = LegacyRecordBatchBuilder(magic, codec, 1 << 22)
            for i in range(5):
                ts = 1_600_000_000_000 + offset if magic else None
                key = None if i == 2 else b"k%d" % offset
                b.append(offset, ts, key, b"legacy-%d" % offset)
                want.append((offset, key, b"legacy-%d" % offset, (), ts, magic))
                offset += 1
            parts.append(bytes(b.build()))
    for codec in (0, 1, 2, 3, 4):
        b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 22)
        base = offset
        for i in range(6):
            headers = [("h%d" % i, b"x" * i), ("n", None)] if i % 2 else []
            value = None if i == 3 else b"value-%d" % offset
            b.append(i, 1_700_000_000_000 + i, b"key", value, headers)
            want.append((offset, b"key", value, tuple(headers), 1_700_000_000_000 + i, 2))
            offset += 1
        raw = bytearray(b.build())
        raw[0:8] = base.to_bytes(8, "big")  # the broker assigns the base offset in place (not under the CRC)
        parts.append(bytes(raw))
    (folder / "00000000000000000000.log").write_bytes(b"".join(parts))
    return folder, want


def test_records_kafka_python_wrote(spark, tmp_path):
    folder, want = _kafka_python_log(tmp_path)
    df = kfmt.spark.read(spark, str(folder), engine="jvm")
    assert _engine(df) == "jvm"
    got = []
    for r in df.select("offset", "key", "value", "headers", "timestamp_ms", "magic").collect():
        got.append((r[0], r[1], r[2], tuple((h["key"], h["value"]) for h in r[3]), r[4], r[5]))
    assert sorted(got, key=lambda x: x[0]) == want


def test_corrupt_batch_fails_with_where(spark, tmp_path, corpus):
    import shutil

    folder = tmp_path / "bad-0"
    shutil.copytree(next(p for p in corpus.iterdir() if p.name == "orders-0"), folder)
    seg = sorted(folder.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    data[300] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    seg.write_bytes(bytes(data))
    for engine in ("jvm", "python"):
        df = kfmt.spark.read(spark, str(folder), engine=engine)
        with pytest.raises(Exception) as e:
            df.count()
        assert f"corrupt batch in {seg}" in str(e.value), engine
    assert "jvm engine" in _jvm_error(spark, folder)


def _jvm_error(spark, folder) -> str:
    try:
        kfmt.spark.read(spark, str(folder), engine="jvm").count()
    except Exception as e:  # noqa: BLE001 - Spark's error, whatever class py4j gives it
        return str(e)
    return ""


def test_batch_being_written_is_left_out(spark, tmp_path, corpus):
    import shutil

    folder = tmp_path / "live-0"
    shutil.copytree(next(p for p in corpus.iterdir() if p.name == "clicks-1"), folder)
    for p in folder.glob("*.index"):
        p.unlink()
    for p in folder.glob("*.timeindex"):
        p.unlink()
    last = sorted(folder.glob("*.log"))[-1]
    data = last.read_bytes()
    last.write_bytes(data + data[:40])  # the start of one more batch: one the broker is writing
    a = kfmt.spark.read(spark, str(folder), engine="jvm")
    b = kfmt.spark.read(spark, str(folder), engine="python")
    assert _rows(a) == _rows(b) and a.count() > 0


def test_a_size_running_past_a_large_segment_is_never_read_for(spark, tmp_path):
    """#34 item 15: the second entry of a 1.2 GB segment (sparse: a zero-filled hole after 50 batches) claims
    0x7FFF0000 bytes. The JVM engine read the whole rest of the slice into its window for it (3.5 GB, 48 s);
    now it fails at once with the engines' one error, without reading the region. The live-end "batch being
    written" rule holds it too: a tail longer than the longest entry a reader looks for is damage."""
    import struct

    folder = tmp_path / "bad-0"
    folder.mkdir()
    recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * 100, timestamp=1_700_000_000_000 + i) for i in range(100)]
    one = kfmt.encode_batch(recs)
    data = bytearray(b"".join(struct.pack(">q", j * 100) + one[8:] for j in range(50)))
    struct.pack_into(">i", data, len(one) + 8, 0x7FFF0000)
    seg = folder / f"{0:020d}.log"
    with open(seg, "wb") as f:
        f.write(data)
        f.truncate(1200 << 20)
    left = (1200 << 20) - len(one)
    msg = _jvm_error(spark, folder)
    assert f"at byte {len(one)}" in msg and f"({left} bytes left)" in msg, msg[-600:]
    with pytest.raises(Exception, match=f"corrupt batch in {seg} at byte {len(one)}"):
        kfmt.spark.read(spark, str(folder), engine="python").count()


def test_the_jvm_follows_the_resync_bound():
    """The longest entry found after damage (and the longest batch being written) is one constant, the
    JVM engine's copy held to kfmt.log.resync's."""
    from kfmt.log.resync import RESYNC_MAX_ENTRY

    java = (ROOT / "kfmt/runtime/jvm/kfmt/jvm/SliceReader.java").read_text()
    assert f"static final long RESYNC_MAX_ENTRY = {RESYNC_MAX_ENTRY >> 20}L << 20;" in java


def test_auto_chooses_and_jvm_refuses(spark, corpus):
    assert _engine(kfmt.spark.read(spark, str(corpus))) == "jvm"
    assert _engine(kfmt.spark.read(spark, str(corpus), on_corrupt="skip")) == "python"
    with pytest.raises(ValueError, match="on_corrupt=quarantine"):
        kfmt.spark.read(spark, str(corpus), engine="jvm", on_corrupt="quarantine")
    with pytest.raises(ValueError, match="engine must be one of"):
        kfmt.spark.read(spark, str(corpus), engine="gpu")


def test_jar_holds_every_source():
    """The jar is built from the committed sources (make setup rebuilds it when one changes)."""
    import zipfile

    names = set(zipfile.ZipFile(jvm.jar()).namelist())
    assert "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister" in names
    for src in jvm.sources():
        cls = src.read_text().split("package ", 1)[1].split(";", 1)[0].replace(".", "/") + "/" + src.stem + ".class"
        assert cls in names, cls
    assert os.path.getmtime(jvm.jar()) >= max(os.path.getmtime(s) for s in jvm.sources()) - 1


def test_differential_slice():
    """A slice of `make fuzz-jvm`: damaged mixed v0/v1/v2 logs read by both engines agree (both fail, or the
    same rows), with CRCs checked and without; both outcomes occur."""
    import sys

    sys.path.insert(0, str(ROOT))
    from fuzz.jvm_differential import run

    for verify_crc in (True, False):
        n, clean, found = run(250, 20261125, verify_crc)
        assert found == [] and 0 < clean < n, (verify_crc, clean, found)


def test_jvm_regressions_replayed():
    """Logs on which the engines once disagreed (tests/vectors/regressions/jvm, found by make fuzz-jvm: a zstd
    frame cut short the Python engine read, a gzip header with reserved flags the JVM engine read, a cut entry
    followed by one whose CRC matches but which does not decode): both engines agree on each now."""
    import sys

    sys.path.insert(0, str(ROOT))
    from fuzz.jvm_differential import FINDINGS, compare

    logs = [p.read_bytes() for p in sorted(FINDINGS.glob("*.log"))]
    assert len(logs) >= 3
    for verify_crc in (True, False):
        assert compare(logs, verify_crc, keep=False)[1] == []


def test_kfmt_formats_names_the_engines(capsys):
    """`kfmt formats` says which engines the Spark source has here."""
    from kfmt.tools.cli import main

    assert main(["formats"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "# Spark source engines: jvm, python"


@pytest.mark.parametrize("fid", ["v2_no_record_attributes", "v3_no_record_attributes"])
def test_proposals_read_with_format(spark, tmp_path, fid):
    """A log written in a proposal that reuses magic 2 is read with option format by both engines alike (the
    jvm backend's decoders of the proposals); a proposal without a Java decoder is refused by the JVM engine,
    with the reason, and read by the Python engine under auto."""
    import kfmt

    folder = tmp_path / "p-0"
    folder.mkdir()
    parts, offset = [], 0
    for codec in ("none", "gzip", "zstd"):
        recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * i, headers=[("h", b"x")] if i % 2 else [],
                            timestamp=1_700_000_000_000 + i) for i in range(7)]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=offset))
        offset += 7
    (folder / "00000000000000000000.log").write_bytes(b"".join(parts))
    a = kfmt.spark.read(spark, str(folder), engine="jvm", format=fid)
    b = kfmt.spark.read(spark, str(folder), engine="python", format=fid)
    assert _engine(a) == "jvm" and len(_rows(a)) == 21 and _rows(a) == _rows(b)
    with pytest.raises(ValueError, match="format kip98_draft has no Java decoder"):
        kfmt.spark.read(spark, str(folder), engine="jvm", format="kip98_draft")
    assert _engine(kfmt.spark.read(spark, str(folder), format="kip98_draft")) == "python"
