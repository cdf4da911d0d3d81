"""The kafka-log source's JVM engine (kfmt.spark.jvm, the jvm backend's Java decoders): the rows of the Python
engine, column for column, and the records kafka-python's builders wrote; a corrupt batch fails with where."""

import json
import os
import sys
from pathlib import Path

import pytest

import kfmt.spark
from kfmt.spark import jvm
from kfmt.tools.synth import SynthConfig, synth

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(jvm.jar() is None, reason="the JVM engine is not built here (no JDK)")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from fuzz.jvm_differential import PROPOSALS  # noqa: E402  (what each proposal carries)

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
    return "jvm" if "jvm engine" in plan else "python"


def _rows(df, columns=COLUMNS):
    return sorted((tuple(r) for r in df.select(*columns).collect()), key=lambda r: repr(r))


def test_generated_decoders():
    """A Java decoder for every log format (the registry lists them all and names no format without one)."""
    from kfmt.codec.formats import format_ids

    made = jvm.java_formats()
    assert made == set(format_ids())
    registry = (ROOT / "generated" / "jvm" / "Formats.java").read_text()
    assert "no Java decoder" not in registry
    for f in made:
        assert f"new {''.join(w.capitalize() for w in f.split('_'))}()" in registry


OPTION_SETS = [  # make test runs the first two; make test-full every one
    {},
    {"isolation": "read_committed"},
    pytest.param({"include_control": "true"}, marks=pytest.mark.full),
    pytest.param({"includeHeaders": "true"}, marks=pytest.mark.full),
    pytest.param({"verify_crc": "false"}, marks=pytest.mark.full),
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
    from kfmt.spark.errors import KafkaLogError

    for engine in ("jvm", "python"):  # the user gets kfmt's one line, not Spark's stack or a worker's traceback
        df = kfmt.spark.read(spark, str(folder), engine=engine)
        with pytest.raises(KafkaLogError) as e:
            df.count()
        assert str(e.value).startswith(f"kafka-log: corrupt batch in {seg} at byte ") and "\n" not in str(e.value)
    with pytest.raises(KafkaLogError, match="^kafka-log: unknown read option"):  # the planner's error too
        spark.read.format("kafka-log").option("startingOffset", "x").load(str(folder)).count()
    assert "crc" in _jvm_error(spark, folder).lower()  # the JVM engine names the field


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
    assert f"at byte {len(one)}" in msg and f"{left} byte(s) not read" in msg, msg[-600:]
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
    assert _engine(kfmt.spark.read(spark, str(corpus), on_corrupt="skip")) == "jvm"
    assert _engine(kfmt.spark.read(spark, str(corpus), decode_payloads="true")) == "jvm"
    assert _engine(kfmt.spark.read(spark, str(corpus), backend="python")) == "python"
    with pytest.raises(Exception, match="the jvm engine does not read this yet: a backend choice") as e:
        kfmt.spark.read(spark, str(corpus), engine="jvm", backend="python").count()
    assert str(e.value).splitlines()[0].startswith("kafka-log: the jvm engine does not read this yet"), str(e.value)
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


@pytest.mark.parametrize(
    "on_corrupt,inputs",
    [
        pytest.param("fail", 120, marks=pytest.mark.full),
        ("skip", 50),
        pytest.param("quarantine", 120, marks=pytest.mark.full),
    ],
)
def test_differential_slice(on_corrupt, inputs):
    """A slice of `make fuzz-jvm`: damaged mixed v0/v1/v2 logs and proposals' logs read by both engines agree (both fail, or the
    same rows: records, and quarantine rows' positions and raw bytes), with CRCs checked and without; with fail
    both outcomes occur, with skip and quarantine every log is read."""
    import sys

    sys.path.insert(0, str(ROOT))
    from fuzz.jvm_differential import compare_ways
    from fuzz.jvm_differential import inputs as damaged

    n, ways = inputs, [(True, on_corrupt), (False, on_corrupt)]  # with CRCs checked and without, in one JVM
    for (verify_crc, _), (clean, found) in zip(ways, compare_ways(damaged(n, 20261125), ways, keep=False)):
        assert found == [] and 0 < clean <= n and (clean < n) == (on_corrupt == "fail"), (verify_crc, clean, found)


def test_jvm_regressions_replayed():
    """Logs on which the engines once disagreed (tests/vectors/regressions/jvm, found by make fuzz-jvm: a zstd
    frame cut short the Python engine read, a gzip header with reserved flags the JVM engine read, a cut entry
    followed by one whose CRC matches but which does not decode; proposals' logs whose damaged size field at the
    end hid entries of the forced format, which a batch being written must not, and the reverse; a batch whose
    base offset + last offset delta passes 2^63-1, read from offset 0, which the Python engine summed unbounded
    and the JVM engine wrapped as Kafka does; a damaged batch whose offsets do not ascend, read from an offset,
    whose record below it the Python engine kept (it looked at the first and last record only); a 5-byte
    unsigned varint whose fifth byte set bits past 32, which the JVM engine kept (Kafka's int drops them); a zstd
    frame whose window is over 2^27 + 1 bytes, which the JVM engine's one-shot call read and zstd's streaming
    reader refuses; and one log for each kind of error whose words or place differed: where a CRC, a count, a
    region, a varint, a compressed stream or a wrapper's inner message is damaged): both engines agree on each
    now, the one-line error and the quarantine rows' errors word for word, read with the view it was found with."""
    import sys

    sys.path.insert(0, str(ROOT))
    from fuzz.jvm_differential import compare_ways, findings

    logs = findings()
    assert len(logs) >= 8 and {f for f, _, _ in logs} >= {None, "kip82_header_wrapper", "enriched_metadata_draft"}
    assert any(seen.get("first") == 0 for _, _, seen in logs)
    # quarantine's regions are skip's, with their rows checked too
    ways = [(verify_crc, on_corrupt) for on_corrupt in ("fail", "quarantine") for verify_crc in (True, False)]
    for way, (_, found) in zip(ways, compare_ways(logs, ways, keep=False)):
        assert found == [], (way, found)


def _with_zstd_payload(records: list, compress) -> bytes:
    """A v2 batch of ``records`` whose records are zstd-compressed by ``compress`` (bytes -> bytes), with its
    attributes, length and CRC32C made to match."""
    import struct

    import crc32c

    plain = kfmt.encode_batch(records, codec="none")
    payload = compress(plain[61:])
    head = bytearray(plain[:61])
    struct.pack_into(">i", head, 8, 49 + len(payload))
    struct.pack_into(">h", head, 21, (struct.unpack_from(">h", head, 21)[0] & ~7) | 4)
    body = bytes(head[21:]) + payload
    struct.pack_into(">I", head, 17, crc32c.crc32c(body))
    return bytes(head[:21]) + body


def test_zstd_frames_read_as_zstds_streaming_reader_reads_them():
    """The JVM engine decompresses a zstd payload in one call into a buffer it reuses (not through a stream set up
    per batch); what it reads or refuses stays what zstd's streaming reader (Kafka's, the Python engine's) does:
    frames with and without a stated size, a stated size far past the input and an output of 2 MB from a few KB
    (the buffer grows as the output does), two frames, bytes after the last frame, a window over 2^27 + 1 bytes
    (refused), a frame cut short. Read by both engines, with on_corrupt fail and skip."""
    import zstandard

    from fuzz.jvm_differential import compare_ways

    def rec(i, size):
        return kfmt.Record(key=b"k%d" % i, value=bytes(size) + b"v%d" % i, timestamp=1_700_000_000_000 + i)

    def stream(data, params=None):  # as Kafka's producer writes: a stream, no stated size
        c = zstandard.ZstdCompressor(compression_params=params).compressobj()
        return c.compress(data) + c.flush()

    small, large = [rec(i, 200) for i in range(50)], [rec(i, 4000) for i in range(500)]
    shapes = {  # name: (records, compress, read by zstd's streaming reader)
        "stated size, 20x the input": (small, lambda d: zstandard.ZstdCompressor().compress(d), True),
        "no stated size, 2 MB": (large, stream, True),
        "two frames": (small, lambda d: stream(d[:1000]) + stream(d[1000:]), True),
        "bytes after the frame": (small, lambda d: stream(d) + b"\x01\x02\x03", False),
        "window of 2^28": (small, lambda d: stream(d, zstandard.ZstdCompressionParameters(window_log=28)), False),
        "cut short": (small, lambda d: stream(d)[:-5], False),
    }
    logs = []
    for records, compress, _ in shapes.values():
        payload = _with_zstd_payload(records, compress)
        logs.append(payload + kfmt.encode_batch(records[:3], codec="none", base_offset=len(records)))
    (clean, found), (clean_skip, found_skip) = compare_ways(logs, [(True, "fail"), (True, "skip")], keep=False)
    assert found == [] and clean == sum(ok for _, _, ok in shapes.values()), (clean, found)
    assert found_skip == [] and clean_skip == len(logs), found_skip


def test_kfmt_formats_names_the_engines(capsys):
    """`kfmt formats` says which engines the Spark source has here."""
    from kfmt.tools.cli import main

    assert main(["formats"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "# Spark source engines: jvm, python"


@pytest.mark.parametrize("fid", sorted(PROPOSALS))
def test_proposals_read_with_format(spark, tmp_path, fid):
    """A log written in a proposal is read with option format by both engines alike (every column, headers, null
    keys and values, every codec the proposal has); an integer header key reads as its decimal text in both."""
    import kfmt

    codecs, headers = PROPOSALS[fid]
    folder = tmp_path / "p-0"
    folder.mkdir()
    parts, offset = [], 0
    for codec in codecs:
        recs = [kfmt.Record(key=b"k%d" % i if i % 3 else None, value=b"v" * i if i % 4 else None,
                            headers=headers if i % 2 else [], timestamp=1_700_000_000_000 + i) for i in range(7)]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=offset))
        offset += 7
    (folder / "00000000000000000000.log").write_bytes(b"".join(parts))
    a = kfmt.spark.read(spark, str(folder), engine="jvm", format=fid)
    b = kfmt.spark.read(spark, str(folder), engine="python", format=fid)
    assert _engine(a) == "jvm" and len(_rows(a)) == 7 * len(codecs) and _rows(a) == _rows(b)
    want = [{"key": str(k), "value": v} for k, v in headers]
    assert [r.headers for r in a.where("offset = 1").collect()] == [[pyspark.sql.Row(**h) for h in want]]


# ------------------------------------------------------------------ one source: kafka-log in the JVM, kfmt's planner
def test_planner_answers(corpus):
    """kfmt.spark.planner, the one planner the JVM source asks: a plan, a hand-over to the Python data source
    with the reason, or one line of error; a schema the user gave is checked as the Python source checks it."""
    from kfmt.spark.planner import answer

    defaults = {"min_partitions": 2, "split_bytes": 1 << 27, "open_cost_bytes": 1 << 22}
    plan = json.loads(answer({"options": {"path": str(corpus)}, "defaults": defaults, "columns": None})["plan"])
    assert sum(len(g) for g in plan["groups"]) >= len(list(corpus.glob("*/*.log")))
    assert "plan" in answer({"options": {"path": str(corpus), "on_corrupt": "skip"}, "defaults": defaults})
    assert "plan" in answer({"options": {"path": str(corpus), "decode_payloads": "true"}, "defaults": defaults})
    backend = answer({"options": {"path": str(corpus), "backend": "python"}, "defaults": defaults})
    assert backend == {"python": "a backend choice (it decodes with its own)"}
    assert answer({"options": {"path": str(corpus), "engine": "python"}}) == {"python": "engine=python"}
    bad = answer({"options": {"path": str(corpus), "engine": "jvm", "backend": "python"}})
    assert bad["error"].startswith("kafka-log: the jvm engine does not read this yet: a backend choice")
    assert (
        "unknown read option(s) startingOffset"
        in answer({"options": {"path": str(corpus), "startingOffset": "x"}})["error"]
    )
    wrong = answer({"options": {"path": str(corpus)}, "columns": [["offset", "int"]]})
    assert wrong == {"error": "kafka-log: column 'offset' is bigint, not int"}


def test_format_kafka_log_is_the_jvm_source(spark, corpus):
    """spark.read.format("kafka-log"), the README's first Spark line: decoded in the JVM, pruned to the columns
    the query reads; what the engine does not decode yet goes to the Python data source under the same name."""
    df = spark.read.format("kafka-log").load(str(corpus))
    assert _engine(df) == "jvm"
    plan = df.select("offset", "value")._jdf.queryExecution().executedPlan().toString()
    assert "kafka-log[value" in plan and "headers" not in plan  # only the columns read are built
    skip = spark.read.format("kafka-log").option("on_corrupt", "skip").load(str(corpus))
    assert _engine(skip) == "jvm"
    other = spark.read.format("kafka-log").option("backend", "python").load(str(corpus))
    assert _engine(other) == "python"  # a backend choice: the Python data source's
    assert _rows(df) == _rows(skip) == _rows(other) == _rows(kfmt.spark.read(spark, str(corpus), engine="python"))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kl_sql USING `kafka-log` OPTIONS (path '{corpus}')")
    assert spark.sql("SELECT count(*) FROM kl_sql").first()[0] == df.count()
    # a table the JVM engine hands to the Python data source gets the table's options (its path) too
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kl_py USING `kafka-log` OPTIONS (path '{corpus}', backend 'python')")
    assert spark.sql("SELECT count(*) FROM kl_py").first()[0] == df.count()
    assert _engine(spark.sql("SELECT offset FROM kl_py")) == "python"


def test_edge_offsets_are_read(spark, tmp_path):
    """A record at offset 2^63-1 (v0, v1 and v2 alike) is a row in both engines (the JVM engine once used the
    bound Long.MAX_VALUE exclusively and returned no row)."""
    top = (1 << 63) - 1
    for magic in (0, 1, 2):
        folder = tmp_path / f"edge{magic}-0"
        folder.mkdir()
        rec = kfmt.Record(key=b"k", value=b"last", timestamp=1_700_000_000_000)
        (folder / f"{0:020d}.log").write_bytes(kfmt.encode_batch([rec], magic=magic, base_offset=top))
        a = kfmt.spark.read(spark, str(folder), engine="jvm")
        b = kfmt.spark.read(spark, str(folder), engine="python")
        assert _rows(a, ("offset", "value")) == _rows(b, ("offset", "value")) == [(top, b"last")], magic


def test_a_java_application_reads_with_the_jar_alone(tmp_path, corpus):
    """The README's Java recipe, run as written: spark-submit --jars with kfmt's jar, no PySpark in the application
    (tests/jvm_app/ReadLogs.java): the source plans through `python -m kfmt.spark.planner` (spark.kfmt.python) and
    decodes in the JVM; SQL's CREATE TABLE ... USING kafka-log too; and it writes, committed by the planner process."""
    import subprocess
    import sys
    import zipfile

    import pyspark

    home = os.path.dirname(pyspark.__file__)
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", os.path.join(home, "jars", "*"), "-d", str(classes),
                    str(ROOT / "tests" / "jvm_app" / "ReadLogs.java")], check=True, capture_output=True)  # fmt: skip
    with zipfile.ZipFile(tmp_path / "read-logs.jar", "w") as z:
        for p in classes.rglob("*.class"):
            z.write(p, p.relative_to(classes).as_posix())
    from test_readme import _block

    block = "spark-submit --jars" + _block("bash", "spark-submit --jars").split("spark-submit --jars", 1)[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.path.join(home, "bin"), env.get("PATH", "")])
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    command = block.replace("/data/kafka-logs", str(corpus)).replace("/data/copy", str(tmp_path / "copy"))
    command = command.replace("spark-submit", "spark-submit --master local[2]", 1)
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert out.returncode == 0, "\n".join(x for x in out.stderr.splitlines() if "Exception" in x or "rror" in x)[:1500]
    lines = [line.split("\t") for line in out.stdout.splitlines()]
    expect: dict = {}
    for r in kfmt.read_arrow(str(corpus), columns=["topic", "partition", "offset"]).to_pylist():
        expect.setdefault((r["topic"], r["partition"]), []).append(r["offset"])
    got = {(t, int(p)): (int(n), int(last)) for t, p, n, last in (x for x in lines if len(x) == 4)}
    assert got == {k: (len(v), max(v)) for k, v in expect.items()} and got
    assert ["sql", str(sum(n for n, _ in got.values()))] in lines and ["plan", "true"] in lines
    # the write: encoded in the JVM, committed by the planner process; what it wrote is every record again
    assert ["copy", str(sum(n for n, _ in got.values()))] in lines
    assert kfmt.read_arrow(str(tmp_path / "copy"), columns=["offset"]).num_rows == sum(n for n, _ in got.values())


