"""`make bench`: records/s for encode and decode, kfmt's backends (native, python, construct) vs kafka-python and aiokafka.

Workload (issue 2): 100-record v2 batches, 10-byte keys, 100-byte values, one header, each codec.
Each figure is the median of several timed rounds in this one process, side by side.
Like for like: encoding starts from the user's records (kfmt: ``kfmt.encode_batch`` of kfmt.Records; the
peers: their builders' ``append`` per record) and ends with bytes; decoding starts from bytes and reads every
record's offset, timestamp, key, value and headers (kfmt through ``kfmt.read_batches``; kafka-python and
aiokafka parse lazily, so the bench touches every field for all of them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import aiokafka.record.default_records as aio
import aiokafka.record.legacy_records as aio_legacy
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

import kfmt
from kfmt.codec.formats import get_format

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
N = 100


def workload():
    return [
        (i, 1_700_000_000_000 + i, b"key-%06d" % i, bytes((i + j) % 256 for j in range(100)), [("trace", b"abcdefgh")])
        for i in range(N)
    ]


def _rate(fn, min_time: float) -> float:
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return n * N / dt


def touch(records):
    """Read every field the bench counts as decoded (kafka-python and aiokafka parse lazily)."""
    for r in records:
        r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018


# the two log readers touch records in their own loops: a call per batch would weigh on v0/v1, one message a batch
def read_ours(data, **kw):
    for b in kfmt.read_batches(data, **kw):
        for r in b.records:
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018


def read_memory_records(cls, data):
    """A peer's log reader (kafka-python's or aiokafka's MemoryRecords), every batch and record."""
    records = cls(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018


def library_call(codec: str, payload: bytes):
    """The codec library's one call on this one-block payload, no framing code around it: the least any
    decoder of it can take (zlib-ng's inflate, python-snappy's block, lz4.block's block, one zstd frame)."""
    import struct

    if codec == "gzip":
        from kfmt.runtime.compression import _inflate_lib

        return lambda: _inflate_lib.decompress(payload, 31)
    if codec == "snappy":
        import snappy

        (n,) = struct.unpack_from(">i", payload, 16)
        assert 20 + n == len(payload), "one xerial block"
        block = payload[20:]
        return lambda: snappy.uncompress(block)
    if codec == "lz4":
        import lz4.block

        (n,) = struct.unpack_from("<I", payload, 7)
        assert 11 + n + 4 == len(payload) and not n & 0x80000000, "one compressed LZ4 block"
        block = payload[11 : 11 + n]
        return lambda: lz4.block.decompress(block, uncompressed_size=1 << 16)
    import zstandard

    d = zstandard.ZstdDecompressor()
    return lambda: d.decompress(payload, max_output_size=1 << 16)


def arrow_decoder(nat, data: bytes):
    """The Arrow-direct decode step of the native backend on one batch: its rows into column buffers,
    taken (as an Arrow batch would be) every 80 batches."""
    from kfmt.runtime.native._columns import Columns

    cols, opts = Columns(), kfmt.DecodeOptions()

    def decode():
        nat.decode_columns(data, 0, len(data), opts, cols)
        if cols.rows >= 8000:
            cols.take()

    return decode


def build_default(cls, codec: str, recs) -> bytearray:
    """A v2 batch by a peer's DefaultRecordBatchBuilder, as its producer sends it: the ``bytearray`` that
    ``build()`` returns (copying it into ``bytes``, which the producer never does, would add some 155
    instructions per record of this workload to the peer's count)."""
    b = cls(2, CODECS[codec], False, -1, -1, -1, 1 << 22)
    for off, ts, k, v, h in recs:
        b.append(off, ts, k, v, h)
    return b.build()


def build_legacy(cls, magic: int, codec: str, recs) -> bytes:
    """A v0/v1 message set by a peer's LegacyRecordBatchBuilder."""
    b = cls(magic, CODECS[codec], 1 << 22)
    for off, ts, k, v, _ in recs:
        b.append(off, ts if magic else None, k, v)
    return bytes(b.build())


def measure(peers: dict, rounds: int, min_time: float) -> dict:
    """Median records/s per implementation and direction; rounds interleave the implementations so
    that drifts of a shared, noisy machine hit all of them alike."""
    usable = {}
    for name, (enc, dec) in peers.items():
        try:
            if enc is not None:
                enc()
            dec()
            usable[name] = (enc, dec)
        except Exception as exc:  # a peer that cannot do this codec/magic (aiokafka: no LZ4 for magic 0)
            usable[name] = exc
    samples = {name: ([], []) for name, v in usable.items() if not isinstance(v, Exception)}
    for _ in range(rounds):
        for name, (e, d) in samples.items():
            enc, dec = usable[name]
            e.append(_rate(enc, min_time) if enc is not None else float("nan"))
            d.append(_rate(dec, min_time))
    out = {}
    for name, v in usable.items():
        out[name] = (
            v
            if isinstance(v, Exception)
            else (statistics.median(samples[name][0]), statistics.median(samples[name][1]))
        )
    return out


def _native(fmt: str):
    """The native backend's module of a format, or None where it was not built."""
    from kfmt.codec.formats import available_backends, backend_module

    return backend_module(fmt, "native") if "native" in available_backends() else None


def v2_peers(codec: str, recs):
    nat = _native("kafka_v2")
    ours_records = [kfmt.Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in recs]

    def enc_codec():  # like for like: the user's records in (kfmt.Records), bytes out, through the public API
        return kfmt.encode_batch(ours_records, codec=codec, backend="python")

    def enc_construct():
        return kfmt.encode_batch(ours_records, codec=codec, backend="construct")

    def enc_kp():
        return build_default(DefaultRecordBatchBuilder, codec, recs)

    def enc_aio():
        return build_default(aio.DefaultRecordBatchBuilder, codec, recs)

    data = enc_codec()
    kp_data = bytes(enc_kp())  # kafka-python may skip compression that does not shrink; decode its own bytes

    def dec_codec():  # bytes in, every field out, through kfmt.read_batches (which checks the CRC)
        read_ours(data, backend="python")

    def dec_codec_nocrc():
        read_ours(data, backend="python", verify_crc=False)

    def dec_construct():
        read_ours(data, backend="construct")

    def dec_kp():
        touch(DefaultRecordBatch(kp_data))

    def dec_aio():
        touch(aio.DefaultRecordBatch(kp_data))

    def dec_aio_crc():
        b = aio.DefaultRecordBatch(kp_data)
        if not b.validate_crc():
            raise ValueError("crc")
        touch(b)

    native = {}
    if codec != "none":  # the decompressor alone on the same payload: the floor of decoding this batch
        from kfmt.runtime.compression import decompress
        from kfmt.runtime.options import DEFAULT_OPTIONS

        payload = data[61:]  # everything after the v2 batch header is the compressed stream
        native["decompress only"] = (None, lambda: decompress(codec, payload, 2, DEFAULT_OPTIONS))
        native["library call only"] = (None, library_call(codec, payload))
    if nat is not None:
        native["kfmt native, Arrow"] = (None, arrow_decoder(nat, data))
        native |= {
            "kfmt native": (
                lambda: kfmt.encode_batch(ours_records, codec=codec, backend="native"),
                lambda: read_ours(data, backend="native"),
            ),
            "kfmt native, no CRC": (None, lambda: read_ours(data, backend="native", verify_crc=False)),
        }
    return {
        **native,
        "kfmt python": (enc_codec, dec_codec),
        "kfmt python, no CRC": (None, dec_codec_nocrc),
        "kfmt construct": (enc_construct, dec_construct),
        "kafka-python": (enc_kp, dec_kp),
        "aiokafka": (enc_aio, dec_aio),
        "aiokafka, CRC": (None, dec_aio_crc),
    }


def legacy_peers(magic: int, codec: str, recs):
    fmt = f"kafka_v{magic}"
    try:
        get_format(fmt)
    except kfmt.CodecError:
        return None
    ours_records = [kfmt.Record(key=k, value=v, timestamp=ts if magic else None) for _, ts, k, v, _ in recs]

    def enc_codec():
        return kfmt.encode_batch(ours_records, magic=magic, codec=codec, backend="python")

    def enc_construct():
        return kfmt.encode_batch(ours_records, magic=magic, codec=codec, backend="construct")

    def enc_kp():
        return build_legacy(LegacyRecordBatchBuilder, magic, codec, recs)

    def enc_aio():
        return build_legacy(aio_legacy.LegacyRecordBatchBuilder, magic, codec, recs)

    kp_data = bytes(enc_kp())

    def dec_codec():
        read_ours(kp_data, backend="python")

    def dec_codec_nocrc():
        read_ours(kp_data, verify_crc=False, backend="python")

    def dec_construct():
        read_ours(kp_data, backend="construct")

    def dec_kp():
        read_memory_records(MemoryRecords, kp_data)

    def dec_aio():
        read_memory_records(AioMemoryRecords, kp_data)

    native = {}
    if _native(fmt) is not None:
        native = {
            "kfmt native": (
                lambda: kfmt.encode_batch(ours_records, magic=magic, codec=codec, backend="native"),
                lambda: read_ours(kp_data, backend="native"),
            ),
            "kfmt native, no CRC": (None, lambda: read_ours(kp_data, verify_crc=False, backend="native")),
        }
    return {
        **native,
        "kfmt python": (enc_codec, dec_codec),
        "kfmt python, no CRC": (None, dec_codec_nocrc),
        "kfmt construct": (enc_construct, dec_construct),
        "kafka-python": (enc_kp, dec_kp),
        "aiokafka": (enc_aio, dec_aio),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per figure (median reported)")
    p.add_argument("--min-time", type=float, default=0.15, help="seconds per round")
    p.add_argument("--magics", default="2,1,0", help="which magics to bench")
    args = p.parse_args(argv)
    recs = workload()
    print(f"# kfmt bench: {N}-record batches, 10-byte keys, 100-byte values, one header (v2); "
          f"median of {args.rounds} rounds, records/s")  # fmt: skip
    print(f"python {sys.version.split()[0]}\n")
    summary = []
    for magic in [int(m) for m in args.magics.split(",")]:
        codecs = list(CODECS) if magic == 2 else [c for c in CODECS if c != "zstd"]
        for codec in codecs:
            peers = v2_peers(codec, recs) if magic == 2 else legacy_peers(magic, codec, recs)
            if peers is None:
                continue
            print(f"## magic {magic}, codec {codec}")
            print(f"| {'implementation':18} | {'encode rec/s':>13} | {'decode rec/s':>13} |")
            print(f"|{'-' * 20}|{'-' * 15}|{'-' * 15}|")
            rates = {}
            for name, res in measure(peers, args.rounds, args.min_time).items():
                if isinstance(res, Exception):
                    print(f"| {name:18} | {'n/a':>13} | {'n/a':>13} |  {type(res).__name__}: {str(res)[:60]}")
                    continue
                rates[name] = res
                enc_cell = "-" if res[0] != res[0] else f"{res[0]:,.0f}"  # nan: decode-only row
                print(f"| {name:18} | {enc_cell:>13} | {res[1]:13,.0f} |", flush=True)
            best = "kfmt native" if "kfmt native" in rates else "kfmt python"
            ke, kd = rates[best]
            pe, pd = rates["kafka-python"]
            ae, ad = rates.get("aiokafka", (float("nan"),) * 2)
            ac = rates.get("aiokafka, CRC", (0, float("nan")))[1]
            kn = rates[best + ", no CRC"][1]
            if "decompress only" in rates:
                print(f"{best} decoding runs at {kd / rates['decompress only'][1]:.0%} of the decompressor's own speed "
                      "on this batch (records/s of decoding / of decompressing alone)")  # fmt: skip
                if "kfmt native, Arrow" in rates and "library call only" in rates:
                    arrow = rates["kfmt native, Arrow"][1]
                    print(f"kfmt native, Arrow: {arrow / rates['decompress only'][1]:.0%} of kfmt's decompress(), "
                          f"{arrow / rates['library call only'][1]:.0%} of the library's own call")  # fmt: skip
            print(f"\n{best} vs kafka-python: encode {ke / pe:.2f}x, decode {kd / pd:.2f}x "
                  f"({kn / pd:.2f}x without CRC checks); vs aiokafka: encode {ke / ae:.2f}x, "
                  f"decode {kd / ad:.2f}x, decode with CRC checks on both {kd / ac:.2f}x\n")  # fmt: skip
            summary.append((magic, codec, best, ke / pe, kd / pd, kn / pd, ke / ae, kd / ad, kd / ac))
    print("## summary: kfmt's active backend / kafka-python and / aiokafka (records/s ratios)")
    print("kafka-python and aiokafka do not check CRCs while reading unless asked; kfmt does by default")
    print("('no CRC' compares like with like; 'aio CRC' is aiokafka with validate_crc())\n")
    print("| magic | codec  | backend     | enc/kp | dec/kp | dec/kp no CRC | enc/aio | dec/aio | dec/aio CRC |")
    print("|-------|--------|-------------|--------|--------|---------------|---------|---------|-------------|")
    for magic, codec, best, e, d, dn, ea, da, dc in summary:
        print(f"| {magic}     | {codec:6} | {best:11} | {e:5.2f}x | {d:5.2f}x | {dn:12.2f}x | {ea:6.2f}x | "
              f"{da:6.2f}x | {dc:10.2f}x |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
