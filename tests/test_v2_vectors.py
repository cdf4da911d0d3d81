"""Golden vectors (sources in each file) through both backends."""

import pytest

from conftest import backends, check_case, load_vectors

VECTORS = load_vectors("kafka_v2")


@pytest.mark.parametrize("backend,mod", backends("kafka_v2"))
@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(backend, mod, vec):
    check_case(mod, vec["bytes"], vec.get("batch"), vec.get("records"))


def test_backends_agree_on_vectors():
    (_, first), *others = backends("kafka_v2")
    for vec in VECTORS:
        assert all(first.decode(vec["bytes"]) == m.decode(vec["bytes"]) for _, m in others)


def test_java_default_epoch_and_kafka_python_epoch_share_crc(v2):
    """Spec 2.9: kafka-python writes partitionLeaderEpoch 0, Java -1; the CRC does not cover it."""
    java = bytes.fromhex(VECTORS[1]["hex"]) if False else load_vectors("kafka_v2")[1]["bytes"]
    b = v2.decode(java)
    b.partition_leader_epoch = 0
    kp = v2.encode(b)
    assert kp[12:16] == b"\x00\x00\x00\x00"
    assert kp[17:21] == java[17:21]


def test_empty_batch_keeps_producer_state(v2):
    """Spec 2.8: a compacted-away batch keeps lastOffsetDelta, producer fields and maxTimestamp; 61 bytes."""
    b = v2.Batch(
        base_offset=10, last_offset_delta=4, base_timestamp=-1, max_timestamp=1700000000000, producer_id=7,
        producer_epoch=1, base_sequence=10, is_transactional=True, records=[],
    )  # fmt: skip
    data = v2.encode(b)
    assert len(data) == 61
    assert data[8:12] == (49).to_bytes(4, "big")
    d = v2.decode(data)
    assert (d.last_offset, d.num_records, d.records, d.base_sequence) == (14, 0, [], 10)
    for _, mod in backends("kafka_v2"):
        assert mod.decode(data) == d


def test_count_zero_with_trailing_bytes_is_empty(v2):
    """Spec 2.6: recordsCount == 0 iterates as empty even if bytes follow."""
    import crc32c

    data = bytearray(v2.encode(v2.Batch(records=[])))
    data += b"\x00\x00"
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    assert v2.decode(bytes(data)).records == []


def test_log_append_time_replaces_record_timestamps(v2):
    import kfmt

    data = kfmt.encode_batch(
        [kfmt.Record(value=b"a", timestamp=5), kfmt.Record(value=b"b", timestamp=9)],
        timestamp_type=1,
        max_timestamp=1234,
    )
    b = v2.decode(data)
    assert [r.timestamp for r in b.records] == [1234, 1234]
    assert [r.timestamp_delta for r in b.records] == [0, 4]  # kept on disk
    assert v2.encode(b) == data


def test_compacted_offsets_with_gaps_round_trip(v2):
    import kfmt

    recs = [kfmt.Record(value=b"x", timestamp=1, offset=o) for o in (100, 103, 105)]
    data = kfmt.encode_batch(recs, base_offset=100, keep_offsets=True, last_offset_delta=9)
    b = v2.decode(data)
    assert [r.offset for r in b.records] == [100, 103, 105]
    assert b.last_offset == 109
    assert v2.encode(b) == data