STORE_READS = r"""
import hashlib, json, sys
from pyspark.sql import SparkSession
import kfmt.spark
from kfmt.spark import jvm

test_jar, root, endpoint = sys.argv[1:4]
builder = SparkSession.builder.master("local[1]").config("spark.jars", f"{jvm.jar()},{test_jar}")
for scheme in ("s3", "kfmtstore", "hdfs"):  # s3: pyarrow lists it (the S3 server); the others only Hadoop reaches
    builder = builder.config(f"spark.hadoop.fs.{scheme}.impl", "KfmtTestStore").config(
        f"spark.hadoop.fs.{scheme}.impl.disable.cache", "true")
spark = builder.config("spark.hadoop.kfmt.test.root", root).config("spark.ui.enabled", "false").getOrCreate()
kfmt.spark.register(spark)
s3 = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "test", "s3.secret_key": "test"}
for fault, uri, options in (("none", "s3://logs/kafka", s3), ("ioerror", "s3://logs/kafka", s3),
                            ("none", "kfmtstore://logs/kafka", {}), ("none", "hdfs://logs/kafka", {}),
                            ("committed", "kfmtstore://logs/kafka", {"isolation": "read_committed"}),
                            ("ioerror", "kfmtstore://logs/kafka", {})):
    spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", fault if fault != "committed" else "none")
    try:
        df = spark.read.format("kafka-log").options(**options).load(uri)
        engine = "jvm" if "jvm engine" in df._jdf.queryExecution().executedPlan().toString() else "python"
        rows = sorted((r[0], r[1], r[2], bytes(r[3] or b"").hex(), bytes(r[4] or b"").hex())
                      for r in df.select("topic", "partition", "offset", "key", "value").collect())
        out = {"rows": len(rows), "digest": hashlib.sha256(repr(rows).encode()).hexdigest(), "engine": engine}
    except Exception as e:
        out = {"error": str(e)}
    print(json.dumps(dict(out, fault=fault, uri=uri)), flush=True)
spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", "none")
for uri in ("kfmtstore://logs/captures", "kfmtstore://logs/captures/*/kafka.pcap*"):  # kafka-capture: folder, glob
    found = spark.read.format("kafka-capture").load(uri)
    files = sorted(r[0] for r in found.select("capture").distinct().collect())
    records = spark.read.format("kafka-capture").option("rows", "records").load(uri).count()
    print(json.dumps({"fault": "capture", "uri": uri, "rows": found.count(), "records": records, "files": files}))
spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", "ioerror")
try:
    spark.read.format("kafka-capture").load("kfmtstore://logs/captures/ntop+nDPI/kafka.pcapng").count()
except Exception as e:
    print(json.dumps({"fault": "capture-ioerror", "uri": "kfmtstore://logs/captures", "error": str(e)}))
spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", "hang")
try:  # a store that never answers: the read fails once option read_timeout has passed
    spark.read.format("kafka-capture").option("read_timeout", "1").load(
        "kfmtstore://logs/captures/ntop+nDPI/kafka.pcapng").count()
except Exception as e:
    print(json.dumps({"fault": "capture-hang", "uri": "kfmtstore://logs/captures", "error": str(e)}))
spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", "none")
spark.sparkContext._jvm.kfmt.jvm.Planner.use(None)  # as from Scala: a planner process, the stores through Py4J
spark.sparkContext._jsc.hadoopConfiguration().set("kfmt.test.fault", "none")
df = spark.read.format("kafka-log").load("kfmtstore://logs/kafka")
rows = sorted((r[0], r[1], r[2], bytes(r[3] or b"").hex(), bytes(r[4] or b"").hex())
              for r in df.select("topic", "partition", "offset", "key", "value").collect())
print(json.dumps({"rows": len(rows), "digest": hashlib.sha256(repr(rows).encode()).hexdigest(), "engine": "jvm",
                  "fault": "process", "uri": "kfmtstore://logs/kafka"}), flush=True)
spark.stop()
"""


