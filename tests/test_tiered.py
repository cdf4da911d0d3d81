"""Tiered-storage layouts (KIP-405) and objects stored compressed: topic, partition and base offset from
every naming form, and a file that holds no entry is an error, never 0 rows."""

import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

import kfmt
from kfmt import read_arrow
from kfmt.logdir.layout import compressed_object, find_segments, topic_partition

ID = "AbCdEfGhIjKlMnOpQrStUv"  # a topic id as Kafka prints a Uuid: 22 characters of URL-safe base64
SEG = "ZyXwVuTs-RqPoNmLkJi_Fe"


def _segment(base: int, n: int = 30) -> bytes:
    recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * 20, timestamp=1000 + i) for i in range(n)]
    return b"".join(kfmt.encode_batch(recs[i : i + 10], base_offset=base + i) for i in range(0, n, 10))


LAYOUTS = {
    "local log": "orders-3/{base:020d}.log",
    "remote storage plugins": f"orders-{ID}/3/{{base:020d}}-{SEG}.log",
    "LocalTieredStorage": f"orders-3-{ID}/{{base}}-{SEG}.log",
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_layout_names_topic_partition_and_base_offset(tmp_path, layout):
    for base in (0, 100, 200):
        p = tmp_path / LAYOUTS[layout].format(base=base)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(_segment(base))
    segs = find_segments(tmp_path)
    assert [(s.topic, s.partition, s.base_offset) for s in segs] == [("orders", 3, b) for b in (0, 100, 200)]
    t = read_arrow(segs[1].path)
    assert set(t["topic"].to_pylist()) == {"orders"} and set(t["partition"].to_pylist()) == {3}
    assert t["offset"].to_pylist() == list(range(100, 130))


def test_offset_bounds_plan_on_tiered_names(tmp_path):
    """The reader prunes segments by the base offsets their names give (a wrong base offset pruned the
    wrong segments and returned too few rows, silently)."""
    pytest.importorskip("pyspark")
    from kfmt.spark.source import KafkaLogReader

    for base in (0, 100, 200):
        p = tmp_path / LAYOUTS["remote storage plugins"].format(base=base)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(_segment(base))
    reader = KafkaLogReader({"path": str(tmp_path), "startingOffsets": '{"orders": {"3": 150}}'})
    kept = sorted({sl.path for g in reader.partitions() for sl in g.slices})
    assert [p.rsplit("/", 1)[1][:20] for p in kept] == ["00000000000000000100", "00000000000000000200"]


def test_partition_folder_forms():
    from pathlib import Path

    assert topic_partition(Path("/x/orders-3")) == ("orders", 3)
    assert topic_partition(Path(f"/x/my-topic-12-{ID}")) == ("my-topic", 12)
    assert topic_partition(Path(f"/x/my-topic-{ID}/7")) == ("my-topic", 7)
    assert topic_partition(Path(f"/x/my-topic-{ID}-0")) == (f"my-topic-{ID}", 0)  # a topic named so
    assert topic_partition(Path("/x/notes")) == ("notes", -1)


@pytest.mark.parametrize("codec", ["zstd", "gzip"])
def test_a_segment_object_stored_compressed_is_reported(tmp_path, codec):
    import gzip

    raw = _segment(0)
    packed = zstandard.ZstdCompressor().compress(raw) if codec == "zstd" else gzip.compress(raw)
    assert compressed_object(packed) == codec
    p = tmp_path / f"orders-{ID}" / "0" / f"{0:020d}-{SEG}.log"
    p.parent.mkdir(parents=True)
    p.write_bytes(packed)
    for read in (lambda: list(kfmt.read_batches(str(p))), lambda: read_arrow(str(p), compressed_objects="fail")):
        with pytest.raises(kfmt.TruncatedError, match=f"{codec.split()[0]}-compressed stream.*decompress it first"):
            read()
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", str(p)], capture_output=True, text=True)
    assert r.returncode != 0 and "compressed stream" in r.stdout + r.stderr
    # bytes whose only batch is partial hold no entry: an error, as for a file (Kafka's consumer, given a fetch
    # payload from which no complete batch can be read, fails too: "Failed to make progress reading messages")
    with pytest.raises(kfmt.TruncatedError):
        list(kfmt.read_batches(raw[:50]))


def test_reading_segments_from_an_s3_server():
    """A tiered-storage bucket on an S3 API server (moto, on 127.0.0.1): listed and read through pyarrow.fs,
    with the same rows as from local disk."""
    pytest.importorskip("moto")
    from s3server import s3_server

    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="archive")
        local = {}
        for base in (0, 100, 200):
            key = LAYOUTS["remote storage plugins"].format(base=base)
            s3.put_object(Bucket="archive", Key=f"tiered/{key}", Body=_segment(base))
            local[base] = _segment(base)
        opts = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "test", "s3.secret_key": "test"}
        for scheme in ("s3", "s3a"):
            segs = find_segments(f"{scheme}://archive/tiered", opts)
            assert [(s.topic, s.partition, s.base_offset) for s in segs] == [("orders", 3, b) for b in (0, 100, 200)]
            for s, base in zip(segs, (0, 100, 200)):
                t = read_arrow(s.path, storage_options=opts)
                want = read_arrow(local[base], topic="orders", partition=3)
                for c in ("offset", "key", "value", "timestamp", "headers", "topic", "partition"):
                    assert t[c].to_pylist() == want[c].to_pylist(), c
        with pytest.raises(FileNotFoundError):
            find_segments("s3://archive/nothing-here", opts)


