"""Hostile input: only CodecError, bounded memory, lenient where Kafka is, regressions replayed."""

import struct
import tracemalloc
import zlib
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kfmt
from conftest import backends
from kfmt.codec.formats import BACKENDS, format_ids
from kfmt.runtime.options import DecodeOptions

REGRESSIONS = Path(__file__).parent / "vectors" / "regressions"
ALL = list(format_ids())


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.binary(max_size=300))
def test_any_bytes_any_format_only_codec_error(fid, data):
    for _, mod in backends(fid):
        try:
            mod.decode_from(data, 0, len(data), DecodeOptions(verify_crc=False))
        except kfmt.CodecError as e:
            assert "internal decode failure" not in str(e)


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.bin")), ids=lambda p: p.name)
def test_regressions(path):
    """Inputs that once broke a decoder (the .txt beside each says how): only CodecError, backends agree."""
    fid, backend = path.name.split("-")[0], path.name.split("-")[1]
    results = []
    for name, mod in backends(fid):
        if backend in (name, "both"):
            results.append(_result(mod, path.read_bytes()))
    assert results
    if backend == "both":
        assert results[0][0] == results[1][0] and results[0][1] == results[1][1]


def _v2_with(records_blob: bytes, count: int, codec_id: int = 0) -> bytes:
    header = struct.pack(">hiqqqhii", codec_id, max(count - 1, 0), 0, 0, -1, -1, -1, count)
    body = header + records_blob
    crc = crc32c.crc32c(body)
    return struct.pack(">qiibI", 0, len(body) + 9, -1, 2, crc) + body


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except kfmt.CodecError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_1kb_input_claiming_2gb_stays_small(backend):
    mod = dict(backends("kafka_v2"))[backend]
    claims = [
        _v2_with(b"\x00" * 900, 0x7FFFFFFF),  # 2^31-1 records in 900 bytes
        _v2_with(b"\xfe\xff\xff\xff\x0f" + b"\x00" * 900, 1),  # a record claiming 2 GB
        _v2_with(b"\x20\x00\x00\x00\xfe\xff\xff\xff\x0f" + b"\x00" * 900, 1),  # a key claiming 2 GB
    ]
    # decompression bombs of about 1 KB: a gzip stream whose ISIZE trailer claims 2 GB, and a zstd frame
    # whose header claims 2 GB (and whose blocks would expand to 8 MiB)
    import zstandard

    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    gz_stream = bytearray(gz.compress(b"\x00" * (4 << 20)) + gz.flush())
    gz_stream[-4:] = struct.pack("<I", 1 << 31)
    zstd_stream = bytearray(zstandard.ZstdCompressor(level=19).compress(b"\x00" * (8 << 20)))
    bombs = [_v2_with(bytes(gz_stream), 1000, codec_id=1), _v2_with(bytes(zstd_stream), 1000, codec_id=4)]
    for data in claims + bombs:
        assert len(data) < 8 * 1024
        peak = _peak(lambda data=data: mod.decode(data))
        assert peak < 16 * (1 << 20), (len(data), peak)  # at most max(1 MiB, 1024x the input) is decompressed
    with pytest.raises(kfmt.CodecError):  # cut at the ratio limit, or refused by the gzip trailer check
        mod.decode(bombs[0])
    with pytest.raises(kfmt.LimitExceededError):
        mod.decode(bombs[1])


def test_limits_are_options():
    data = kfmt.encode_batch([kfmt.Record(value=b"x" * 100, headers=[("h", b"1")] * 5, timestamp=1)] * 10)
    with pytest.raises(kfmt.LimitExceededError, match="count 10"):
        list(kfmt.read_batches(data, opts=DecodeOptions(max_records=5)))
    with pytest.raises(kfmt.LimitExceededError):
        list(kfmt.read_batches(data, opts=DecodeOptions(max_headers=2)))
    with pytest.raises(kfmt.LimitExceededError):
        list(kfmt.read_batches(data, opts=DecodeOptions(max_bytes=50)))


