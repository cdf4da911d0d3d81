"""Magic 0 and 1: vectors, kafka-python both ways, wrapper semantics, mixed logs."""

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

import kfmt
from conftest import backends, check_case, load_vectors
from kfmt.codec.formats import BACKENDS, get_format
from kfmt.log.batches import scan
from kfmt.log.scanner import iter_entries
from kfmt.runtime import compression

LEGACY = ["kafka_v0", "kafka_v1"]


@pytest.mark.parametrize("fmt", LEGACY)
def test_spec_vectors_both_backends(fmt):
    for vec in load_vectors(fmt):
        for _, mod in backends(fmt):
            check_case(mod, vec["bytes"], vec["batch"], vec["records"])


def _kp_records(magic):
    return [(i, (1700000000000 + i * 7) if magic else None, None if i % 3 == 0 else b"k%d" % i,
             None if i % 4 == 1 else b"v" * (i * 11)) for i in range(12)]  # fmt: skip


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kafka_python_builder_to_our_reader(magic, codec):
    b = LegacyRecordBatchBuilder(magic, ["none", "gzip", "snappy", "lz4"].index(codec), 1 << 22)
    recs = _kp_records(magic)
    for off, ts, k, v in recs:
        b.append(off, ts, k, v)
    data = bytes(b.build())
    for _, mod in backends(f"kafka_v{magic}"):
        batches = []
        pos = 0
        while pos < len(data):
            m, pos = mod.decode_from(data, pos, len(data))
            batches.append(m)
        got = [(r.offset, r.timestamp, r.key, r.value) for bt in batches for r in bt.records]
        assert got == [(o, -1 if t is None else t, k, v) for o, t, k, v in recs]
        assert all(bt.codec == codec for bt in batches)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_our_encoder_to_kafka_python_reader(magic, codec):
    recs = _kp_records(magic)
    data = kfmt.encode_batch(
        [kfmt.Record(key=k, value=v, timestamp=t if t is not None else -1) for _, t, k, v in recs],
        magic=magic, codec=codec, base_offset=1000,
    )  # fmt: skip
    got = []
    for pos, end, m in iter_entries(data):
        assert m == magic
        entry = LegacyRecordBatch(data[pos:end], magic)
        assert entry.validate_crc()
        got += [(r.offset, r.timestamp, r.key, r.value) for r in entry]
    assert got == [(1000 + o, t, k, v) for o, t, k, v in recs]


def _message(magic, offset, value, *, attrs=0, key=None, ts=1700000000000):
    body = struct.pack(">bb", magic, attrs) + (struct.pack(">q", ts) if magic else b"")
    body += struct.pack(">i", -1 if key is None else len(key)) + (key or b"")
    body += struct.pack(">i", -1 if value is None else len(value)) + (value or b"")
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def test_v1_wrapper_relative_offsets_and_log_append_time():
    """Spec 1.3 / 7.1: inner relative offsets 0, 1 under wrapper offset 101 -> 100, 101; LogAppendTime."""
    inner = _message(1, 0, b"a", ts=5) + _message(1, 1, b"b", ts=6)
    assert len(inner) == 70
    wrapper = _message(1, 101, compression.compress("gzip", inner), attrs=0x01, ts=6)  # crafted, CRC computed
    (b,) = kfmt.read_batches(wrapper)
    assert [(r.offset, r.timestamp) for r in b.records] == [(100, 5), (101, 6)]
    assert (b.base_offset, b.last_offset, b.codec) == (100, 101, "gzip")
    lat = _message(1, 101, compression.compress("gzip", inner), attrs=0x09, ts=999)
    for _, mod in backends("kafka_v1"):
        b = mod.decode(lat)
        assert [(r.offset, r.timestamp) for r in b.records] == [(100, 999), (101, 999)]
        assert b.timestamp_type == 1
        assert mod.encode(b)[:30] == lat[:30]  # header re-encoded identically; inner CreateTime bytes kept
        assert mod.decode(mod.encode(b)) == b


def test_v1_wrapper_offset_zero_and_gaps():
    inner = _message(1, 0, b"a") + _message(1, 3, b"b") + _message(1, 5, b"c")
    b = get_format("kafka_v1").decode(_message(1, 0, compression.compress("snappy", inner), attrs=0x02))
    assert [r.offset for r in b.records] == [0, 3, 5]  # wrapper offset 0: inner offsets taken as they are
    b = get_format("kafka_v1").decode(_message(1, 20, compression.compress("snappy", inner), attrs=0x02))
    assert [r.offset for r in b.records] == [15, 18, 20]
    with pytest.raises(kfmt.InvalidValueError, match="invalid wrapper offset"):
        get_format("kafka_v1").decode(_message(1, 4, compression.compress("snappy", inner), attrs=0x02))


