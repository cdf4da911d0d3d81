"""The v2 batches of a record set checked by their CRCs in C (kfmt.runtime.native._sealed) are what the definition,
kfmt.log.batches.written_entries_v2, finds: the same entries, or (where C answers None) the same None or error."""

from __future__ import annotations

import random

import pytest

import kfmt
import kfmt.log.batches as B
from kfmt.runtime.errors import CodecError

pytestmark = pytest.mark.skipif(B._native_sealed() is None, reason="the native backend is not built here")


def _definition(data, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(B, "_native_sealed", lambda: None)
        try:
            return B.written_entries_v2(data)
        except CodecError as e:
            return (type(e).__name__, str(e))


def _native(data):
    try:
        return B.written_entries_v2(data)
    except CodecError as e:
        return (type(e).__name__, str(e))


def _sets(rng: random.Random) -> list[bytes]:
    """Record sets of 0 to 4 batches (every codec, offsets near the ends of int64, epochs), and legacy sets."""
    out = [b""]
    for _ in range(60):
        parts = []
        for _ in range(rng.randrange(1, 5)):
            records = [kfmt.Record(key=rng.randbytes(rng.randrange(4)), value=rng.randbytes(rng.randrange(300)),
                                   timestamp=rng.randrange(2**40)) for _ in range(rng.randrange(1, 20))]  # fmt: skip
            base = rng.choice([0, rng.randrange(2**40), 2**63 - 5])
            parts.append(kfmt.encode_batch(records, codec=rng.choice(["none", "gzip", "lz4", "zstd", "snappy"]),
                                           base_offset=base, partition_leader_epoch=rng.randrange(-1, 9)))  # fmt: skip
        out.append(b"".join(parts))
    out += [kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v", timestamp=1)], magic=m) for m in (0, 1)]
    return out


def test_c_finds_what_the_definition_finds_on_sound_and_damaged_sets(monkeypatch):
    rng = random.Random(7)
    sound = damaged = 0
    for data in _sets(rng):
        copies = [data]
        if data:  # a byte flipped (a CRC, a length, a magic, a record), the set cut, bytes after it
            for _ in range(8):
                flipped = bytearray(data)
                flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                copies.append(bytes(flipped))
            copies += [data[: rng.randrange(len(data))], data + b"\x00" * rng.randrange(1, 70)]
        for copy in copies:
            want = _definition(copy, monkeypatch)
            assert _native(copy) == want, copy.hex()[:120]
            found = B._native_sealed().entries(copy)
            if found is not None:
                assert isinstance(want, list) and len(found) == len(want)
                sound += 1
            elif copy:
                damaged += 1
    assert sound >= 60 and damaged >= 300  # (both answers were given often)


def test_entries_read_any_buffer_and_leak_nothing():
    import tracemalloc

    data = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 100, timestamp=1)] * 5, codec="gzip") * 3
    native = B._native_sealed()
    assert native.entries(memoryview(data)) == native.entries(bytearray(data)) == native.entries(data)
    with pytest.raises(TypeError):
        native.entries("text")
    tracemalloc.start()
    for _ in range(20_000):
        native.entries(data)
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20_000):
        native.entries(data)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 64 * 1024, grown


def test_long_batches_crc_checked_in_three_lanes_are_the_packages_crc():
    """Batches of 1 to 300 KB (kfmt_native.h takes an input of 1,536 bytes or more as three 512-byte lanes at a
    time, joined): each one's CRC-32C as the crc32c package (an independent implementation) computes it, and its
    stored CRC accepted by C; a byte changed anywhere after the CRC, and C answers None."""
    from crc32c import crc32c

    rng = random.Random(11)
    for size in [1535, 1536, 1537, 3071, 3072, 4096, 9000, *(rng.randrange(1000, 300_000) for _ in range(40))]:
        batch = kfmt.encode_batch([kfmt.Record(value=rng.randbytes(size))], backend="python")
        assert int.from_bytes(batch[17:21], "big") == crc32c(batch[21:])  # (the python backend's, by the package)
        assert B._native_sealed().entries(batch) is not None, size
        bad = bytearray(batch)
        bad[rng.randrange(21, len(bad))] ^= 1 << rng.randrange(8)
        assert B._native_sealed().entries(bytes(bad)) is None, size
