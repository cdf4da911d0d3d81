"""Memory stays bounded while reading: each probe runs in a subprocess and asserts its own peak RSS
(VmHWM, which a fresh process does not inherit)."""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import sys, resource
def rss_kb():
    for ln in open('/proc/self/status'):
        if ln.startswith('VmRSS'):
            return int(ln.split()[1])
def hwm_kb():
    for ln in open('/proc/self/status'):
        if ln.startswith('VmHWM'):
            return int(ln.split()[1])
import kfmt
"""


def _probe(code: str, timeout=300) -> str:
    r = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )  # fmt: skip  (the probes import fuzz.campaign's builders)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_running_out_of_memory_is_never_called_corrupt():
    """Under an address-space limit a valid batch that needs more memory raises MemoryError itself, once
    (not InvalidValueError, not a chain), with the optimistic and the checked decoder alike."""
    out = _probe("""
        recs = [kfmt.Record(value=b"", timestamp=1) for _ in range(300_000)]
        data = kfmt.encode_batch(recs, codec="gzip")
        del recs
        import gc; gc.collect()
        vm = [int(ln.split()[1]) for ln in open('/proc/self/status') if ln.startswith('VmSize')][0] * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + 40 * 2**20, resource.RLIM_INFINITY))
        result = "decoded"
        try:
            list(kfmt.read_batches(data))
        except BaseException as e:  # noqa: BLE001 - which one is the point
            result = type(e).__name__
            del e
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        print(result)
    """)
    assert out.split()[0] == "MemoryError", out


def test_legacy_wrappers_stream_one_by_one():
    """400 gzip wrappers of 1,000 records each (400 MB of values): the first batch arrives after decoding
    one wrapper, not all of them; reading them all holds one at a time."""
    out = _probe("""
        import zlib
        recs = [kfmt.Record(value=bytes(1000), timestamp=1) for _ in range(1000)]
        one = kfmt.encode_batch(recs, magic=1, codec="gzip")
        data = b"".join(kfmt.convert(one, to_magic=1).data for _ in range(1))  # one wrapper
        import struct
        parts = []
        for i in range(400):
            w = bytearray(one)
            struct.pack_into(">q", w, 0, i * 1000 + 999)  # wrapper offset = its last inner offset
            parts.append(bytes(w))
        log = b"".join(parts)
        del recs, parts
        base = rss_kb()
        it = kfmt.read_batches(log)
        first = next(it)
        after_first = rss_kb() - base
        n = 1 + sum(1 for _ in it)
        print(len(log), n, after_first, hwm_kb() - base)
    """)
    size, n, after_first_kb, peak_kb = map(int, out.split())
    assert n == 400
    assert after_first_kb < 20_000, out  # was +403 MB before the first batch arrived
    assert peak_kb < 60_000, out


def test_read_batches_and_dump_stream_a_large_segment(tmp_path):
    seg = tmp_path / "big-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    out = _probe(f"""
        recs = [kfmt.Record(key=b"k%d" % i, value=bytes(900) + i.to_bytes(4, "big"), timestamp=i) for i in range(100)]
        with open({str(seg)!r}, "wb") as f:
            for b in range(1500):
                f.write(kfmt.encode_batch(recs, base_offset=b * 100, codec="none"))
        base = rss_kb()
        n = sum(len(b.records) for b in kfmt.read_batches({str(seg)!r}))
        print(n, hwm_kb() - base)
    """)
    n, peak_kb = map(int, out.split())
    assert n == 150_000 and seg.stat().st_size > 130_000_000
    assert peak_kb < 60_000, out
    r = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "kfmt", "dump", "--summary",
                        "--no-index", str(seg)], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stderr.strip().splitlines()[-1]) < 150_000, r.stderr  # KB: well under the 140 MB segment
    # kfmt convert streams each converted batch into its staging file (it held one segment's output: 190 MB)
    dst = tmp_path / "out"
    r = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "kfmt", "convert", str(seg.parent),
                        str(dst), "--magic", "2", "--codec", "lz4"], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stderr.strip().splitlines()[-1]) < 100_000, r.stderr
    assert (dst / seg.name).stat().st_size > 0 and (dst / seg.name).with_suffix(".index").stat().st_size > 0
    # the Spark source streams its slice (it read the whole slice into memory first)
    out = _probe(f"""
        from kfmt.spark import SegmentSlice, read_slice
        import os
        path = {str(seg)!r}
        part = SegmentSlice(path=path, topic="big", partition=0, start=0, end=os.path.getsize(path))
        import struct
        first = 12 + struct.unpack(">i", open(path, "rb").read(12)[8:])[0]  # the first batch: the imports
        list(read_slice(SegmentSlice(path=path, topic="big", partition=0, start=0, end=first)))
        base = rss_kb()
        rows = 0
        for rb in read_slice(part, columns=["offset", "value"]):
            rows += rb.num_rows
            del rb
        print(rows, hwm_kb() - base)
    """)
    rows, peak_kb = map(int, out.split())
    assert rows == 150_000 and peak_kb < 100_000, out


BOMB = """
import struct, zlib, crc32c
from kfmt.runtime.compression import compress
from fuzz.campaign import v2_batch as batch  # the bomb builders are the fuzz campaign's
def refused(data, **kw):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS: each probe measures its own peak
    base = rss_kb()
    try:
        list(kfmt.read_batches(data, **kw))
        return "decoded", hwm_kb() - base
    except kfmt.CodecError as e:
        return type(e).__name__, hwm_kb() - base