def test_v0_inner_offsets_absolute_and_lz4_broken_checksum():
    inner = _message(0, 40, b"a") + _message(0, 41, b"b")
    for hc_magic in (0, 1):  # magic 0 readers accept either header checksum
        w = _message(0, 41, compression.compress("lz4", inner, hc_magic), attrs=0x03)
        assert [r.offset for r in get_format("kafka_v0").decode(w).records] == [40, 41]
    bad = _message(1, 1, compression.compress("lz4", _message(1, 0, b"a") + _message(1, 1, b"b"), 0), attrs=0x03)
    with pytest.raises(kfmt.InvalidValueError, match="header checksum"):
        get_format("kafka_v1").decode(bad)


def test_truncated_inner_tail_is_dropped():
    inner = _message(1, 0, b"a") + _message(1, 1, b"b")
    w = _message(1, 1, compression.compress("gzip", inner + _message(1, 2, b"c")[:20]), attrs=1)
    for _, mod in backends("kafka_v1"):
        assert [r.value for r in mod.decode(w).records] == [b"a", b"b"]


@pytest.mark.parametrize(
    "inner,attrs,match",
    [
        (None, 1, "null value"),
        (b"", 1, "no inner records"),
        (_message(1, 0, compression.compress("gzip", _message(1, 0, b"x")), attrs=1), 1, "must not be compressed"),
        (_message(1, 0, b"x"), 4, "zstd is not allowed"),
        (_message(1, 0, b"x"), 5, "unknown codec id 5"),
    ],
)
def test_wrapper_errors(inner, attrs, match):
    codec = ["none", "gzip", "snappy", "lz4", "zstd", "x", "x", "x"][attrs & 7]
    value = None if inner is None else (compression.compress(codec, inner) if codec in ("gzip",) else inner)
    for _, mod in backends("kafka_v1"):
        with pytest.raises(kfmt.CodecError, match=match):
            mod.decode(_message(1, 0, value, attrs=attrs))


def test_mixed_magic_log():
    log = (
        kfmt.encode_batch([kfmt.Record(value=b"a0")], magic=0, base_offset=0)
        + kfmt.encode_batch(
            [kfmt.Record(value=b"b%d" % i, timestamp=10) for i in range(2)], magic=1, codec="gzip", base_offset=1
        )  # fmt: skip
        + kfmt.encode_batch(
            [kfmt.Record(value=b"c%d" % i, timestamp=20) for i in range(3)], magic=2, codec="lz4", base_offset=3
        )  # fmt: skip
        + kfmt.encode_batch([kfmt.Record(value=b"d", timestamp=30)], magic=1, base_offset=6)
    )
    batches = list(kfmt.read_batches(log + log[:20]))
    assert [b.magic for b in batches] == [0, 1, 2, 1]
    assert [r.offset for b in batches for r in b.records] == list(range(7))
    assert [r.timestamp for b in batches for r in b.records] == [-1, 10, 10, 20, 20, 20, 30]
    assert [b.timestamp_type for b in batches] == [None, 0, 0, 0]


def test_headers_and_producer_state_refused_below_v2():
    with pytest.raises(kfmt.InvalidValueError, match="headers"):
        kfmt.encode_batch([kfmt.Record(value=b"x", headers=[("h", b"1")])], magic=1)
    with pytest.raises(kfmt.InvalidValueError, match="producer"):
        kfmt.encode_batch([kfmt.Record(value=b"x")], magic=0, producer_id=5)
    with pytest.raises(kfmt.UnsupportedCodecError):
        kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)], magic=1, codec="zstd")


@pytest.mark.parametrize("fmt", LEGACY)
def test_every_prefix_truncated(fmt):
    data = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 30, timestamp=1)], magic=int(fmt[-1]), codec="gzip")
    for _, mod in backends(fmt):
        for n in range(len(data)):
            with pytest.raises(kfmt.TruncatedError):
                mod.decode_from(data[:n], 0, n)


@pytest.mark.parametrize("magic", [0, 1])
def test_message_set_encode_error_names_the_record(magic, backend):
    recs = [kfmt.Record(key=b"k", value=b"v", timestamp=1), kfmt.Record(key=123, value=b"v", timestamp=2)]
    with pytest.raises(kfmt.CodecError) as e:
        kfmt.encode_batch(recs, magic=magic, backend=backend)
    assert e.value.path.startswith("records[1]"), e.value.path


def _legacy_run_log():
    """Runs of uncompressed v0 and v1 messages (one per entry) around a v2 batch, built by kafka-python."""
    parts = []
    for magic, first in ((0, 0), (1, 40), (0, 80)):
        b = LegacyRecordBatchBuilder(magic, 0, 1 << 22)
        for i in range(first, first + 40):
            b.append(i, 1_700_000_000_000 + i if magic else None, b"k%d" % i, b"v" * (i % 17))
        parts.append(bytes(b.build()))
    parts.insert(2, kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=5)], base_offset=120))
    return b"".join(parts)