def test_globs_local_and_in_a_store(tmp_path):
    for topic in ("orders", "clicks"):
        for part in (0, 1):
            p = tmp_path / f"{topic}-{part}" / f"{0:020d}.log"
            p.parent.mkdir(parents=True)
            p.write_bytes(_segment(0, 10))
    got = find_segments(str(tmp_path / "orders-*"))
    assert [(s.topic, s.partition) for s in got] == [("orders", 0), ("orders", 1)]
    assert [s.partition for s in find_segments([str(tmp_path / "*-1")])] == [1, 1]
    with pytest.raises(FileNotFoundError, match="matching nothing"):
        find_segments(str(tmp_path / "nothing-*"))
    pytest.importorskip("moto")
    from s3server import s3_server

    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="globs")
        for seg in find_segments(tmp_path):
            s3.put_object(Bucket="globs", Key=f"logs/{seg.topic}-{seg.partition}/{0:020d}.log", Body=b"x" * 70)
        opts = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "t", "s3.secret_key": "t"}
        got = find_segments("s3://globs/logs/clicks-*", opts)
        assert [(s.topic, s.partition) for s in got] == [("clicks", 0), ("clicks", 1)]
        assert [s.topic for s in find_segments("s3a://globs/*/orders-1", opts)] == ["orders"]
        with pytest.raises(FileNotFoundError, match="matching nothing"):
            find_segments("s3://globs/logs/none-*", opts)


def test_read_committed_from_a_store(tmp_path):
    """read_committed on a log in a store: the planner finds its transactions in the objects (read by blocks of
    8 MiB, not a request per batch header) and leaves out the aborted ones, as from local disk (it once opened
    the URIs as local files and failed)."""
    pytest.importorskip("moto")
    from s3server import s3_server

    from kfmt.tools.synth import SynthConfig, synth

    synth(tmp_path / "logs", SynthConfig(seed=3, topics=("orders",), partitions=1, records=300, segment_bytes=16 << 10))
    cols = ["topic", "partition", "offset", "value"]
    local = read_arrow(str(tmp_path / "logs"), columns=cols, isolation="read_committed")
    assert local.num_rows < read_arrow(str(tmp_path / "logs"), columns=cols).num_rows  # something was aborted
    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="txn")
        for p in (tmp_path / "logs").rglob("*"):
            if p.is_file():
                s3.put_object(Bucket="txn", Key=f"k/{p.relative_to(tmp_path / 'logs').as_posix()}", Body=p.read_bytes())
        opts = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access_key": "t", "s3.secret_key": "t"}
        remote = read_arrow("s3://txn/k", columns=cols, isolation="read_committed", storage_options=opts)
    assert remote.to_pylist() == local.to_pylist()


def _pack(raw: bytes, codec: str) -> bytes:
    """A segment as a remote storage plugin stores it with compression on: zstd in independent frames per
    chunk (chunked as such plugins upload), one gzip member per chunk, LZ4 frames, framed snappy."""
    import gzip
    import io

    import lz4.frame
    import snappy

    chunks = [raw[i : i + 700] for i in range(0, len(raw), 700)]
    if codec == "zstd":
        return b"".join(zstandard.ZstdCompressor().compress(c) for c in chunks)
    if codec == "gzip":
        return b"".join(gzip.compress(c) for c in chunks)
    if codec == "lz4":
        return b"".join(lz4.frame.compress(c) for c in chunks)
    out = io.BytesIO()
    snappy.stream_compress(io.BytesIO(raw), out)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["zstd", "gzip", "lz4", "snappy"])