@pytest.fixture(scope="module")
def test_store(tmp_path_factory):
    """A store by URI for the JVM engine: the test's Hadoop FileSystem for s3:// (tests/jvm_app/KfmtTestStore.java,
    compiled here) over a local mirror of the objects an S3 API server on 127.0.0.1 holds (the planner lists the
    server); yields a namespace: jar, mirror, endpoint, the read options, and the local corpus's rows."""
    import shutil
    import subprocess
    import zipfile
    from types import SimpleNamespace

    import pyspark

    pytest.importorskip("moto")
    from s3server import s3_server

    tmp = tmp_path_factory.mktemp("store")
    corpus = tmp / "logs"  # every codec, legacy segments, a transaction aborted
    synth(corpus, SynthConfig(seed=5, topics=("orders",), partitions=2, records=150, segment_bytes=64 * 1024))
    home = os.path.dirname(pyspark.__file__)
    subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", os.path.join(home, "jars", "*"), "-d",
                    str(tmp / "classes"), str(ROOT / "tests" / "jvm_app" / "KfmtTestStore.java")], check=True,
                   capture_output=True)  # fmt: skip
    jar = tmp / "test-store.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for p in (tmp / "classes").rglob("*.class"):
            z.write(p, p.relative_to(tmp / "classes").as_posix())
    shutil.copytree(corpus, tmp / "mirror" / "logs" / "kafka")
    shutil.copytree(ROOT.parent / "shared" / "fixtures" / "wire-captures", tmp / "mirror" / "logs" / "captures")

    def rows(**options):
        got = kfmt.read_arrow(str(corpus), columns=["topic", "partition", "offset", "key", "value"], **options)
        return sorted((r["topic"], r["partition"], r["offset"], (r["key"] or b"").hex(), (r["value"] or b"").hex())
                      for r in got.to_pylist())  # fmt: skip

    local, committed = rows(), rows(isolation="read_committed")
    assert len(committed) < len(local)  # a transaction aborted
    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="logs")
        for p in corpus.rglob("*"):
            if p.is_file():
                s3.put_object(Bucket="logs", Key=f"kafka/{p.relative_to(corpus).as_posix()}", Body=p.read_bytes())
        opts = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "test", "s3.secret_key": "test"}
        yield SimpleNamespace(
            jar=jar, mirror=tmp / "mirror", endpoint=endpoint, options=opts, local=local, committed=committed
        )


