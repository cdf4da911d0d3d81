"""Memory stays bounded while reading: each probe runs in a subprocess and asserts its own peak RSS
(VmHWM, which a fresh process does not inherit)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=timeout)  # fmt: skip
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
    r = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "kfmt.cli", "dump", "--summary",
                        "--no-index", str(seg)], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert int(r.stderr.strip().splitlines()[-1]) < 150_000, r.stderr  # KB: well under the 140 MB segment


BOMB = """
import struct, zlib, crc32c
from kfmt.runtime.compression import compress
def batch(code, comp):
    d = bytearray(kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)], codec="none"))
    body = d[:61] + comp
    struct.pack_into(">h", body, 21, code)
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
    return bytes(body)
def refused(data):
    base = rss_kb()
    try:
        list(kfmt.read_batches(data))
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