def test_runs_of_legacy_entries_read_like_one_entry_at_a_time():
    """The reader decodes runs of legacy entries in one call (decode_run); positions, values and the
    stop at a truncated tail must be those of decoding entry by entry (the construct backend)."""
    log = _legacy_run_log()
    for tail in (b"", log[:30]):
        data = log + tail
        fast = list(scan(data, skip_corrupt=True))
        ref = list(scan(data, backend="construct", skip_corrupt=True))
        if tail:  # the incomplete tail is reported, with where it starts and how many bytes it holds
            for items in (fast, ref):
                p, e, err = items.pop()
                last = [end for _, end, _ in iter_entries(data)][-1]  # the tail holds one whole entry and 2 bytes
                assert (p, e, type(err), err.unread) == (last, len(data), kfmt.TruncatedError, len(data) - last)
            with pytest.raises(kfmt.TruncatedError, match="2 byte"):
                list(scan(data))
        assert [(p, e) for p, e, _ in fast] == [(p, e) for p, e, _ in ref] == [(p, e) for p, e, _ in iter_entries(data)]
        assert [b.as_dict() for _, _, b in fast] == [b.as_dict() for _, _, b in ref]
    assert [r.offset for b in kfmt.read_batches(log) for r in b.records] == [*range(80), 120, *range(80, 120)]


def test_corrupt_entry_inside_a_legacy_run():
    log = bytearray(_legacy_run_log())
    starts = [p for p, _, _ in iter_entries(bytes(log))]
    bad = starts[57]  # a v1 message in the middle of its run
    log[bad + 30] ^= 0xFF
    with pytest.raises(kfmt.ChecksumError) as e:
        list(kfmt.read_batches(bytes(log)))
    assert e.value.batch_position == bad
    out = list(scan(bytes(log), skip_corrupt=True))
    assert [p for p, _, _ in out] == starts
    assert [type(b).__name__ for p, _, b in out if p == bad] == ["ChecksumError"]
    assert sum(isinstance(b, kfmt.CodecError) for _, _, b in out) == 1


@pytest.mark.parametrize("magic", [0, 1])
def test_plain_records_and_message_objects_encode_alike(magic):
    """encode_batch hands plain kfmt.Records to the encoder as they are and copies anything else into
    message objects; both must give kafka-python's bytes, with offsets numbered or kept."""
    recs = _kp_records(magic)
    b = LegacyRecordBatchBuilder(magic, 0, 1 << 22)
    for off, ts, k, v in recs:
        b.append(off + 7, ts, k, v)
    expected = bytes(b.build())
    fmt = get_format(f"kafka_v{magic}")
    plain = [kfmt.Record(key=k, value=v, timestamp=ts) for _, ts, k, v in recs]
    msgs = [fmt.Message(key=k, value=v, **({"timestamp": ts} if magic else {})) for _, ts, k, v in recs]
    assert kfmt.encode_batch(plain, magic=magic, base_offset=7) == expected
    assert kfmt.encode_batch(msgs, magic=magic, base_offset=7) == expected
    kept = [kfmt.Record(key=k, value=v, timestamp=ts, offset=off + 7) for off, ts, k, v in recs]
    assert kfmt.encode_batch(kept, magic=magic, keep_offsets=True) == expected
    for backend in BACKENDS:
        assert kfmt.encode_batch(plain, magic=magic, base_offset=7, backend=backend) == expected
    for codec in ("gzip", "snappy", "lz4"):  # one compressed wrapper: inner messages numbered alike
        wrapped = kfmt.encode_batch(plain, magic=magic, base_offset=7, codec=codec)
        assert wrapped == kfmt.encode_batch(msgs, magic=magic, base_offset=7, codec=codec)
        entry = LegacyRecordBatch(wrapped[:], magic)
        assert [(r.offset, r.key, r.value) for r in entry] == [(off + 7, k, v) for off, _, k, v in recs]


def test_mutated_mixed_logs_read_alike_by_both_backends():
    """Differential test of the whole reading path (runs of legacy entries, v2 batches, skip-corrupt):
    mutated mixed logs must give the same batches at the same positions, and flag the same entries,
    with the codec backend as with the construct backend (which reads entry by entry)."""
    import random

    parts = []
    for magic, codec in ((0, "none"), (1, "none"), (1, "gzip"), (0, "lz4"), (2, "none"), (1, "none")):
        recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * (i % 7), timestamp=1000 + i) for i in range(5)]
        parts.append(kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=len(parts) * 5))
    log = b"".join(parts)

    def outcome(data, backend, verify):
        try:
            return [
                (p, e, b.as_dict() if not isinstance(b, kfmt.CodecError) else "error")
                for p, e, b in scan(data, backend=backend, verify_crc=verify, skip_corrupt=True)
            ]
        except kfmt.CodecError as e:  # a broken entry framing ends the scan
            return ("raised at", getattr(e, "batch_position", None), e.offset)

    rng = random.Random(2026)
    for _ in range(250):
        data = bytearray(log)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            k = rng.random()
            if k < 0.6:
                data[i] = rng.randrange(256)
            elif k < 0.8:
                del data[i : i + rng.randint(1, 8)]
            else:
                data[i:i] = rng.randbytes(rng.randint(1, 8))
        for verify in (True, False):
            assert outcome(bytes(data), "codec", verify) == outcome(bytes(data), "construct", verify)