def test_a_segment_object_stored_compressed_is_read_where_asked(tmp_path, codec):
    """read_arrow(compressed_objects="read") and the Spark source (its default; planned and read here without
    a session) read such an object decompressed: the rows of the plain segment, the file named as stored."""
    from kfmt.spark.source import KafkaLogReader

    raw = _segment(100, 60)
    packed = _pack(raw, codec)
    assert compressed_object(packed) and packed != raw
    p = tmp_path / f"orders-{ID}" / "0" / f"{100:020d}-{SEG}.log"
    p.parent.mkdir(parents=True)
    p.write_bytes(packed)
    plain = read_arrow(raw, topic="orders", partition=0, columns=("offset", "key", "value", "timestamp"))
    got = read_arrow(
        str(p), compressed_objects="read", columns=("topic", "partition", "offset", "key", "value", "timestamp")
    )
    assert got.select(["offset", "key", "value", "timestamp"]).equals(plain)
    assert set(got.column("topic").to_pylist()) == {"orders"} and got.num_rows == 60
    reader = KafkaLogReader({"path": str(tmp_path), "split_bytes": "100"}, ("offset", "value", "file"))
    parts = reader.partitions()
    assert sum(len(g.slices) for g in parts) == 1  # never cut: its bytes are not entries
    import pyarrow as pa

    table = pa.Table.from_batches([b for g in parts for b in reader.read(g)])
    assert table.column("offset").to_pylist() == list(range(100, 160)) and set(table.column("file").to_pylist()) == {
        str(p)
    }
    refusing = KafkaLogReader({"path": str(tmp_path), "compressed_objects": "fail"}, ("offset",))
    with pytest.raises(ValueError, match="compressed stream"):
        [b for g in refusing.partitions() for b in refusing.read(g)]


def test_read_committed_on_an_object_stored_compressed(tmp_path):
    """read_committed on a segment object stored compressed whole: its transactions are found in the decompressed
    entries (they were once walked in the compressed bytes, found nothing, and aborted records were read)."""
    from kfmt.tools.synth import SynthConfig, synth

    synth(tmp_path / "src", SynthConfig(seed=4, topics=("orders",), partitions=1, records=200, segment_bytes=1 << 20))
    (seg,) = (tmp_path / "src" / "orders-0").glob("*.log")
    cols = ("offset", "value")
    want = read_arrow(str(seg), columns=cols, isolation="read_committed")
    assert want.num_rows < read_arrow(str(seg), columns=cols).num_rows  # something was aborted
    p = tmp_path / "packed" / "orders-0" / seg.name
    p.parent.mkdir(parents=True)
    p.write_bytes(_pack(seg.read_bytes(), "zstd"))
    assert read_arrow(str(p), columns=cols, isolation="read_committed").equals(want)


def test_a_large_object_is_split_at_its_index_entries():
    """A segment object larger than split_bytes in a store is cut where its .index object says batches start
    (one request for the index, one header read per cut); the slices read the rows of the whole segment.
    An index that does not fit the segment (stale, or another segment's) cuts nothing."""
    pytest.importorskip("moto")
    import pyarrow as pa
    from s3server import s3_server

    from kfmt.logdir.indexes import segment_files
    from kfmt.spark.source import KafkaLogReader

    batches = [kfmt.encode_batch([kfmt.Record(value=b"%d" % o + b"x" * 700, timestamp=o) for o in range(b, b + 4)],
                                 base_offset=b) for b in range(1000, 1400, 4)]  # fmt: skip
    data = b"".join(batches)
    files = dict((p.suffix, blob) for p, blob in segment_files(Path(f"{1000:020d}.log"), data, 1000))
    assert len(files[".index"]) >= 8 * 10
    with s3_server() as (endpoint, s3):
        s3.create_bucket(Bucket="segments")
        key = f"orders-{ID}/0/{1000:020d}-{SEG}"
        s3.put_object(Bucket="segments", Key=f"{key}.log", Body=data)
        s3.put_object(Bucket="segments", Key=f"{key}.index", Body=files[".index"])
        opts = {"path": "s3://segments/", "s3.endpoint": endpoint, "s3.region": "us-east-1", "split_bytes": str(64 * 1024),
                "min_partitions": "1"}  # fmt: skip

        def read(reader):
            slices = [sl for g in reader.partitions() for sl in g.slices]
            table = pa.Table.from_batches([b for g in reader.partitions() for b in reader.read(g)])
            return slices, sorted(table.column("offset").to_pylist())

        slices, offsets = read(KafkaLogReader(opts, ("offset",)))
        assert len(slices) >= 4 and offsets == list(range(1000, 1400))
        assert all(s.end - s.start <= 64 * 1024 + 8192 for s in slices)  # an index entry every 4 KiB or so
        bad = bytearray(files[".index"])
        for i in range(4, len(bad), 8):  # every position moved by one byte
            bad[i : i + 4] = (int.from_bytes(bad[i : i + 4], "big") + 1).to_bytes(4, "big")
        s3.put_object(Bucket="segments", Key=f"{key}.index", Body=bytes(bad))
        slices, offsets = read(KafkaLogReader(opts, ("offset",)))
        assert len(slices) == 1 and offsets == list(range(1000, 1400))