"""


def test_bombs_are_refused_within_the_limit_plus_a_step():
    """A gzip stream of 1 GiB of zeros (1 MB compressed; also padded with 2 MB that gzip readers ignore) is
    refused by the ratio guard after a few MB (it peaked at +513 MB, twice the 256 MiB cap); an LZ4 frame
    of 300 MiB (ratio under the guard) is refused at the 256 MiB cap plus a block."""
    out = _probe(
        BOMB
        + textwrap.dedent("""
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
        gz = b"".join(co.compress(bytes(1 << 20)) for _ in range(1024)) + co.flush()
        kind, grew = refused(batch(1, gz))
        kind2, grew2 = refused(batch(1, gz + bytes(2_000_000)))
        lz = compress("lz4", bytes(300 << 20), 2)
        kind3, grew3 = refused(batch(3, lz))
        print(kind, grew, kind2, grew2, kind3, grew3)
    """)
    )
    k1, g1, k2, g2, k3, g3 = out.split()
    assert (k1, k2, k3) == ("LimitExceededError",) * 3, out
    assert int(g1) < 40_000 and int(g2) < 40_000, out
    assert int(g3) < (256 << 10) + 40_000, out


AMPLIFY = """
from fuzz.campaign import EMPTY_RECORD as EMPTY, gz, record_with_headers as with_headers
"""


def test_many_tiny_records_or_headers_are_refused_before_they_are_built():
    """The object budget (``max_memory``): a 70 KB gzip batch of 9.9M empty records (under ``max_records``)
    took +2.27 GB and 46 s; 100 records of 100,000 headers each (10M headers, under ``max_headers``) +707 MB.
    Both are now refused with LimitExceededError: the records before any is built (their count is known), the
    headers once those built so far reach the budget, so growth stays within the budget plus a constant.
    With a 32 MiB budget the same holds at a smaller scale, and a batch that fits is read whole."""
    out = _probe(
        BOMB
        + AMPLIFY
        + textwrap.dedent("""
        import time
        from kfmt.runtime.options import DecodeOptions
        t = time.perf_counter()
        records = batch(1, gz(EMPTY * 9_900_000), 9_900_000)
        kind1, grew1 = refused(records)
        t1 = time.perf_counter() - t
        headers = batch(1, gz(with_headers(100_000) * 100), 100)
        kind2, grew2 = refused(headers)
        small = DecodeOptions(max_memory=32 << 20)
        kind3, grew3 = refused(headers, opts=small)
        kind4, _ = refused(headers, opts=small, backend="construct")
        fits = batch(1, gz(with_headers(100_000) * 2), 2)
        kind5, grew5 = refused(fits, opts=small)
        print(len(records), kind1, grew1, round(t1, 1), len(headers), kind2, grew2, kind3, grew3, kind4, kind5, grew5)
    """)
    )
    f = out.split()
    assert f[1] == "LimitExceededError" and int(f[2]) < 160_000, out  # the 69 MB decompressed stream, joined
    assert f[5] == "LimitExceededError" and int(f[6]) < (256 << 10) + 60_000, out
    assert f[7] == "LimitExceededError" and int(f[8]) < (32 << 10) + 40_000, out
    assert f[9] == "LimitExceededError", out  # the reference backend applies the same budget
    assert f[10] == "decoded" and int(f[11]) < (32 << 10) + 40_000, out


def test_a_wrapper_of_many_tiny_messages_is_refused_before_they_are_built():
    """A v1 gzip wrapper whose inner set holds 3M minimal messages (102 MB decompressed, under
    ``max_records``): refused once the messages built reach the budget, not after building all of them."""
    out = _probe(
        BOMB
        + textwrap.dedent("""
        from kfmt.runtime.options import DecodeOptions
        inner = kfmt.encode_batch([kfmt.Record(key=None, value=None, timestamp=1)], magic=1)
        co = zlib.compressobj(9, zlib.DEFLATED, 31)
        comp = b"".join(co.compress(inner) for _ in range(3_000_000)) + co.flush()
        # a v1 wrapper: offset, size, crc, then magic 1, attributes 1 (gzip), timestamp, null key, the value
        body = struct.pack(">bbqii", 1, 1, 1, -1, len(comp)) + comp
        w = struct.pack(">qiI", 2_999_999, 4 + len(body), zlib.crc32(body)) + body
        kind, grew = refused(bytes(w))
        print(len(w), kind, grew)
    """)
    )
    f = out.split()
    assert f[1] == "LimitExceededError" and int(f[2]) < (256 << 10) + 120_000, out


DAMAGED_PROBE = """
import os, struct, subprocess
from kfmt.spark import SegmentSlice, read_slice
def peak(fn):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM back to the current RSS: each reader's own peak
    base = rss_kb()
    got = fn()
    return got, hwm_kb() - base
