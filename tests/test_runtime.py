"""Varints and compression framings against the spec's byte-exact examples and independent libraries."""

import gzip
import struct

import kafka.codec as kc
import lz4.frame
import pytest
import xxhash
import zstandard

from kfmt.runtime import compression as comp
from kfmt.runtime.errors import InvalidValueError, LimitExceededError, TruncatedError
from kfmt.runtime.options import DEFAULT_OPTIONS, DecodeOptions
from kfmt.runtime.varint import read_uvarint32, read_uvarint64, write_varint, write_varlong, zigzag32

# spec section 2.5, byte-exact
VARINTS = [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (300, "d804"),
           (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f")]  # fmt: skip


@pytest.mark.parametrize("value,hexs", VARINTS)
def test_varint_examples(value, hexs):
    out = bytearray()
    write_varint(out, value)
    assert out.hex() == hexs
    raw, pos = read_uvarint32(bytes.fromhex(hexs), 0, len(hexs) // 2, "x")
    assert zigzag32(raw) == value and pos == len(hexs) // 2


def test_varlong_examples():
    for value, hexs in [(1_700_000_000_000, "80a0abfef962"), (-(2**63), "ffffffffffffffffff01")]:
        out = bytearray()
        write_varlong(out, value)
        assert out.hex() == hexs
        raw, _ = read_uvarint64(bytes.fromhex(hexs), 0, 10, "x")
        assert (raw >> 1) ^ -(raw & 1) == value


def test_varint_leniency_and_limits():
    assert read_uvarint32(b"\x80\x00", 0, 2, "x") == (0, 2)  # non-minimal accepted
    raw, _ = read_uvarint32(b"\xff\xff\xff\xff\x7f", 0, 5, "x")  # excess high bits dropped
    assert raw == 0xFFFFFFFF
    with pytest.raises(InvalidValueError, match="too long"):
        read_uvarint32(b"\xff\xff\xff\xff\xff\x01", 0, 6, "x")
    with pytest.raises(InvalidValueError, match="too long"):
        read_uvarint64(b"\xff" * 10 + b"\x01", 0, 11, "x")
    with pytest.raises(TruncatedError):
        read_uvarint32(b"\xff\xff", 0, 2, "x")


DATA = b"".join(b"record %d with some repetitive payload; " % i for i in range(3000))


def test_lz4_frame_is_kafkas():
    framed = comp.compress("lz4", DATA, 2)
    assert framed[:7] == bytes.fromhex("04224d18604082")  # FLG 60, BD 40, correct HC 0x82
    assert framed[-4:] == b"\x00\x00\x00\x00"
    assert lz4.frame.decompress(framed) == DATA
    old = comp.compress("lz4", DATA, 0)
    assert old[6] == 0x1A  # KAFKA-1493's broken HC, for magic 0 only
    assert kc.lz4_decode_old_kafka(old) == DATA
    assert (xxhash.xxh32(old[:6]).intdigest() >> 8) & 0xFF == 0x1A


def test_lz4_header_checksum_verified_except_magic0():
    old = comp.compress("lz4", DATA, 0)
    assert comp.decompress("lz4", old, 0, DEFAULT_OPTIONS) == DATA
    with pytest.raises(InvalidValueError, match="header checksum"):
        comp.decompress("lz4", old, 1, DEFAULT_OPTIONS)
    # python-lz4's own frames (content size, linked blocks off) are accepted too
    std = lz4.frame.compress(DATA, block_linked=False, store_size=True)
    assert comp.decompress("lz4", std, 2, DEFAULT_OPTIONS) == DATA
    with pytest.raises(InvalidValueError, match="dependent"):
        comp.decompress("lz4", lz4.frame.compress(DATA, block_linked=True), 2, DEFAULT_OPTIONS)


def test_snappy_framings():
    framed = comp.compress("snappy", DATA, 2)
    assert framed[:16] == bytes.fromhex("82534e41505059000000000100000001")
    assert kc.snappy_decode(framed) == DATA
    for payload in (kc.snappy_encode(DATA, xerial_compatible=True, xerial_blocksize=1024),
                    kc.snappy_encode(DATA, xerial_compatible=False)):  # fmt: skip
        assert comp.decompress("snappy", payload, 2, DEFAULT_OPTIONS) == DATA
    lenient = bytearray(framed)
    lenient[8:16] = struct.pack("<ii", 1, 1)  # version fields written little-endian (seen from redpanda)
    assert comp.decompress("snappy", bytes(lenient), 2, DEFAULT_OPTIONS) == DATA


def test_zstd_multi_frame_without_content_size():
    c = zstandard.ZstdCompressor(write_content_size=False)
    two = c.compress(DATA[:1000]) + c.compress(DATA[1000:])
    assert comp.decompress("zstd", two, 2, DEFAULT_OPTIONS) == DATA
    ours = comp.compress("zstd", DATA, 2)
    assert (
        ours[:4] == bytes.fromhex("28b52ffd") and zstandard.ZstdDecompressor().decompressobj().decompress(ours) == DATA
    )


def test_gzip_concatenated_members_and_java_header():
    java_like = bytes.fromhex("1f8b08000000000000ff") + gzip.compress(DATA[:500], mtime=0)[10:]
    two = java_like + gzip.compress(DATA[500:], mtime=0)
    assert comp.decompress("gzip", two, 2, DEFAULT_OPTIONS) == DATA
    assert gzip.decompress(comp.compress("gzip", DATA, 2)) == DATA


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_refused(codec):
    bomb = comp.compress(codec, b"\x00" * (8 << 20), 2)
    opts = DecodeOptions(max_decompressed=1 << 20)
    with pytest.raises(LimitExceededError):
        comp.decompress(codec, bomb, 2, opts)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_corrupt_streams_are_codec_errors(codec):
    framed = bytearray(comp.compress(codec, DATA, 2))
    framed[len(framed) // 2] ^= 0xFF
    framed = framed[: len(framed) - 3]
    try:
        comp.decompress(codec, bytes(framed), 2, DEFAULT_OPTIONS)
    except (InvalidValueError, LimitExceededError):
        pass


def test_zstd_refused_below_magic2():
    with pytest.raises(comp.UnsupportedCodecError):
        comp.compress("zstd", b"x", 1)


def test_crc32_is_the_standard_librarys():
    """kfmt's CRC-32 (zlib-ng when installed) is the function zlib computes, on every length up to
    a few SIMD blocks and on unaligned views."""
    import os
    import zlib

    from kfmt.runtime.checksums import crc32

    data = os.urandom(5000)
    for n in list(range(0, 300)) + [1023, 1024, 1025, 4096, 4999]:
        assert crc32(data[:n]) == zlib.crc32(data[:n])
        assert crc32(data[3 : 3 + n]) == zlib.crc32(data[3 : 3 + n])


def test_zstd_from_several_threads():
    """zstd (de)compressors are kept per thread (one may not serve two threads at once): round trips
    from eight threads at a time all come back whole."""
    import os
    import threading

    payloads = [os.urandom(64) * (i + 1) for i in range(20)]
    failures = []

    def work(k):
        for i in range(50):
            d = payloads[(i + k) % len(payloads)]
            if comp.decompress("zstd", comp.compress("zstd", d, 2), 2, DEFAULT_OPTIONS) != d:
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
