"""kfmt.convert against Kafka's conversion rules (shared/spec section 5)."""

import pytest

import kfmt
from kfmt.log.batches import scan
from kfmt.log.conversion import convert


def _batches(data):
    return [b for _, _, b in scan(data)]


def test_uncompressed_v2_becomes_one_message_per_record_with_absolute_offsets():
    src = kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=10 + i) for i in range(3)], base_offset=40)
    out = _batches(convert(src, to_magic=1).data)
    assert [(b.magic, b.codec, b.offset, b.timestamp) for b in out] == [(1, "none", 40, 10), (1, "none", 41, 11),
                                                                      (1, "none", 42, 12)]  # fmt: skip


def test_compressed_v2_becomes_one_wrapper_with_the_same_codec():
    src = kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=10 + i) for i in range(3)], base_offset=40,
                            codec="snappy")  # fmt: skip
    (w,) = _batches(convert(src, to_magic=1).data)
    assert (w.magic, w.codec, w.offset, w.timestamp) == (1, "snappy", 42, 12)  # wrapper: last offset, max timestamp
    raw = w.value  # the inner set, relative offsets 0, 1, 2
    from kfmt.runtime.compression import decompress
    from kfmt.runtime.options import DEFAULT_OPTIONS

    inner = list(kfmt.iter_entries(decompress("snappy", raw, 1, DEFAULT_OPTIONS)))
    assert len(inner) == 3
    assert [r.offset for r in w.records] == [40, 41, 42]


def test_log_append_time_is_kept_for_v1_and_dropped_for_v0():
    src = kfmt.encode_batch([kfmt.Record(value=b"a", timestamp=1), kfmt.Record(value=b"b", timestamp=2)],
                            timestamp_type=1, max_timestamp=999, codec="gzip")  # fmt: skip
    (w,) = _batches(convert(src, to_magic=1).data)
    assert w.timestamp_type == 1 and [r.timestamp for r in w.records] == [999, 999]
    res0 = convert(src, to_magic=0)
    (w0,) = _batches(res0.data)
    assert w0.timestamp_type is None and [r.timestamp for r in w0.records] == [-1, -1]
    assert "timestamps" in res0.summary()


def test_control_batches_dropped_and_reported_transactional_flag_reported():
    data = kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)], producer_id=7, producer_epoch=1,
                             base_sequence=0, is_transactional=True)  # fmt: skip
    data += kfmt.encode_batch([kfmt.control_record("abort", timestamp=2)], base_offset=1, producer_id=7,
                              is_transactional=True, is_control=True)  # fmt: skip
    res = convert(data, to_magic=1)
    assert [b.magic for b in _batches(res.data)] == [1]
    kinds = res.summary()
    assert kinds["control_batch"] == 1 and kinds["transactional"] == 1 and kinds["producer_state"] == 1
    with pytest.raises(kfmt.InvalidValueError, match="would lose"):
        convert(data, to_magic=1, strict=True)


def test_zstd_refused_below_v2_unless_recompressed():
    src = kfmt.encode_batch([kfmt.Record(value=b"z", timestamp=1)], codec="zstd")
    with pytest.raises(kfmt.UnsupportedCodecError):
        convert(src, to_magic=0)
    (w,) = _batches(convert(src, to_magic=0, codec="lz4").data)
    assert (w.magic, w.codec) == (0, "lz4")


def test_up_conversion_merges_uncompressed_messages_and_keeps_wrappers():
    legacy = b"".join(kfmt.encode_batch([kfmt.Record(value=b"m%d" % i)], magic=0, base_offset=i) for i in range(4))
    legacy += kfmt.encode_batch([kfmt.Record(value=b"w%d" % i, timestamp=5) for i in range(2)], magic=1, codec="gzip",
                                base_offset=4)  # fmt: skip
    out = _batches(convert(legacy, to_magic=2).data)
    assert [(b.magic, b.codec, len(b.records)) for b in out] == [(2, "none", 4), (2, "gzip", 2)]
    assert [r.offset for b in out for r in b.records] == list(range(6))
    assert out[0].base_timestamp == -1 and out[0].producer_id == -1  # v0 records carry no timestamp


def test_batches_already_in_target_form_are_copied_byte_for_byte():
    src = kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)], partition_leader_epoch=3, codec="lz4")
    assert convert(src, to_magic=2).data == src