def test_a_store_read_through_hadoops_filesystem(test_store):
    """The executors read a store by URI through Hadoop's FileSystem API, as Spark's own sources do (the test store
    registered for s3://): a plain read gives the local folder's rows, and a store that fails gives the PySpark
    user one line naming the object and the byte. Without a Hadoop FileSystem for a scheme the planner hands the
    read to the Python engine, saying so."""
    import hashlib
    import subprocess
    import sys

    from kfmt.spark.planner import answer

    def digest(rows):
        return {"rows": len(rows), "digest": hashlib.sha256(repr(rows).encode()).hexdigest(), "engine": "jvm"}

    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, KFMT_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, "-c", STORE_READS, str(test_store.jar), str(test_store.mirror),
                          test_store.endpoint], capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    got = {(r.pop("fault"), r.pop("uri")): r for r in map(json.loads, out.stdout.splitlines())}
    for uri in ("s3://logs/kafka", "kfmtstore://logs/kafka", "hdfs://logs/kafka"):  # listed by pyarrow / by Hadoop
        assert got["none", uri] == digest(test_store.local), (uri, got["none", uri])
        if uri != "hdfs://logs/kafka":
            _one_line_naming_the_object(got["ioerror", uri].get("error"), "injected: connection reset", uri)
    assert got["committed", "kfmtstore://logs/kafka"] == digest(test_store.committed)  # transactions read by Hadoop
    assert got["process", "kfmtstore://logs/kafka"] == digest(test_store.local)  # planned by a planner process
    from test_capture_spark import PUBLIC, dump

    for uri, pattern in (("kfmtstore://logs/captures", "*/*.pcap*"), ("kfmtstore://logs/captures/*/kafka.pcap*",
                                                                     "*/kafka.pcap*")):  # fmt: skip
        files = sorted(PUBLIC.glob(pattern))
        want = {"rows": sum(len(dump(p)[0]) for p in files), "records": sum(len(dump(p, "--records")[0]) for p in files),
                "files": [f"kfmtstore://logs/captures/{p.relative_to(PUBLIC).as_posix()}" for p in files]}  # fmt: skip
        assert got["capture", uri] == want and len(files) >= 3, (uri, got["capture", uri], want)
    failed = got["capture-ioerror", "kfmtstore://logs/captures"]["error"]
    assert failed.startswith("kafka-capture: kfmtstore://logs/captures/ntop+nDPI/kafka.pcapng: could not be read: ")
    assert "injected: connection reset" in failed and "\n" not in failed, failed
    hung = got["capture-hang", "kfmtstore://logs/captures"]["error"]
    assert hung.startswith("kafka-capture: kfmtstore://logs/captures/ntop+nDPI/kafka.pcapng: could not be read: ")
    assert "the store gave no answer in 1.0 s (option read_timeout)" in hung and "\n" not in hung, hung
    s3a = answer({"options": dict(test_store.options, path="s3a://logs/kafka"), "jvm_schemes": ["s3"]})
    assert s3a == {
        "python": "no Hadoop FileSystem for s3a:// in this JVM (the store's connector is not on its classpath)"
    }  # the JVM that asks has none: the Python data source reads it (test_spark.py)