def test_kafka_leniency():
    """Spec 6.3: unused attribute bits, record attributes, non-minimal varints and negative lengths are accepted."""
    v2 = kfmt.get_format("kafka_v2")
    data = bytearray(kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v", timestamp=5)]))
    data[21] = 0xFF  # attribute bits 8-15: ignored
    data[22] |= 0x80  # bit 7: ignored
    data[62] = 0x7F  # record attributes byte: ignored
    data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
    (b,) = kfmt.read_batches(bytes(data))
    assert b.records[0].value == b"v" and b.codec == "none"
    # a non-minimal varint (timestampDelta 0 written as 80 00) and a value length of -5 (null)
    rec = bytes([0x00, 0x80, 0x00, 0x00, 0x02]) + b"k" + bytes([0x09, 0x00])
    blob = _v2_with(bytes([len(rec) << 1]) + rec, 1)
    (r,) = v2.decode(blob).records
    assert (r.timestamp, r.key, r.value) == (0, b"k", None)
    # legacy attribute bits 4-7 ignored
    m = bytearray(kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)], magic=1))
    m[17] |= 0xF0
    m[12:16] = struct.pack(">I", zlib.crc32(bytes(m[16:])))
    assert [r.value for b in kfmt.read_batches(bytes(m)) for r in b.records] == [b"x"]


def test_wrong_magic_and_unknown_codec():
    data = bytearray(kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=5)]))
    data[16] = 7
    with pytest.raises(kfmt.InvalidValueError, match="invalid magic 7"):
        list(kfmt.read_batches(bytes(data)))
    data[16] = 2
    data[22] = 6
    data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
    with pytest.raises(kfmt.UnsupportedCodecError, match="codec id 6"):
        list(kfmt.read_batches(bytes(data)))


@pytest.mark.parametrize(
    "bad",
    [
        "      - {name: n, type: int32, max: 99999999999}",
        "      - {name: n, type: int8, const: 1000}",
        "      - {name: n, type: int16, bits: [{name: b, mask: 99999999999}]}",
        "      - {name: \"n'); import os; ('\", type: int32}",
        "      - {name: __init__, type: int32}",
        "      - {name: n, type: int32, doc: 12}",
    ],
)
def test_malicious_or_enormous_schema_values(tmp_path, bad):
    from generator.driver import render_format
    from generator.loader import load
    from generator.loader.spec import SchemaError

    (tmp_path / "common.yaml").write_text((Path(__file__).parent.parent / "schemas" / "common.yaml").read_text())
    p = tmp_path / "evil.yaml"
    p.write_text("doc: evil\nroot: m\nstructs:\n  m:\n    fields:\n" + bad + "\n")
    with pytest.raises(SchemaError) as e:
        render_format(load(p, tmp_path))
    assert "evil.yaml:" in str(e.value)


def _valid_entries(fid):
    int_keys = fid == "kip82_header_wrapper"
    out = []
    for codec in ("none", "gzip", "lz4"):
        recs = [kfmt.Record(key=None if i % 3 == 0 else b"k%d" % i, value=None if i == 2 else b"v" * (i * 7),
                            headers=[] if fid in ("kip98_draft", "kafka_v0", "kafka_v1")
                            else [((i if int_keys else f"h{i}"), b"x" * i)], timestamp=1_700_000_000_000 + i)
                for i in range(4)]  # fmt: skip
        try:
            data = kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=5)
        except kfmt.CodecError:
            continue
        first = next(iter(kfmt.iter_entries(data)))
        out.append(data[first[0] : first[1]])
    return out


ENTRIES = {fid: _valid_entries(fid) for fid in ALL}


def _result(mod, data, verify_crc=False):
    try:
        return ("ok", mod.decode_from(data, 0, len(data), DecodeOptions(verify_crc=verify_crc))[0], None)
    except kfmt.CodecError as e:
        assert "internal decode failure" not in str(e)
        return ("error", None, (type(e), str(e), e.offset, e.path))


@settings(max_examples=int(__import__("os").environ.get("KFMT_AGREE_EXAMPLES", "300")), deadline=None)
@given(st.sampled_from(ALL), st.data())
def test_backends_agree_on_mutated_entries_of_every_format(fid, data):
    raw = bytearray(data.draw(st.sampled_from(ENTRIES[fid])))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    mods = dict(backends(fid))
    for crc in (False, True):
        a = _result(mods["python"], bytes(raw), crc)
        for name, mod in mods.items():
            c = _result(mod, bytes(raw), crc)
            assert a[0] == c[0], (fid, name, a, c)
            assert a[1] == c[1]
            if name != "construct":  # a compiled backend raises the python backend's very error
                assert a[2] == c[2], (fid, name, a, c)


