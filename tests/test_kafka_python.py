"""kafka-python as an independent oracle: its builders -> our decoders, our encoders -> its reader."""

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

import kfmt
from conftest import backends

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _records(n=20):
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else (b"" if i % 7 == 0 else b"key-%d" % i)
        value = None if i % 6 == 0 else bytes([i % 251]) * (i * 13 % 300)
        headers = [] if i % 3 == 0 else [("h", b"x"), ("h", None), ("\u00e9t\u00e9", b"")][: 1 + i % 3]
        out.append((i, 1700000000000 + i * 37 - (i % 4) * 1000, key, value, headers))
    return out


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("backend,mod", backends("kafka_v2"))
def test_kafka_python_builder_to_our_decoder(codec, backend, mod):
    b = DefaultRecordBatchBuilder(2, CODECS[codec], True, 4000, 3, 17, 1 << 22)
    recs = _records()
    for off, ts, k, v, h in recs:
        b.append(off, ts, k, v, h)
    data = bytes(b.build())
    ours = mod.decode(data)
    theirs = DefaultRecordBatch(data)
    assert ours.crc == theirs.crc and theirs.validate_crc()
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (4000, 3, 17)
    assert ours.is_transactional and not ours.is_control
    assert ours.codec == (codec if theirs.compression_type else "none")
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in ours.records]
    assert got == [(off, ts, k, v, list(h)) for off, ts, k, v, h in recs]
    # and the oracle's own reading agrees record by record
    assert got == [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("backend,mod", backends("kafka_v2"))
def test_our_encoder_to_kafka_python_reader(codec, backend, mod):
    recs = _records()
    batch = mod.__dict__.get("Batch") or __import__("generated.kafka_v2.model", fromlist=["Batch"]).Batch
    b = batch(
        codec=codec, base_offset=500, producer_id=9, producer_epoch=1, base_sequence=0, partition_leader_epoch=7,
        records=[kfmt.Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in recs],
    )  # fmt: skip
    data = mod.encode(b)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert theirs.compression_type == CODECS[codec]
    assert theirs.base_offset == 500 and theirs.producer_id == 9
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == [(500 + off, ts, k, v, h) for off, ts, k, v, h in recs]


def test_uncompressed_bytes_identical_to_kafka_python_except_epoch(v2):
    """Spec 2.9: kafka-python's builder writes the Java producer's bytes except partitionLeaderEpoch 0."""
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 22)
    recs = _records(50)
    for off, ts, k, v, h in recs:
        b.append(off, ts, k, v, h)
    theirs = bytes(b.build())
    ours = kfmt.encode_batch(
        [kfmt.Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in recs], partition_leader_epoch=0
    )
    assert ours == theirs


def test_read_batches_over_a_kafka_python_log():
    log = b""
    for base in (0, 3, 6):
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        for i in range(3):
            b.append(i, 1000 + i, None, b"v%d" % (base + i), [])
        data = bytearray(b.build())
        data[0:8] = base.to_bytes(8, "big")  # the broker assigns base offsets in place (not CRC-covered)
        log += bytes(data)
    batches = list(kfmt.read_batches(log + log[:40]))  # a truncated tail ends quietly
    assert [r.offset for b in batches for r in b.records] == list(range(9))
    assert [r.value for b in batches for r in b.records] == [b"v%d" % i for i in range(9)]
