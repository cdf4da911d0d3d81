"""The native backend (a C extension per format): chosen where built, the python backend's values and errors,
no leaks on any path. Skipped where it was not built (a machine without a C compiler)."""

import gc
import os
import subprocess
import sys
import tracemalloc

import pytest

import kfmt
from kfmt.codec.formats import available_backends, backend_module, format_ids

pytestmark = pytest.mark.skipif("native" not in available_backends(), reason="the native backend is not built here")


def test_active_where_built_and_python_without_it():
    env = {k: v for k, v in os.environ.items() if k != "KFMT_BACKEND"}
    out = subprocess.run([sys.executable, "-m", "kfmt", "--version"], capture_output=True, text=True, env=env)
    assert "backend: native; available: native, python, construct" in out.stdout
    # an installation without the extensions (no compiler): the python backend, and it says so
    env["KFMT_DISABLE_NATIVE"] = "1"
    out = subprocess.run([sys.executable, "-m", "kfmt", "--version"], capture_output=True, text=True, env=env)
    assert "backend: python; available: python, construct" in out.stdout
    r = subprocess.run(
        [sys.executable, "-c", "from kfmt.codec.formats import backend_module; backend_module('kafka_v2', 'native')"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert r.returncode != 0 and "not built on this machine" in r.stderr


def _log(fid):
    """Entries of one format: plain, compressed, keyed, with headers where it has them."""
    from kfmt.codec.formats import get_format

    mod = get_format(fid)
    headers = [("h", b"1"), ("n", None)] if "headers" in mod.CARRIES else []
    if fid == "kip82_header_wrapper":
        headers = [(7, b"1")]
    recs = [kfmt.Record(key=b"k%d" % i if i % 3 else None, value=b"v" * i, timestamp=1000 + i, headers=headers)
            for i in range(12)]  # fmt: skip
    codecs = ["none"] if fid == "kip82_header_wrapper" else ["none", "gzip", "lz4"]
    return b"".join(kfmt.encode_batch(recs, format=fid, codec=c, base_offset=100 * i) for i, c in enumerate(codecs))


@pytest.mark.parametrize("fid", format_ids())
def test_reading_a_log_gives_the_python_backends_batches(fid):
    data = _log(fid)
    want = list(kfmt.scan(data, format=fid, backend="python"))
    got = list(kfmt.scan(data, format=fid, backend="native"))
    assert [(p, e) for p, e, _ in got] == [(p, e) for p, e, _ in want]
    assert [b.as_dict() for _, _, b in got] == [b.as_dict() for _, _, b in want]
    assert sum(len(b.records) for _, _, b in got) == 12 * (1 if fid == "kip82_header_wrapper" else 3)


@pytest.mark.parametrize("fid", format_ids())
def test_every_damaged_prefix_and_byte_gives_the_python_backends_error(fid):
    data = _log(fid)
    nat, py = backend_module(fid, "native"), backend_module(fid, "python")
    end = py.decode_from(data, 0, len(data))[1]
    entry = data[:end]

    def outcome(mod, buf, opts):
        try:
            v, p = mod.decode_from(buf, 0, len(buf), opts)
            return ("ok", v.as_dict(), p)
        except kfmt.CodecError as e:
            return (type(e), str(e), e.offset, e.path)

    cases = [entry[:n] for n in range(len(entry))]
    for i in range(len(entry)):
        for x in (0x00, 0x80, 0xFF):
            b = bytearray(entry)
            b[i] ^= x or 0x01
            cases.append(bytes(b))
    # every 4-byte big-endian integer nudged by a little (length fields a few bytes off, nested ones too),
    # with the bytes after it padded so that an outer length still fits
    for i in range(len(entry) - 3):
        for delta in (-2, -1, 1, 2):
            b = bytearray(entry + bytes(4))
            v = int.from_bytes(b[i : i + 4], "big", signed=True)
            if -(2**31) <= v + delta < 2**31:
                b[i : i + 4] = (v + delta).to_bytes(4, "big", signed=True)
                cases.append(bytes(b))
    for opts in (kfmt.DecodeOptions(), kfmt.DecodeOptions(verify_crc=False)):  # without CRCs: every other check
        for buf in cases:
            assert outcome(nat, buf, opts) == outcome(py, buf, opts), (opts.verify_crc, buf.hex())


def test_no_leaks_decoding_into_arrow_columns():
    """20,000 rounds of rows decoded into the Arrow column buffers (one batch; a run of batches that damage
    stops, rolled back) and handed over by take(): Python's allocated blocks and the inputs' reference counts
    stay flat (a block or reference leaked per round would add 20,000)."""
    from kfmt.runtime.native._columns import Columns

    nat = backend_module("kafka_v2", "native")
    good = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 20, timestamp=5, headers=[("h", None)])] * 5)
    gz = kfmt.encode_batch([kfmt.Record(key=None, value=b"v", timestamp=5)] * 5, codec="gzip")
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    run = good + gz + bytes(bad_crc) + good
    cols, opts = Columns(), kfmt.DecodeOptions()

    def once():
        nat.decode_columns(good, 0, len(good), opts, cols)
        batches, _, counts, stop = nat.decode_columns_run(run, 0, len(run), opts, cols, 8192, 1 << 30)
        assert len(batches) == 2 and counts == [5, 5] and stop == len(good) + len(gz)
        assert cols.take()["rows"] == 15

    def state():
        gc.collect()
        return [sys.getallocatedblocks()] + [sys.getrefcount(x) for x in (good, gz, run, None, True)]

    for _ in range(200):
        once()
    before = state()
    for _ in range(20_000):
        once()
    after = state()
    assert all(abs(a - b) < 200 for a, b in zip(after, before)), (before, after)