def test_every_store_fault_gives_the_rows_or_one_line(test_store):
    """Every fault of the test store, through the executors' reader without Spark (kfmt.jvm.Check, one JVM, the
    plan kfmt's planner makes): short and slow reads give the plain read's rows; a store that gives no bytes,
    fails, or never answers (option read_timeout) gives the one line naming the object and the byte; never
    other rows."""
    from kfmt.spark.planner import answer

    opts = dict(test_store.options, path="s3://logs/kafka", read_timeout="1")
    made = answer({"options": opts, "defaults": {"min_partitions": 3}, "columns": None, "jvm_schemes": ["s3"]})
    hadoop = {"fs.s3.impl": "KfmtTestStore", "fs.s3.impl.disable.cache": "true", "kfmt.test.root": test_store.mirror,
              "kfmt.test.stall_ms": 20}  # fmt: skip
    first = json.dumps(dict(json.loads(made["plan"]), groups=json.loads(made["plan"])["groups"][:1]))
    faults = {"zero": "IOException: no bytes read at byte", "ioerror": "injected: connection reset",
              "hang": "the store gave no answer in 1.0 s (option read_timeout)"}  # fmt: skip
    runs = [(made["plan"], {"kfmt.test.fault": f}) for f in ("none", "short", "stall")]
    runs += [(first, {"kfmt.test.fault": f}) for f in faults]  # the first task of each (a hang waits a second)
    groups = jvm.check(*runs, hadoop=hadoop, classpath=(test_store.jar,))
    n = len(json.loads(made["plan"])["groups"])
    plain, short, stall, failed = groups[:n], groups[n : 2 * n], groups[2 * n : 3 * n], groups[3 * n :]
    assert n > 1 and all(g[0] == "ok" for g in plain) and sum(g[1] for g in plain) == len(test_store.local)
    assert short == plain and stall == plain
    for (fault, why), g in zip(faults.items(), failed, strict=True):
        assert g[0] == "error", (fault, g)  # the one line, never other rows
        _one_line_naming_the_object(g[1], why)


def _one_line_naming_the_object(error, why: str, store: str = "s3://logs/kafka/") -> None:
    assert isinstance(error, str) and "\n" not in error, error
    assert error.startswith(f"kafka-log: reading {store}") and " failed at byte " in error and why in error


def test_a_segment_stored_compressed_whole_is_read_in_the_jvm(spark, tmp_path, corpus):
    """A segment stored compressed whole (as a remote storage plugin with compression on stores it: zstd frames,
    gzip members, LZ4 frames, framed snappy; one partition each, read in one job) is decompressed by the JVM engine
    as kfmt.storage.open_segment decompresses it: the rows of the Python engine, every column;
    compressed_objects=fail reads its bytes as they are, damage then, in both engines."""
    from test_tiered import _pack

    seg = sorted((corpus / "orders-0").glob("*.log"))[0]
    for partition, codec in enumerate(["zstd", "gzip", "lz4", "snappy"]):
        folder = tmp_path / f"orders-{partition}"
        folder.mkdir()
        (folder / seg.name).write_bytes(_pack(seg.read_bytes(), codec))
    a = kfmt.spark.read(spark, str(tmp_path), engine="jvm")
    b = kfmt.spark.read(spark, str(tmp_path), engine="python")
    plain = kfmt.spark.read(spark, str(seg), engine="jvm")
    rows = _rows(a)
    assert _engine(a) == "jvm" and rows == _rows(b) and len(rows) == 4 * plain.count() > 0
    assert {r[COLUMNS.index("partition")] for r in rows} == {0, 1, 2, 3}
    for engine in ("jvm", "python"):
        with pytest.raises(Exception, match="kafka-log: corrupt batch in"):
            kfmt.spark.read(spark, str(tmp_path), engine=engine, compressed_objects="fail").count()


def _journals() -> list:
    """Journal bodies of every shape kfmt.table.commit reads (ready or not, not reading, odd fields), None: none."""
    base = {"id": "c0ffee", "mode": "overwrite", "puts": [], "removes": [], "marker": {}, "host": "h1", "pid": 42,
            "started": 1769791662.75, "ready": True, "version": None}  # fmt: skip
    put = {"staged": "a", "final": "b", "size": 3}
    out: list = [None, b"", b"{", b"[]", b'"x"', b"null", json.dumps(base).encode()[:40]]
    for ready in (True, False, 1, 0, "", "no", [], [0], {}, None):
        out.append(json.dumps(dict(base, ready=ready)).encode())
    for puts in ([], "", {}, "x", [{}], [put], [dict(put, extra=1)], [dict(put, batches=1, last_offset=9)], None, 5):
        out.append(json.dumps(dict(base, puts=puts)).encode())
    for gone in ("id", "mode", "puts", "host", "ready"):  # (without pid or started, each reader names its own)
        out.append(json.dumps({k: v for k, v in base.items() if k != gone}).encode())
    out += [json.dumps(dict(base, extra=1)).encode(), json.dumps(dict(base, started=0)).encode(),
            json.dumps(dict(base, pid="x", host=7, mode=None)).encode()]  # fmt: skip
    return out