@pytest.mark.named_backends
@pytest.mark.parametrize("fmt", ["kafka_v0", "kafka_v1", "kafka_v2", "kip82_header_wrapper", "kip98_draft",
                                 "enriched_metadata_draft", "v2_no_record_attributes", "v3_no_record_attributes"])  # fmt: skip
def test_backends_apply_the_same_limits(fmt):
    """Limits (records, headers, bytes, the max_memory budget) are checked by the Construct reference too:
    same value or same error."""
    from kfmt.codec.formats import backend_module, get_format
    from kfmt.runtime.options import DecodeOptions

    mod = get_format(fmt)
    has_headers = "headers" in mod.CARRIES
    key = 7 if fmt == "kip82_header_wrapper" else "h"
    recs = [kfmt.Record(key=b"k", value=b"v" * 40, timestamp=1, headers=[(key, b"1")] * 30 if has_headers else [])
            for _ in range(20)]  # fmt: skip
    for codec in ("none", "gzip") if fmt != "kip82_header_wrapper" else ("none",):
        data = kfmt.encode_batch(recs, format=fmt, codec=codec)
        # max_memory: 2,000 refuses the records before any is built; 12,000 lets them start and (with 30
        # headers each) refuses part way through the batch; 10**6 reads it
        for lim in ({"max_headers": 10}, {"max_records": 5}, {"max_bytes": 8}, {"max_memory": 2_000},
                    {"max_memory": 12_000}, {"max_memory": 10**6}, {}):  # fmt: skip
            opts = DecodeOptions(**lim)
            outcome = []
            for be in BACKENDS:
                try:
                    v, _ = backend_module(fmt, be).decode_from(data, 0, len(data), opts)
                    outcome.append(("ok", len(v.records)))
                except kfmt.CodecError as e:
                    outcome.append((type(e).__name__, None))
            assert all(o == outcome[0] for o in outcome), (fmt, codec, lim, outcome)


@pytest.mark.named_backends
@pytest.mark.parametrize("code,codec", [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_empty_compressed_payload_is_zero_records_in_both_backends(code, codec):
    import struct
    import zlib

    from kfmt.codec.formats import backend_module

    k = kfmt.get_format("kip98_draft")
    x = bytearray(k.encode(k.ROOT(records=[], codec="none")))
    attrs = struct.unpack_from(">h", x, 17)[0]
    struct.pack_into(">h", x, 17, (attrs & ~7) | code)
    struct.pack_into(">I", x, 12, zlib.crc32(bytes(x[16:])))
    for be in BACKENDS:
        v, _ = backend_module("kip98_draft", be).decode_from(bytes(x), 0, len(x))
        assert v.records == [] and v.codec == codec


@pytest.mark.named_backends
def test_zstd_frame_cut_short_is_damage():
    """A zstd frame without its last block decodes, in the library's stream reader, to the bytes it holds and no
    error; Kafka's reader fails on it, and so does kfmt, in every backend (found by make fuzz-jvm: the JVM
    engine, reading with zstd-jni, refused a batch the Python engine read)."""
    import zstandard

    from kfmt.runtime.compression import decompress
    from kfmt.runtime.options import DEFAULT_OPTIONS

    raw = b"".join(b"record %d " % i for i in range(400))
    whole = zstandard.ZstdCompressor(write_checksum=True).compress(raw)
    assert decompress("zstd", whole, 2, DEFAULT_OPTIONS) == raw
    two = whole + zstandard.ZstdCompressor().compress(b"more")
    assert decompress("zstd", two, 2, DEFAULT_OPTIONS) == raw + b"more"
    for cut in (3, 4, 5, len(whole) // 2, len(whole) - 9):
        with pytest.raises(kfmt.CodecError, match="zstd"):
            decompress("zstd", whole[: len(whole) - cut], 2, DEFAULT_OPTIONS)
    regression = Path(__file__).parent / "vectors" / "regressions" / "jvm" / "22a9cf451ba4b61d.log"
    for backend in BACKENDS:
        with pytest.raises(kfmt.CodecError, match="zstd"):
            list(kfmt.read_batches(regression.read_bytes(), verify_crc=False, backend=backend))