def test_no_leaks_over_100k_decodes_including_error_paths():
    """Reference counts of the shared objects and traced memory stay flat over 100,000 decodes of valid,
    compressed, damaged and truncated input and 60,000 encodes, refused ones included (a leaked reference
    or object on any path would show)."""
    from kfmt.codec.formats import get_format

    nat = backend_module("kafka_v2", "native")
    v1 = backend_module("kafka_v1", "native")
    good = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 20, timestamp=5, headers=[("h", None)])] * 5)
    gz = kfmt.encode_batch([kfmt.Record(key=None, value=b"v", timestamp=5)] * 5, codec="gzip")
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    legacy = kfmt.encode_batch([kfmt.Record(value=b"m", timestamp=1)] * 8, magic=1)
    opts = kfmt.DecodeOptions()
    inputs = [good, gz, bytes(bad_crc), good[:40], good[:-3]]
    model = get_format("kafka_v2")

    batch = nat.decode(good)
    odd = model.Batch(records=[model.Record(key="not bytes", value=b"v", timestamp=1)])  # the C encoder hands over
    msgs = [backend_module("kafka_v1", "python").decode_from(legacy, 0, len(legacy))[0]] * 4

    def once():
        for buf in inputs:
            try:
                nat.decode_from(buf, 0, len(buf), opts)
            except kfmt.CodecError:
                pass
        v1.decode_run(legacy, 0, len(legacy), opts)
        nat._c.encode(batch)  # encoded in C
        nat._c.encode(odd)  # refused in C (None), with everything it read released
        v1._c.encode_all(msgs, 3)

    def counts():
        gc.collect()
        shared = (None, True, False, good, gz, model.Batch, model.Record, "none", "gzip", batch, odd, msgs[0])
        return [sys.getrefcount(x) for x in shared] + [sys.getrefcount(r) for r in batch.records]

    for _ in range(200):
        once()
    tracemalloc.start()
    before, mem0 = counts(), tracemalloc.get_traced_memory()[0]
    for _ in range(20_000):  # 5 decodes and a legacy run each: 100,000 decodes, 20,000 runs of 8 messages
        once()
    after, mem1 = counts(), tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # a reference leaked on any path would add at least 20,000 (one per loop); the interpreter's own
    # bookkeeping moves None's count by a few
    assert all(abs(a - b) < 50 for a, b in zip(after, before)), (before, after)
    assert mem1 - mem0 < 64 * 1024, mem1 - mem0