def regions(path):
    return [(p, e - p, b.zero_filled) for p, e, b in kfmt.scan(path, skip_corrupt=True) if isinstance(b, Exception)]
def records(path, **kw):
    return sum(len(b.records) for b in kfmt.read_batches(path, **kw))
def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the message is the point
        return str(e)
def rows(path, **kw):
    return kfmt.read_arrow(path, **kw).num_rows
def spark(path):
    part = SegmentSlice(path=path, topic="t", partition=0, start=0, end=os.path.getsize(path), live_end=True)
    return error(lambda: list(read_slice(part)))
# every reader once on a small log first: what is measured is the reading, not the first import of pyarrow
_small = kfmt.encode_batch([kfmt.Record(value=b"x")])
kfmt.read_arrow(_small)
list(kfmt.read_batches(_small))
out = {}
for name in ("zero_tail", "bad_size"):
    path = PATHS[name]
    out[name] = {
        "regions": peak(lambda: regions(path)),
        "skip": peak(lambda: records(path, on_corrupt="skip")),
        "fail": peak(lambda: error(lambda: records(path, partial_tail="error"))),
        "arrow_skip": peak(lambda: rows(path, on_corrupt="skip")),
        "arrow_fail": peak(lambda: error(lambda: rows(path))),
        "spark": peak(lambda: spark(path)),
    }
print(repr(out))
"""


def _segment_with(tmp_path, name: str, hole: int, bad_size: bool) -> tuple[str, int, int]:
    """50 v2 batches of 100 records, then a sparse hole of ``hole`` zero bytes (a preallocated tail); with
    ``bad_size`` the second batch's size field claims 0x7FFF0000 bytes. (path, batch length, records)."""
    import kfmt

    recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * 100, timestamp=1_700_000_000_000 + i) for i in range(100)]
    one = kfmt.encode_batch(recs)
    data = bytearray(b"".join(struct.pack(">q", j * 100) + one[8:] for j in range(50)))
    if bad_size:
        struct.pack_into(">i", data, len(one) + 8, 0x7FFF0000)
    path = tmp_path / name / "00000000000000000000.log"
    path.parent.mkdir()
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(len(data) + hole)  # sparse: no disk used
    return str(path), len(one), 5000


def test_damaged_regions_are_crossed_in_linear_time_and_flat_memory(tmp_path):
    """#34 items 14, 15: a 400 MB zero-filled tail (log.preallocate and an unclean shutdown) and a size field
    claiming 0x7FFF0000 bytes in a large segment without an index. Every reader reports the region where it
    is and how long it is, holding a bounded part of it: the zero tail's readers copied and rescanned the
    region at every chunk (a 200 MB tail: 28 s, 2.7 GB), and the damaged size was read for in one go (2.5 GB)."""
    hole = 400 << 20
    zero, one, n = _segment_with(tmp_path, "zero_tail", hole, False)
    bad, _, _ = _segment_with(tmp_path, "bad_size", hole, True)
    out = _probe(f"PATHS = {{'zero_tail': {zero!r}, 'bad_size': {bad!r}}}\n" + DAMAGED_PROBE, timeout=600)
    got = eval(out)  # noqa: S307 - our own probe's repr
    end = 50 * one
    z = got["zero_tail"]
    assert z["regions"][0] == [(end, hole, True)]
    assert z["skip"][0] == n and z["arrow_skip"][0] == n
    for where in ("fail", "arrow_fail", "spark"):  # without skipping: the first broken size, located
        assert f"log.entry.size at byte {end + 8}: entry size 0" in z[where][0], (where, z[where][0])
    b = got["bad_size"]
    # the second entry's claimed size runs past the end; the batches after it are found again, then the hole
    assert b["regions"][0] == [(one, one, False), (end, hole, True)]
    assert b["skip"][0] == n - 100 and b["arrow_skip"][0] == n - 100
    for where in ("fail", "arrow_fail", "spark"):
        assert f"at byte {one}" in b[where][0], (where, b[where][0])
        assert f"{end + hole - one} byte" in b[where][0] or f"({end + hole - one} bytes left)" in b[where][0]
    for name, readers in got.items():
        for reader, (_, kb) in readers.items():
            # KB: never the region (400 MB) nor the claimed size (2 GB): at most what a search may hold (a
            # candidate entry of up to RESYNC_MAX_ENTRY, 64 MiB, copied once as a chunk is added) and a chunk
            assert kb < 160_000, (name, reader, kb)