def test_table_checks_follow_the_python_rule(tmp_path):
    """#35 item 1: a kfmt table's re-check after a task has read (a commit being applied, or the table replaced
    since the plan) is kfmt.table.commit's decision; the JVM engine's copy (kfmt.jvm.TableCheck) gives the same
    answer and the same message on every journal, marker and planned version."""
    import subprocess

    from kfmt.table.commit import MARKER, PENDING, CommitError, check_unchanged

    markers = [None, b"", b"[1]", b'"v1"', b"{", b'{"version": "v1"}', b'{"commit": "v1"}', b'{"version": null,'
               b' "commit": "v1"}', b'{"version": 1}', b'{"version": 1.0}', b'{"other": 2}']  # fmt: skip
    seens = [None, "v1", 1, "v2"]
    lines, want = [], []
    for i, journal in enumerate(_journals()):
        for k, marker in enumerate(markers):
            root = tmp_path / f"t{i}-{k}"
            root.mkdir()
            for name, body in ((PENDING, journal), (MARKER, marker)):
                if body is not None:
                    (root / name).write_bytes(body)
            for seen in seens:
                try:
                    from kfmt.table.commit import _LocalView

                    check_unchanged(_LocalView(str(root)), str(root), seen)
                    want.append("ok")
                except CommitError as e:
                    want.append(f"error\t{e}")
                files = [str(root / n) if b is not None else "-" for n, b in ((PENDING, journal), (MARKER, marker))]
                lines.append("\t".join([*files, json.dumps(seen), str(root)]))
    import pyspark

    cp = os.pathsep.join([jvm.jar(), os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")])
    r = subprocess.run(["java", "-cp", cp, "kfmt.jvm.TableCheck"], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    got = r.stdout.splitlines()
    assert len(got) == len(want) > 1000 and {w.split("\t")[0] for w in want} == {"ok", "error"}
    differ = [(ln, w, g) for ln, w, g in zip(lines, want, got, strict=True) if w != g]
    assert not differ, differ[:5]


def test_a_kfmt_table_is_read_in_the_jvm_and_rechecked(spark, tmp_path):
    """A table kfmt wrote is decoded by the JVM engine (not handed to Python); a task that reads it after a commit
    replaced it since the plan fails with kfmt's one line instead of returning rows of two versions."""
    from kfmt.spark.planner import answer

    src = tmp_path / "src" / "orders-0"
    src.mkdir(parents=True)
    src.joinpath(f"{0:020d}.log").write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v%d" % i) for i in range(5)]))
    out = tmp_path / "table"
    kfmt.spark.save(spark.read.format("kafka-log").load(str(tmp_path / "src")), str(out))
    df = spark.read.format("kafka-log").load(str(out))
    assert _engine(df) == "jvm" and sorted(r.value for r in df.select("value").collect()) == [
        b"v%d" % i for i in range(5)
    ]
    made = answer({"options": {"path": str(out)}, "defaults": {}, "columns": None})
    assert "plan" in made and json.loads(made["plan"])["tables"][0]["version"] is not None
    assert jvm.check(made["plan"])[0][:2] == ("ok", 5)
    kfmt.spark.save(spark.read.format("kafka-log").load(str(tmp_path / "src")), str(out), mode="overwrite")
    (got,) = jvm.check(made["plan"])  # the plan made before the overwrite, read after it
    assert got[0] == "error" and "the table was rewritten while it was read" in got[1], got
    assert got[1].startswith("kafka-log: ") and "\n" not in got[1]


def test_a_stream_planned_by_a_planner_process(tmp_path):
    """From Scala, Java or SQL a stream's planner is a process per call (python -m kfmt.spark.planner): with no
    state kept between calls it gives the answers the driver's interpreter gives, which keeps each stream's
    reader (its tails of the last segments) between calls."""
    import subprocess
    import sys

    from kfmt.spark.planner import answer

    d = tmp_path / "t-0"
    d.mkdir()
    d.joinpath(f"{0:020d}.log").write_bytes(b"".join(kfmt.encode_batch([kfmt.Record(value=b"v")] * 3, base_offset=b)
                                                      for b in range(0, 30, 3)))  # fmt: skip
    opts = {"path": str(tmp_path), "startingOffsets": "earliest", "maxOffsetsPerTrigger": "7"}

    def both(call, **offsets):
        req = {"options": opts, "defaults": {}, "columns": None, "stream": {"id": "s1", "call": call, **offsets}}
        r = subprocess.run([sys.executable, "-m", "kfmt.spark.planner"], input=json.dumps(req), capture_output=True,
                           text=True, check=True)  # fmt: skip
        here, there = answer(req), json.loads(r.stdout)
        assert here == there, (call, here, there)
        return here

    opened = both("open")
    settings = json.loads(opened["plan"])
    assert settings["groups"] == [] and settings["on_corrupt"] == "fail" and opened["max_offsets"] == 7
    start = both("initial")["offset"]
    assert json.loads(start) == {"t": {"0": 0}}
    end = both("latest", start=start, limit=7)["offset"]
    assert json.loads(end) == {"t": {"0": 7}}
    plan = json.loads(both("plan", start=start, end=end)["plan"])
    (only,) = plan["groups"]
    assert [(s["first"], s["stop"]) for s in only] == [(0, 7)]
    assert both("latest", start=end, until=json.dumps({"t": {"0": 9}}))["offset"] == '{"t":{"0":9}}'
    assert both("commit", end=end) == {} and both("close") == {}


def _drawn_payloads(n: int) -> list:
    """Records of Kafka's own topics drawn as the payload property tests draw them (kafka-python's encoders from
    Kafka's JSON specs: every KRaft metadata record, remote log metadata record and coordinator record at every
    version, nulls, tagged fields set or absent, unknown tags, sections reshaped), ``n`` of each kind, each also
    cut short and with a byte flipped (so that errors are compared too)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from test_kafka_payloads import _pairs
    from test_payload_properties import FRAMED, coordinator_record, framed_record

    rows: list = []
    drawn = settings(max_examples=n, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck))  # fmt: skip

    def framed_of(framed):
        @drawn
        @given(st.data())
        def one(data):
            rows.append((framed[1], None, framed_record(data, framed)[0]))

        return one

    def coordinator_of(pair):
        @drawn
        @given(st.data())
        def two(data):
            key, value, *_ = coordinator_record(data, pair)
            rows.append((pair[0], key, value))

        return two

    for framed in FRAMED:
        framed_of(framed)()
    for pair in _pairs():
        coordinator_of(pair)()
    damaged = []
    for topic, key, value in rows:
        cut = (topic, key, value[: len(value) * 2 // 3])
        flip = bytearray(value)
        flip[len(flip) * 3 // 4] ^= 0x55
        damaged += [cut, (topic, key, bytes(flip))]
    return rows + damaged + [(t, k[:3], v) for t, k, v in rows[:200] if k]  # and keys cut short


def test_payloads_decoded_in_the_jvm_as_kfmt_payloads_decodes_them():
    """decode_payloads' columns from the JVM's payload decoders (the jvm backend's lowering of Kafka's message
    encoding: versions, compact lengths, tagged fields, switches, nullable structs, views, enums) equal
    kfmt.log.arrow.add_decoded's, text for text (the JSON of kfmt.payloads, and why a payload did not decode): on
    records drawn from Kafka's own specs by kafka-python (whole, cut short, a byte flipped) and on every record of
    Kafka's own topics the real brokers' fixtures hold."""
    import pyarrow as pa

    from kfmt.log.arrow import DECODED, add_decoded
    from kfmt.payloads import binding

    rows = _drawn_payloads(12)
    for d in sorted((ROOT.parent / "shared" / "fixtures" / "real-broker").glob("*/")):
        for r in kfmt.read_arrow(str(d), columns=["topic", "key", "value", "is_control"]).to_pylist():
            if not r["is_control"] and binding(r["topic"]) and (r["key"] is not None or r["value"] is not None):
                rows.append((r["topic"], r["key"], r["value"]))
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": [t for t, _, _ in rows],
            "key": [k for _, k, _ in rows],
            "value": [v for _, _, v in rows],
            "is_control": [False] * len(rows),
        },  # fmt: skip
        schema=pa.schema(
            [("topic", pa.string()), ("key", pa.binary()), ("value", pa.binary()), ("is_control", pa.bool_())]
        ),
    )
    want = list(zip(*(add_decoded(pa, batch, DECODED).column(c).to_pylist() for c in DECODED)))
    got = jvm.payload_check(rows)
    differ = [
        (rows[i][0], (rows[i][1] or b"").hex(), rows[i][2].hex(), w, g)
        for i, (w, g) in enumerate(zip(want, got))
        if w != g
    ]
    assert len(got) == len(rows) and not differ, (len(differ), differ[:3])
    decoded, errors = sum(w[1] is not None for w in want), sum(w[2] is not None for w in want)
    assert len(rows) > 10_000 and decoded > len(rows) // 2 and errors > 500, (len(rows), decoded, errors)


def test_decode_payloads_in_the_jvm_on_real_brokers(spark):
    """Option decode_payloads decoded in the JVM (no Python worker): on every real broker's log directory (internal
    topics __consumer_offsets, __transaction_state, __cluster_metadata, and users' topics), the rows and the three
    decoded columns of read_arrow(decode_payloads=True), the Python reader's one definition."""
    cols = ["topic", "partition", "offset", "key_decoded", "value_decoded", "payload_error"]
    decoded = 0
    for d in sorted((ROOT.parent / "shared" / "fixtures" / "real-broker").glob("*/")):
        df = kfmt.spark.read(spark, str(d), decode_payloads="true")
        assert _engine(df) == "jvm"
        got = sorted(tuple(r) for r in df.select(*cols).collect())
        want = sorted(
            tuple(r.values()) for r in kfmt.read_arrow(str(d), columns=cols, decode_payloads=True).to_pylist()
        )
        assert got == want, d.name
        decoded += sum(r[4] is not None for r in got)
    assert decoded > 10_000


@pytest.mark.parametrize("on_corrupt", ["skip", "quarantine"])
def test_decode_payloads_on_a_damaged_internal_topic(spark, tmp_path, on_corrupt):
    """decode_payloads with damage, in the JVM: a real broker's __consumer_offsets segment with bytes flipped in
    three places (some batches' CRCs fail, so a region is skipped or quarantined, and records whose payloads
    no longer decode keep their rows with payload_error) gives read_arrow's rows and decoded columns (a quarantine
    row's error said in the engine's own words: the JVM's texts for damaged entries are not the Python reader's
    yet; where and what the region is are the same)."""
    import shutil

    src = ROOT.parent / "shared" / "fixtures" / "real-broker" / "zk-2.1snap-William0423" / "__consumer_offsets-28"
    dst = tmp_path / "logs" / "__consumer_offsets-28"
    shutil.copytree(src, dst)
    seg = dst / f"{0:020d}.log"
    data = bytearray(seg.read_bytes())
    for at in (len(data) // 5, len(data) // 2, len(data) * 4 // 5):
        data[at] ^= 0x5A
    seg.write_bytes(bytes(data))
    cols = ["offset", "position", "error", "key_decoded", "value_decoded", "payload_error"]
    opts = {"decode_payloads": "true", "on_corrupt": on_corrupt}
    df = kfmt.spark.read(spark, str(tmp_path / "logs"), **opts)
    assert _engine(df) == "jvm"

    def rows(values):
        return sorted(((*r[:2], r[2] is None, *r[3:]) for r in values), key=repr)

    got = rows(tuple(r) for r in df.select(*cols).collect())
    want = kfmt.read_arrow(str(tmp_path / "logs"), columns=cols, decode_payloads=True, on_corrupt=on_corrupt)
    assert got == rows(tuple(r.values()) for r in want.to_pylist())
    records = sum(r[2] for r in got)  # (rows that are not quarantine rows)
    assert sum(r[3] is not None for r in got) > 100 and records < kfmt.read_arrow(str(src), columns=["offset"]).num_rows


# ------------------------------------------------------------------ writes: the generated encoders and the writer
ENCODED = ("kafka_v0", "kafka_v1", "kafka_v2", "v2_no_record_attributes", "v3_no_record_attributes", "kip98_draft")
#: codecs whose compressed bytes both engines' libraries choose alike (zlib, zstd 1.5.7 streaming); lz4-java and
#: python-lz4, snappy-java and cramjam's snappy may choose other (equally valid) compressed bytes
SAME_BYTES = ("none", "gzip", "zstd")


def _batches_of(fmt: str, data: bytes) -> list:
    """Every entry of ``data`` decoded by the python backend, as what a reader gets: batch values and records."""
    mod = kfmt.get_format(fmt)
    out, pos = [], 0
    while pos < len(data):
        b, pos = mod.decode_from(data, pos)
        head = tuple(getattr(b, a, None) for a in ("base_offset", "last_offset", "codec", "producer_id", "producer_epoch",
                                                   "base_sequence", "is_transactional", "timestamp_type", "max_timestamp"))  # fmt: skip
        out.append((head, [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records]))
    return out


def _random_batches(seed: int, per: int):
    """(format, codec, python's batch fields, records) drawn for every format with a Java encoder and every codec."""
    import random

    from kfmt.runtime.compression import CODECS

    rnd = random.Random(seed)

    def blob():
        return None if rnd.random() < 0.1 else bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 5, 40, 300])))

    for fmt in ENCODED:
        mod = kfmt.get_format(fmt)
        for codec in CODECS:
            for _ in range(per):
                off = rnd.choice([0, 5, 2**40, 2**63 - 200])
                recs = []
                for _ in range(rnd.choice([1, 2, 7, 50])):
                    off += rnd.choice([1, 1, 1, 3])
                    ts = rnd.choice([-1, 0, 1_600_000_000_000 + rnd.randrange(10**6)])
                    hs = [] if "headers" not in mod.CARRIES else [(f"h{j}", blob()) for j in range(rnd.randrange(3))]
                    recs.append((off, ts, blob(), blob(), hs))
                fields: dict = {}
                if mod.ROLE != "message":
                    fields = {"producer_id": rnd.choice([-1, 77]), "producer_epoch": rnd.choice([-1, 3]),
                              "base_sequence": rnd.choice([-1, 9]), "is_transactional": rnd.random() < 0.5,
                              "timestamp_type": rnd.choice([0, 1])}  # fmt: skip
                    if "partition_leader_epoch" in mod.ROOT._fields:
                        fields["partition_leader_epoch"] = rnd.choice([-1, 4])
                elif "timestamp_type" in mod.CARRIES:
                    fields = {"timestamp_type": rnd.choice([0, 1])}
                yield fmt, codec, fields, recs