def test_no_leaks_decoding_and_encoding_kafkas_own_payloads():
    """Kafka's message encoding in C (switches, tagged sections with known and unknown tags, compact
    lengths, views on a string condition, schema parameters): reference counts and traced memory stay flat
    over 20,000 rounds of decodes (damaged and truncated ones included) and encodes (refused ones too)."""
    import json
    from pathlib import Path

    from kfmt.payloads import _codec

    recs = json.loads((Path(__file__).parent / "vectors" / "kafka_internal_payloads.json").read_text())["records"]
    meta = bytes.fromhex(next(r["value"] for r in recs if r["value"].startswith("010301")))  # PartitionRecord v1
    group = bytes.fromhex(next(r["value"] for r in recs if r["key"] and r["key"].startswith("0002")))
    km, kg = _codec("kraft_metadata", "native"), _codec("group_coordinator_value", "native")
    opts = kfmt.DecodeOptions()
    inputs = [(km, meta, ()), (km, meta[:-5], ()), (kg, group, (2,)), (kg, group[:300], (2,)), (kg, group, (77,))]
    part = km.decode(meta)
    gv = kg.decode(group, record_type=2)
    odd = km.decode(meta)
    odd.record.tagged_fields, odd.record.leader_recovery_state = [(0, b"x")], 1  # tag 0 twice: python's to refuse

    def once():
        for mod, buf, params in inputs:
            mod._c.decode_from(buf, 0, len(buf), opts, *params)
        km._c.encode(part)
        kg._c.encode(gv, 2)
        km._c.encode(odd)

    def counts():
        gc.collect()
        shared = (None, True, False, meta, group, part, gv, odd, part.record, gv.value, odd.record.tagged_fields)
        return [sys.getrefcount(x) for x in shared]

    assert km._c.encode(part) == meta and kg._c.encode(gv, 2) == group and km._c.encode(odd) is None
    for _ in range(200):
        once()
    tracemalloc.start()
    before, mem0 = counts(), tracemalloc.get_traced_memory()[0]
    for _ in range(20_000):
        once()
    after, mem1 = counts(), tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert all(abs(a - b) < 50 for a, b in zip(after, before)), (before, after)
    assert mem1 - mem0 < 64 * 1024, mem1 - mem0


def _mixed_log():
    """A log of every real magic and codec, control and transactional batches, null keys, empty and
    non-UTF-8 header keys (read with U+FFFD as Kafka does), timestamps -1."""
    recs = [
        kfmt.Record(key=b"k%d" % i if i % 3 else None, value=b"v" * i if i != 5 else None,
                    timestamp=1_700_000_000_000 + i if i != 4 else -1,
                    headers=[("h", b"1"), ("", None)] if i % 2 else [])
        for i in range(30)
    ]  # fmt: skip
    parts = [kfmt.encode_batch(recs, codec=c, base_offset=100 * j) for j, c in enumerate(CODECS)]
    bad_key = [kfmt.Record(value=b"x", timestamp=1, headers=[(b"\xff\xfe".decode("utf-8", "surrogateescape"), b"1")])]
    parts.append(kfmt.encode_batch(bad_key, base_offset=600))
    plain = [kfmt.Record(key=r.key, value=r.value, timestamp=r.timestamp) for r in recs[:4]]
    parts.append(kfmt.encode_batch(plain, magic=1, codec="gzip", base_offset=700))
    parts.append(kfmt.encode_batch([kfmt.Record(value=b"m")], magic=0, base_offset=800))
    parts.append(kfmt.encode_batch([kfmt.Record(key=b"\x00\x00\x00\x01", value=None, timestamp=5)], base_offset=900,
                                   is_transactional=True, is_control=True, producer_id=7))  # fmt: skip
    return b"".join(parts)


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("columns", [None, ["offset", "key"], ["headers", "timestamp", "codec", "position"]])
def test_arrow_direct_gives_the_object_paths_table(columns):
    """read_arrow with the native backend (records decoded straight into Arrow buffers) equals the object
    path's table, column for column, whatever the projection."""
    from kfmt import read_arrow

    data = _mixed_log()
    want = read_arrow(data, columns=columns, backend="python", include_control=True)
    got = read_arrow(data, columns=columns, backend="native", include_control=True)
    assert got.schema == want.schema and got.num_rows == want.num_rows == 30 * 5 + 1 + 4 + 1 + 1
    for c in want.column_names:
        assert got[c].to_pylist() == want[c].to_pylist(), c


