"""kfmt.read_arrow: a log as a pyarrow Table with the Spark source's columns, checked value by value against
read_batches and kafka-python's own reading of the same batches."""

from __future__ import annotations

import pyarrow as pa
import pytest
from kafka.record.default_records import DefaultRecordBatch

import kfmt
from kfmt.tools.synth import SynthConfig, synth


@pytest.fixture(scope="module")
def seg(tmp_path_factory):
    d = tmp_path_factory.mktemp("arrow")
    synth(d, SynthConfig(seed=3, topics=("orders",), partitions=1, records=600, segment_bytes=1 << 30, legacy=False))
    return next(d.glob("orders-0/*.log"))


def test_rows_equal_the_records_and_the_oracle(seg):
    t = kfmt.read_arrow(seg, include_control=True)
    assert isinstance(t, pa.Table)
    batches = list(kfmt.read_batches(seg))
    recs = [(b, r) for b in batches if not b.is_control for r in b.records]
    markers = sum(len(b.records) for b in batches if b.is_control)
    assert markers and t.num_rows == len(recs) + markers  # with include_control, markers are rows, flagged
    assert kfmt.read_arrow(seg).num_rows == len(recs)  # by default left out, as the Spark source does
    rows = [r for r in t.to_pylist() if not r["is_control"]]
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [(r.offset, r.key, r.value) for _, r in recs]
    assert [[(h["key"], h["value"]) for h in r["headers"]] for r in rows] == [list(r.headers) for _, r in recs]
    assert {r["topic"] for r in rows} == {"orders"} and {r["partition"] for r in rows} == {0}
    # kafka-python reads the same v2 batches to the same offsets and values
    data = seg.read_bytes()
    oracle = []
    pos = 0
    while pos < len(data):
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        theirs = DefaultRecordBatch(data[pos : pos + size])
        if not theirs.is_control_batch:
            oracle += [(r.offset, r.key, r.value) for r in theirs]
        pos += size
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == oracle


def test_projection_builds_only_the_columns_asked_for(seg):
    t = kfmt.read_arrow(seg, columns=["offset", "value"])
    assert t.column_names == ["offset", "value"]
    assert t.schema.field("offset").type == pa.int64() and t.schema.field("value").type == pa.binary()
    with pytest.raises(ValueError, match="unknown column"):
        kfmt.read_arrow(seg, columns=["nope"])


def test_damage_fails_skips_or_is_quarantined(seg):
    data = bytearray(seg.read_bytes())
    p, e, hit = next((p, e, b) for p, e, b in kfmt.scan(bytes(data)) if p <= 200 < e)
    data[200] ^= 0xFF  # inside that batch: its CRC no longer matches
    with pytest.raises(kfmt.ChecksumError):
        kfmt.read_arrow(bytes(data))
    whole = kfmt.read_arrow(seg).num_rows
    skipped = kfmt.read_arrow(bytes(data), on_corrupt="skip")
    assert skipped.num_rows == whole - len(hit.records)
    q = kfmt.read_arrow(bytes(data), on_corrupt="quarantine", columns=["offset", "position", "error", "raw"])
    bad = [r for r in q.to_pylist() if r["error"]]
    assert len(bad) == 1 and bad[0]["position"] == p and "crc" in bad[0]["error"]
    assert bad[0]["raw"] == bytes(data[p:e])  # the damaged batch's own bytes
    assert q.num_rows == skipped.num_rows + 1
    # the same from a path and from an open file: the quarantined bytes are read again by position
    damaged = seg.parent / "damaged.log"
    damaged.write_bytes(bytes(data))
    assert kfmt.read_arrow(damaged, on_corrupt="quarantine", columns=["offset", "position", "error", "raw"]) == q
    with open(damaged, "rb") as f:
        assert kfmt.read_arrow(f, on_corrupt="quarantine", columns=["offset", "position", "error", "raw"]) == q
    import io

    assert kfmt.read_arrow(io.BytesIO(bytes(data)), on_corrupt="quarantine",
                           columns=["offset", "position", "error", "raw"]) == q  # fmt: skip
    damaged.unlink()


def test_read_arrow_batches_streams_read_arrows_rows(seg, tmp_path):
    """The stream (a pyarrow.RecordBatchReader) holds read_arrow's rows, in bounded batches, from a file, its
    partition folder or bytes; options are checked at the call, damage raised when its batch is read."""
    import kfmt.log.arrow

    for source in (seg, seg.parent, seg.read_bytes()):
        reader = kfmt.read_arrow_batches(source, columns=["offset", "value", "headers"], include_control=True)
        assert isinstance(reader, pa.RecordBatchReader)
        got = list(reader)
        assert all(b.num_rows <= kfmt.log.arrow.ROWS_PER_ARROW_BATCH + 1000 for b in got)
        want = kfmt.read_arrow(source, columns=["offset", "value", "headers"], include_control=True)
        assert pa.Table.from_batches(got, reader.schema).equals(want)
    with pytest.raises(ValueError, match="unknown column"):
        kfmt.read_arrow_batches(seg, columns=["nope"])
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    reader = kfmt.read_arrow_batches(bytes(data))  # nothing read yet
    with pytest.raises(kfmt.ChecksumError):
        list(reader)