def test_generated_encoders_write_what_encode_batch_writes():
    """The jvm backend's encoders (generated from the IR, run by kfmt.jvm.EncodeCheck) against kfmt.encode_batch on
    random batches of every format they encode, every codec, edge offsets: the same bytes where both engines'
    compressors choose the same (none, gzip, zstd), else the same batches read back; the same refusals (zstd below
    magic 2)."""
    from kfmt.runtime.compression import CODECS

    drawn = list(_random_batches(1797000000, 20))
    asks = []
    for fmt, codec, fields, recs in drawn:
        jf = {k: int(v) for k, v in fields.items()}
        jf.update(codec=CODECS.index(codec), base_offset=recs[0][0])
        asks.append((fmt, jf, [(o, t, k, v, [(a.encode(), b) for a, b in hs]) for o, t, k, v, hs in recs]))
    got = jvm.encode_check(asks)
    assert len(got) == len(drawn) == 600
    compared = 0
    for (fmt, codec, fields, recs), g in zip(drawn, got):
        records = [kfmt.Record(key=k, value=v, headers=hs, timestamp=t, offset=o) for o, t, k, v, hs in recs]
        try:
            want = kfmt.encode_batch(records, format=fmt, codec=codec, keep_offsets=True, base_offset=recs[0][0],
                                     **fields)  # fmt: skip
        except kfmt.CodecError as e:
            assert isinstance(g, str) and "zstd is not allowed" in g and "zstd is not allowed" in str(e), (fmt, codec)
            continue
        assert isinstance(g, bytes), (fmt, codec, g)
        if codec in SAME_BYTES:
            assert g == want, (fmt, codec)
        else:
            assert _batches_of(fmt, g) == _batches_of(fmt, want), (fmt, codec)
        compared += 1
    assert compared > 450  # (600 less the zstd refusals of magic 0 and 1)