@pytest.mark.parametrize("include_control", [False, True])
def test_runs_of_batches_decoded_in_one_call_give_the_object_paths_table(tmp_path, monkeypatch, include_control):
    """Consecutive batches go into the columns by one native call (decode_columns_run): across read chunks
    (positions stay file-relative), Arrow batch limits (a run stops when the columns are full), control
    batches (a run stops before one) and damage (before it too: the one-by-one path reports it), the table
    is the object path's, row for row."""
    import kfmt.log.arrow
    import kfmt.log.scanner
    from kfmt import read_arrow

    nat = backend_module("kafka_v2", "native")
    calls = []
    run = nat.decode_columns_run

    def counted(*args):
        got = run(*args)
        calls.append(len(got[0]))
        return got

    monkeypatch.setattr(sys.modules[nat.__name__], "decode_columns_run", counted)
    monkeypatch.setattr(kfmt.log.scanner, "CHUNK", 3000)  # many read chunks: runs cross their boundaries
    monkeypatch.setattr(kfmt.log.arrow, "ROWS_PER_ARROW_BATCH", 70)  # rows(), the one loop, reads it
    path = tmp_path / "00000000000000000000.log"
    damaged = bytearray(_mixed_log() * 3)
    damaged[len(damaged) // 2] ^= 0x55
    for data in (_mixed_log() * 3, bytes(damaged)):
        path.write_bytes(data)
        cols = ["offset", "key", "value", "headers", "timestamp", "codec", "position", "error"]
        opts = {"columns": cols, "include_control": include_control, "on_corrupt": "quarantine"}
        want = read_arrow(str(path), backend="python", **opts)
        calls.clear()
        got = read_arrow(str(path), backend="native", **opts)
        assert got.to_pylist() == want.to_pylist()
        assert max(calls) > 1  # batches did come several to a call


@pytest.mark.parametrize("on_corrupt", ["skip", "quarantine"])
def test_arrow_direct_on_damaged_logs(on_corrupt):
    import random

    from kfmt import read_arrow

    data = _mixed_log()
    rng = random.Random(5)
    for _ in range(40):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        want = read_arrow(bytes(b), backend="python", on_corrupt=on_corrupt)
        got = read_arrow(bytes(b), backend="native", on_corrupt=on_corrupt)
        assert got.to_pylist() == want.to_pylist()


def test_arrow_direct_rows_are_rolled_back_when_a_batch_is_refused():
    """A batch whose records went to the columns part way before a check failed leaves no rows behind."""
    from kfmt.runtime.native._columns import Columns

    nat = backend_module("kafka_v2", "native")
    good = kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=1) for i in range(10)])
    broken = bytearray(good)
    broken[-1] ^= 0xFF  # the last record's last byte (a CRC mismatch, and with CRCs off a bad header count)
    c = Columns()
    assert nat.decode_columns(good, 0, len(good), kfmt.DecodeOptions(), c)[2] == 10
    for crc in (True, False):
        assert nat.decode_columns(bytes(broken), 0, len(broken), kfmt.DecodeOptions(verify_crc=crc), c) is None
        assert c.rows == 10


def _fast_path_payloads(blob: bytes) -> dict:
    """Compressed payloads of every shape the C fast paths take or hand back: Kafka's usual ones and the
    unusual, damaged or over-limit ones the python function decides."""
    import struct

    import lz4.block
    import snappy
    import zstandard

    from kfmt.runtime.compression import compress, xxh32

    def lz4_frame(flg, blocks, content_size=None, hc=None, end=b"\x00\x00\x00\x00"):
        desc = bytes((flg, 0x40)) + (struct.pack("<Q", content_size) if content_size is not None else b"")
        hc = (xxh32(desc) >> 8) & 0xFF if hc is None else hc
        return b"\x04\x22\x4d\x18" + desc + bytes((hc,)) + b"".join(blocks) + end

    def lz4_block(data, raw=False, checksum=False):
        body = data if raw else lz4.block.compress(data, store_size=False)
        out = struct.pack("<I", len(body) | (0x80000000 if raw else 0)) + body
        return out + (struct.pack("<I", xxh32(body)) if checksum else b"")

    def xerial(*chunks):
        return (
            b"\x82SNAPPY\x00"
            + struct.pack(">ii", 1, 1)
            + b"".join(struct.pack(">i", len(c)) + c for c in map(snappy.compress, chunks))
        )

    third = len(blob) // 3
    zc = zstandard.ZstdCompressor(write_content_size=False)
    zs = zc.compress(blob)
    flip = lambda b, i: b[:i] + bytes((b[i] ^ 0x5A,)) + b[i + 1 :]  # noqa: E731
    gz = compress("gzip", blob)
    return {
        "gzip": [gz, gz + compress("gzip", blob[:third]), gz + b"trailing", gz + b"\x1f\x8b" + b"\x00" * 8, gz[:-6],
                 flip(gz, len(gz) // 2), compress("gzip", blob + b"\x00" * (1 << 20))],
        "snappy": [compress("snappy", blob), snappy.compress(blob), xerial(blob[:third], blob[third:2 * third], blob[2 * third:]),
                   xerial(blob[:third]) + xerial(blob[third:]), xerial(), flip(xerial(blob), 25), xerial(blob)[:-7],
                   xerial(blob)[:20] + b"\xff\xff\xff\xff\x0f" + xerial(blob)[25:], b"\x82SNAPPY\x00" + b"\x00" * 9],
        "lz4": [compress("lz4", blob), lz4_frame(0x68, [lz4_block(blob)], content_size=len(blob)),
                lz4_frame(0x60, [lz4_block(blob[:third], raw=True), lz4_block(blob[third:])]),
                lz4_frame(0x70, [lz4_block(blob, checksum=True)]), lz4_frame(0x60, [lz4_block(blob)], hc=0),
                flip(compress("lz4", blob), 20), compress("lz4", blob)[:-3], compress("lz4", blob) + b"tail",
                lz4_frame(0x60, [lz4_block(blob)], end=b""), lz4_frame(0x64, [lz4_block(blob)]), lz4_frame(0x60, [])],
        "zstd": [compress("zstd", blob), zstandard.ZstdCompressor().compress(blob), zs + zs, zs + b"junk",
                 struct.pack("<II", 0x184D2A50, 3) + b"abc" + zs, flip(zs, len(zs) // 2), zs[:-2],
                 zc.compress(blob + b"\x00" * 200_000)],
    }  # fmt: skip


def test_decompression_fast_paths_give_the_python_functions_result_or_error():
    """The C decoders decompress Kafka's usual gzip, snappy, LZ4 and zstd payloads themselves (the libraries'
    functions, not the python framing code); on every shape, usual or not, damaged or over a limit, the
    batch decodes to the python backend's value or its exact error, v2 and legacy wrappers alike."""
    import struct

    import crc32c

    recs = [kfmt.Record(key=b"k%d" % i, value=b"value %d " % i * 9, timestamp=7 + i, headers=[("h", b"%d" % i)])
            for i in range(60)]  # fmt: skip
    plain = kfmt.encode_batch(recs)
    blob = plain[61:]  # the records of an uncompressed v2 batch
    nat, py = backend_module("kafka_v2", "native"), backend_module("kafka_v2", "python")
    tight = kfmt.DecodeOptions(max_decompressed=len(blob) - 10)
    checked = 0
    for codec_id, (codec, payloads) in enumerate(_fast_path_payloads(blob).items(), start=1):
        for payload in payloads:
            header = struct.pack(">hiqqqhii", codec_id, len(recs) - 1, 7, 7 + 59, -1, -1, -1, len(recs))
            body = header + payload
            data = struct.pack(">qiibI", 0, len(body) + 9, -1, 2, crc32c.crc32c(body)) + body
            for opts in (kfmt.DecodeOptions(), tight):
                assert _outcome(nat, data, opts) == _outcome(py, data, opts), (codec, payloads.index(payload), opts)
                checked += 1
            # Kafka's usual shapes are decompressed from C, no python framing code run; others go to python
            shape = (codec, payloads.index(payload))
            if shape in FAST_SHAPES or shape in PYTHON_SHAPES:
                assert _runs_python_framing(nat, data) == (shape in PYTHON_SHAPES), shape
    assert checked == 2 * 35
    for magic, codec in ((0, "lz4"), (1, "lz4"), (0, "snappy"), (1, "snappy"), (0, "gzip"), (1, "gzip")):
        legacy = [kfmt.Record(key=r.key, value=r.value, timestamp=r.timestamp) for r in recs[:7]]
        data = kfmt.encode_batch(legacy, magic=magic, codec=codec)
        mod_n, mod_p = backend_module(f"kafka_v{magic}", "native"), backend_module(f"kafka_v{magic}", "python")
        assert _outcome(mod_n, data, kfmt.DecodeOptions()) == _outcome(mod_p, data, kfmt.DecodeOptions())


#: payloads of _fast_path_payloads (codec, index) decompressed from C: Kafka's own, raw and multi-block snappy,
#: concatenated xerial streams, LZ4 with a content size or a stored block, zstd with a content size
FAST_SHAPES = {("gzip", 0), ("snappy", 0), ("snappy", 1), ("snappy", 2), ("snappy", 3), ("lz4", 0), ("lz4", 1), ("lz4", 2),
               ("zstd", 0), ("zstd", 1)}  # fmt: skip
#: ... and handed to the python code: two gzip members, a gzip output over 1 MiB, a xerial header alone, LZ4
#: block checksums, two zstd frames
PYTHON_SHAPES = {("gzip", 1), ("gzip", 6), ("snappy", 4), ("lz4", 3), ("zstd", 2)}


def _runs_python_framing(mod, data) -> bool:
    """Whether decoding ``data`` enters kfmt.runtime.compression (the python decompression code)."""
    entered = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.endswith(os.path.join("runtime", "compression.py")):
            entered.append(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        _outcome(mod, data, kfmt.DecodeOptions())
    finally:
        sys.setprofile(None)
    return bool(entered)


def _outcome(mod, data, opts):
    try:
        value, end = mod.decode_from(data, 0, len(data), opts)
    except kfmt.CodecError as e:
        return type(e).__name__, str(e)
    return repr(value), end


def test_validity_bytes_appear_with_the_first_null_and_roll_back():
    """A column's validity bytes are written only once it holds a null (then a 1 for every value before it);
    rolling back past that null leaves a column with none again; the bitmaps taken say exactly which rows
    are null."""
    from kfmt.runtime.native._columns import Columns

    c = Columns()
    c.append_row(0, 5, b"k", b"v", [], [])
    m = c.mark()
    c.append_row(1, 5, None, b"v", [b"h"], [None])  # the key column's and header values' first nulls
    c.rollback(m)
    t = c.take()
    assert t["rows"] == 1 and t["key_ok"] == (None, 0) and t["hvalue_ok"] == (None, 0) and t["nheaders"] == 0
    for i in range(9):
        c.append_row(i, 5, b"k", b"v", [b"h"], [b"x"])
    c.append_row(9, None, None, None, [b"h"], [None])  # row 9: no timestamp, key or value; header 9 null
    c.append_row(None, 5, b"k", b"v", [], [])  # row 10: no offset
    c.null_row()  # row 11: a quarantined region's row, null everywhere
    t = c.take()
    assert t["rows"] == 12 and t["nheaders"] == 10

    def nulls(bits, n):
        return [i for i in range(n) if not bits[i >> 3] >> (i & 7) & 1]

    for name, rows in (("offset_ok", [10, 11]), ("timestamp_ok", [9, 11]), ("key_ok", [9, 11]), ("value_ok", [9, 11])):
        bits, count = t[name]
        assert count == len(rows) and nulls(bits, 12) == rows, name
    bits, count = t["hvalue_ok"]
    assert count == 1 and nulls(bits, 10) == [9]
    assert c.take()["offset_ok"] == (None, 0)  # taken: the next rows start with no validity bytes