def _tree_bytes(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("magic,codec,extra", [
    (2, "none", {}), (2, "zstd", {"keep_batches": "false", "batch_records": "7"}), (2, "lz4", {}),
    (1, "gzip", {}), (0, "snappy", {"segment_bytes": "4096"}),
])  # fmt: skip
def test_the_jvm_writer_writes_what_the_python_writer_writes(spark, corpus, tmp_path, magic, codec, extra):
    """df.write.format("kafka-log") encoded in the JVM (the default) against kfmt's Python data source
    (engine=python) on the same rows: every file the same bytes (segments, indexes, broker files; the topic ids
    given) where both compressors choose alike, else the same rows read back and the same files; magic 0 and 1 are
    written from the rows they can carry."""
    df = spark.read.format("kafka-log").load(str(corpus))
    if magic < 2:
        df = df.where("NOT is_control AND NOT is_transactional AND producer_id = -1 AND size(headers) = 0 "
                      "AND partition_leader_epoch = -1 AND delete_horizon IS NULL")  # fmt: skip
    ids = json.dumps({t: c * 22 for t, c in (("orders", "A"), ("clicks", "B"), ("legacy", "C"))})
    out = {}
    for engine in ("jvm", "python"):
        w = (
            df.write.format("kafka-log")
            .mode("overwrite")
            .options(magic=magic, codec=codec, topic_ids=ids, engine=engine)
        )
        w.options(**extra).save(str(tmp_path / engine))
        out[engine] = _tree_bytes(tmp_path / engine)
    a, b = out["jvm"], out["python"]
    assert set(a) == set(b) and any(k.endswith(".log") for k in a)
    for name in a:
        if name == "_KFMT_SUCCESS":
            continue
        if codec in SAME_BYTES or not name.endswith((".log", ".index", ".timeindex")):
            assert a[name] == b[name], name
    cols = ["topic", "partition", "offset", "timestamp_ms", "key", "value", "headers", "magic", "codec", "producer_id",
            "is_transactional", "is_control", "timestampType", "partition_leader_epoch"]  # fmt: skip

    def rows(p):
        return sorted(map(repr, kfmt.read_arrow(str(p), columns=cols).to_pylist()))

    assert rows(tmp_path / "jvm") == rows(tmp_path / "python") and rows(tmp_path / "jvm")
