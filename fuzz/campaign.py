"""`make fuzz`: a fuzz campaign over every format and both backends.

Inputs are mutated valid entries (bit flips, byte overwrites, truncations, insertions, tampered
length fields, recompressed garbage) and random bytes. Every decoder must either decode or raise
`kfmt.CodecError`; anything else is a crash, saved under tests/vectors/regressions/ so the suite
replays it. With --atheris each format is also fuzzed coverage-guided by atheris (libFuzzer).
A framing stage damages whole logs mixing v0, v1 and v2 (zero-filled holes and tails, huge or tiny size
fields, inserted garbage) and checks that ``kfmt.scan(skip_corrupt=True)`` accounts for every byte and
finds every untouched batch; a bomb stage feeds each codec's high-ratio payloads, and an amplification
stage small batches of millions of empty records, headers or inner messages (refused by the max_memory
budget), each recording its peak RSS growth. A payload stage mutates the keys and values of Kafka's own
topics (a real broker's records, tests/vectors/kafka_internal_payloads.json) and decodes them with the
message schemas' python and Construct codecs: each must decode or raise CodecError, both must agree, and a
value that decodes must encode to bytes that decode to the same value. The campaign ends with a table:
inputs per format and backend, crashes, seconds, peak memory growth per stage.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import random
import resource
import struct
import sys
import time
import traceback
import zlib
from pathlib import Path

import kfmt
from kfmt.codec.formats import BACKENDS, backend_module, format_ids, get_format
from kfmt.runtime.options import DecodeOptions

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "vectors" / "regressions"
OPTS = [DecodeOptions(), DecodeOptions(verify_crc=False), DecodeOptions(verify_crc=False, max_decompressed=1 << 16)]


def seeds(fid: str, rng: random.Random) -> list[bytes]:
    """Valid entries of the format: several shapes, every codec it can carry."""
    mod = get_format(fid)
    int_keys = fid == "kip82_header_wrapper"
    out = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        for n in (1, 3, 17):
            recs = []
            for i in range(n):
                hs = (
                    []
                    if fid in ("kip98_draft", "kafka_v0", "kafka_v1")
                    else [((i if int_keys else f"h{i}"), b"x" * (i % 5))]
                )
                recs.append(kfmt.Record(key=None if i % 3 == 0 else bytes(rng.randrange(256) for _ in range(i % 7)),
                                        value=b"v" * rng.randrange(0, 200), headers=hs, timestamp=1_700_000_000_000 + i))  # fmt: skip
            try:
                out.append(kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=rng.randrange(1000)))
            except kfmt.CodecError:
                pass  # the format cannot carry this codec
    del mod
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        if not b:
            b = bytearray(rng.randbytes(rng.randrange(1, 64)))
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif op == 2:
            del b[i:]
        elif op == 3:
            b[i:i] = rng.randbytes(rng.randrange(1, 9))
        elif op == 4 and len(b) >= i + 4:  # a length or count field claiming anything
            struct.pack_into(">i", b, i, rng.choice((-1, -2, 0, 0x7FFFFFFF, -0x80000000, rng.randrange(-5, 5000))))
        elif op == 5:
            del b[i : i + rng.randrange(1, 16)]
        else:
            j = rng.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    return bytes(b)


def one(mod, data: bytes, opts) -> str | None:
    """Decode; return a crash description, or None when the decoder behaved."""
    try:
        mod.decode_from(data, 0, len(data), opts)
    except kfmt.CodecError as e:
        if "internal decode failure" in str(e):
            return f"CodecError wrapping an internal failure: {e}"
    except Exception as e:  # noqa: BLE001 - this is what the campaign looks for
        return f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
    return None


def disagreement(ref_mod, other_mod, data: bytes, opts, exact: bool) -> str | None:
    """Another backend against the python backend on one input: the same value, or both an error; with
    ``exact`` (a compiled backend) the very same error: class, message, byte offset and field path. The
    Construct reference words its errors its own way (a huge length is "exceeds the limit" to one and
    "runs past the end" to the other), so only the outcome is compared for it. Else a description."""
    out = []
    for mod in (ref_mod, other_mod):
        try:
            v = mod.decode_from(data, 0, len(data), opts)[0]
            out.append(("ok", v, _slots(v)))
        except kfmt.CodecError as e:
            out.append(("error", type(e).__name__, (str(e), e.offset, e.path) if exact else None))
        except Exception as e:  # noqa: BLE001 - reported by one() as a crash
            out.append(("crash", type(e).__name__, None))
    (ka, va, da), (kc, vc, dc) = out
    if ka != kc or (ka == "ok" and va != vc) or (exact and da != dc):
        return (
            f"backends disagree: python {ka} {va!r:.300} {da!r:.300}, {other_mod.__name__} {kc} {vc!r:.300} {dc!r:.300}"
        )
    return None


def _slots(v) -> object:
    """Every slot of a decoded value, recursively (not only what __eq__ compares)."""
    if isinstance(v, list):
        return [_slots(x) for x in v]
    names = [s for c in type(v).__mro__ for s in getattr(c, "__slots__", ())]
    if not names:
        return v
    return tuple((s, _slots(getattr(v, s, None))) for s in names)


def save(fid: str, backend: str, data: bytes, why: str) -> Path:
    REGRESSIONS.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(data).hexdigest()[:16]
    p = REGRESSIONS / f"{fid}-{backend}-{h}.bin"
    p.write_bytes(data)
    p.with_suffix(".txt").write_text(f"format: {fid}\nbackend: {backend}\nfound by: fuzz/campaign.py\n\n{why}\n")
    return p


def campaign(n: int, construct_share: float, seed: int, formats, backends=None) -> list[tuple]:
    rows = []
    for fid in formats:
        rng = random.Random(f"{seed}/{fid}")
        pool = seeds(fid, rng)
        ref_mod = backend_module(fid, "python")  # the reference every other backend is held to
        for backend in backends or BACKENDS:  # the registry: each backend, each other one against python
            mod = backend_module(fid, backend)
            budget = n if backend != "construct" else max(1, int(n * construct_share))
            crashes, t0 = 0, time.time()
            for k in range(budget):
                r = rng.random()
                if r < 0.1:
                    data = rng.randbytes(rng.randrange(0, 300))
                elif r < 0.15:
                    data = rng.choice(pool)[: rng.randrange(0, 80)] + rng.randbytes(rng.randrange(0, 40))
                else:
                    data = mutate(rng.choice(pool), rng)
                why = one(mod, data, OPTS[k % len(OPTS)])
                if not why and backend != "python":  # every such input is also a differential test
                    why = disagreement(ref_mod, mod, data, OPTS[k % len(OPTS)], exact=backend != "construct")
                if why:
                    crashes += 1
                    if crashes <= 5:
                        print(f"CRASH {fid}/{backend}: {save(fid, backend, data, why)}\n{why}", file=sys.stderr)
            rows.append((fid, backend, budget, crashes, time.time() - t0))
            print(
                f"{fid:26} {backend:9} {budget:>9} inputs  {crashes} crashes  {time.time() - t0:6.1f}s", file=sys.stderr
            )
    return rows


def _payload_seeds() -> list[tuple[str, bytes, dict]]:
    """(message schema, payload, its decode parameters) of every key and value of the real broker's records."""
    import json

    from kfmt.payloads import BINDINGS, _codec

    vectors = json.loads((ROOT / "tests" / "vectors" / "kafka_internal_payloads.json").read_text())["records"]
    out = []
    for r in vectors:
        b = BINDINGS[r["topic"]]
        params = {}
        if r["key"] is not None and b.key is not None:
            key = bytes.fromhex(r["key"])
            out.append((b.key, key, {}))
            if b.param:
                params = {b.param: _codec(b.key, "python").decode(key).record_type}
        out.append((b.value, bytes.fromhex(r["value"]), params))
    return out


def _said(slots):
    """Slots with each kept view's error (``<view>_error``, a message in the backend's own words) as whether
    there is one: what the python and Construct backends must agree on."""
    if isinstance(slots, list):
        return [_said(x) for x in slots]
    if isinstance(slots, tuple) and all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in slots):
        return tuple((k, v is not None) if k.endswith("_error") else (k, _said(v)) for k, v in slots)
    if isinstance(slots, tuple):
        return tuple(_said(x) for x in slots)
    return slots


def _payload_backends() -> tuple[str, ...]:
    """The backends the payload stage compares: python and Construct, and native where it is built (its C
    decoders, which must give the python backend's value or its exact error)."""
    from kfmt.codec.formats import available_backends

    return ("python", "construct") + (("native",) if "native" in available_backends() else ())


def _payload_one(schema: str, data: bytes, params: dict) -> str | None:
    """Decode with every backend's codec: a crash, a disagreement, an encoding that does not decode back to
    the same value, or native bytes that are not python's, described; else None."""
    from kfmt.payloads import _codec

    out, written = [], []
    for backend in _payload_backends():
        codec = _codec(schema, backend)
        try:
            v = codec.decode(data, **params)
        except kfmt.CodecError as e:
            out.append(("error", type(e).__name__, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - what the stage looks for
            return f"{schema}/{backend}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
        try:
            written.append(codec.encode(v, **params))
            again = codec.decode(written[-1], **params)
        except Exception as e:  # noqa: BLE001 - a decoded value must encode
            return f"{schema}/{backend}: decoded, then encoding failed: {type(e).__name__}: {e}"
        if _slots(again) != _slots(v):
            return f"{schema}/{backend}: the encoding of the decoded value decodes to another value"
        out.append(("ok", _slots(v)))
    if out[0][0] != out[1][0] or (
        out[0][0] == "ok" and _said(out[0]) != _said(out[1])
    ):  # Construct's errors are its own
        return f"{schema}: python and construct disagree ({out[0]!r:.60} / {out[1]!r:.60})"
    if len(out) > 2 and out[2] != out[0]:
        return f"{schema}: native and python disagree ({out[2]!r:.200} / {out[0]!r:.200})"
    if len(written) > 2 and written[2] != written[0]:  # python, construct, native: native writes python's bytes
        return f"{schema}: native writes {written[2].hex()[:120]}, python {written[0].hex()[:120]}"
    return None


def payloads(n: int, seed: int) -> tuple:
    """The payload stage: ``n`` mutated keys and values of Kafka's own topics."""
    rng = random.Random(f"{seed}/payloads")
    pool = _payload_seeds()
    crashes, t0 = 0, time.time()
    for _ in range(n):
        schema, data, params = rng.choice(pool)
        data = mutate(data, rng) if rng.random() < 0.95 else rng.randbytes(rng.randrange(0, 64))
        why = _payload_one(schema, data, params)
        if why:
            crashes += 1
            if crashes <= 5:
                print(f"CRASH {schema}: {save(schema, 'payload', data, why)}\n{why}", file=sys.stderr)
    names = ", ".join(_payload_backends())
    print(f"{'kafka payloads':26} {names:9} {n:>9} inputs  {crashes} crashes  {time.time() - t0:6.1f}s",
          file=sys.stderr)  # fmt: skip
    return ("kafka payloads (messages schemas)", names, n, crashes, time.time() - t0)


def _mixed_log(rng: random.Random) -> bytes:
    parts, off = [], 0
    for magic, codec in ((0, "none"), (1, "gzip"), (2, "none"), (2, "lz4"), (1, "none"), (2, "zstd"), (2, "snappy")):
        n = rng.randint(1, 5)
        recs = [kfmt.Record(key=b"k%d" % i, value=rng.randbytes(rng.randint(0, 40)), timestamp=None if not magic else 5,
                            headers=[("h", b"x")] if magic == 2 else []) for i in range(n)]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=off))
        off += n
    return b"".join(parts)


def _damage(log: bytes, rng: random.Random) -> tuple[bytes, int, int]:
    """One kind of damage in [a, b) of the result; returns (damaged log, a, b)."""
    kind = rng.randrange(5)
    a = rng.randrange(len(log))
    if kind == 0:  # a zeroed hole
        b = min(len(log), a + rng.randint(1, 400))
        return log[:a] + bytes(b - a) + log[b:], a, b
    if kind == 1:  # a zero-filled tail (preallocation)
        return log + bytes(rng.randint(1, 5000)), len(log), len(log) + 1
    if kind == 2:  # inserted garbage
        junk = rng.randbytes(rng.randint(1, 300))
        return log[:a] + junk + log[a:], a, a + len(junk)
    pos = 0  # a size field set too large or too small
    starts = []
    while pos + 12 <= len(log):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", log, pos + 8)[0]
    at = rng.choice(starts)
    size = rng.choice([0x7FFF0000, -1, 0, 13, rng.randint(14, 2000)])
    out = bytearray(log)
    struct.pack_into(">i", out, at + 8, size)
    return bytes(out), at, at + 12


def framing(n: int, seed: int) -> tuple:
    """Damaged mixed logs through scan(skip_corrupt=True): nothing raised, and the batches and damaged
    regions it yields tile the input exactly (every byte accounted for once)."""
    from kfmt.log.batches import scan

    rng = random.Random(f"{seed}/framing")
    crashes, t0 = 0, time.time()
    for _ in range(n):
        log = _mixed_log(rng)
        bad, _a, _b = _damage(log, rng)
        try:
            items = list(scan(bad, skip_corrupt=True))
            covered = sum(end - pos for pos, end, _ in items)
            if covered != len(bad) or any(p2 != e1 for (_, e1, _), (p2, _, _) in zip(items, items[1:])):
                raise AssertionError(f"regions do not tile the input: {covered} of {len(bad)} bytes")
        except Exception:  # noqa: BLE001 - with skip_corrupt nothing may be raised, not even a CodecError
            crashes += 1
            print(f"CRASH framing: {save('framing', 'scan', bad, traceback.format_exc())}", file=sys.stderr)
    print(f"{'framing (mixed logs)':26} {'scan':9} {n:>9} inputs  {crashes} crashes  {time.time() - t0:6.1f}s",
          file=sys.stderr)  # fmt: skip
    return ("mixed logs, damaged framing", "scan", n, crashes, time.time() - t0)


def bombs() -> tuple:
    """High-ratio payloads in every codec: refused (or decoded within the limit) without a crash; the row
    carries the largest peak RSS growth of any one of them."""
    from kfmt.runtime.compression import compress

    t0, crashes, count, worst = time.time(), 0, 0, 0.0
    for codec, code in (("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)):
        for size in (1 << 20, 64 << 20, 300 << 20):
            comp = compress(codec, bytes(size), 2)
            for pad in (0, 100_000):
                data = v2_batch(code, comp + bytes(pad))
                count += 1
                base = _reset_peak()
                try:
                    list(kfmt.read_batches(data))
                except kfmt.CodecError:
                    pass
                except Exception:  # noqa: BLE001
                    crashes += 1
                    print(f"CRASH bomb {codec} {size}: {traceback.format_exc()}", file=sys.stderr)
                worst = max(worst, _grown_mb(base))
    return ("bombs (every codec)", "read_batches", count, crashes, time.time() - t0, worst)


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(key))


def _reset_peak() -> int:
    """Reset VmHWM to the current RSS (Linux ``clear_refs``); returns the current RSS in KB. Freed memory
    goes back to the system first (glibc ``malloc_trim``), so a case cannot hide in what another freed."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: growth may then be understated
        pass
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def _grown_mb(base_kb: int) -> float:
    return (_status_kb("VmHWM") - base_kb) / 1024


def v2_batch(code: int, payload: bytes, n: int = 1) -> bytes:
    import crc32c

    body = bytearray(kfmt.encode_batch([kfmt.Record(value=b"x", timestamp=1)]))[:61] + payload
    struct.pack_into(">h", body, 21, code)
    struct.pack_into(">ii", body, 23, n - 1, n)  # last offset delta (the count is read at byte 57)
    struct.pack_into(">i", body, 57, n)
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
    return bytes(body)


def varint(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def gz(raw: bytes) -> bytes:
    """A gzip stream of ``raw`` (Kafka's gzip framing is the plain gzip format)."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    return co.compress(raw) + co.flush()


#: a v2 record of 7 bytes: length 6, attributes 0, timestamp and offset deltas 0, null key and value, no headers
EMPTY_RECORD = bytes([12, 0, 0, 0, 1, 1, 0])


def record_with_headers(k: int) -> bytes:
    """A v2 record holding ``k`` headers, each an empty key and a null value (2 bytes)."""
    body = bytes([0, 0, 0, 1, 1]) + varint(k << 1) + bytes([0, 1]) * k
    return varint(len(body) << 1) + body


def amplification() -> list[tuple]:
    """Small inputs that decode to many tiny objects, each with its peak RSS growth: 9.9M empty records,
    10M headers (100 records of 100,000), 3M messages in one v1 gzip wrapper. Each must be refused with
    LimitExceededError (the max_memory budget) within the budget plus a constant."""
    empty, headers = EMPTY_RECORD, record_with_headers(100_000)
    inner = kfmt.encode_batch([kfmt.Record(key=None, value=None, timestamp=1)], magic=1)
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    comp = b"".join(co.compress(inner) for _ in range(3_000_000)) + co.flush()
    wbody = struct.pack(">bbqii", 1, 1, 1, -1, len(comp)) + comp
    cases = [
        ("9.9M empty records", v2_batch(1, gz(empty * 9_900_000), 9_900_000)),
        ("10M headers", v2_batch(1, gz(headers * 100), 100)),
        ("3M messages, one wrapper", struct.pack(">qiI", 2_999_999, 4 + len(wbody), zlib.crc32(wbody)) + wbody),
    ]
    rows = []
    for name, data in cases:
        t0 = time.time()
        base = _reset_peak()
        try:
            list(kfmt.read_batches(data))
            outcome, crashes = "decoded", 1  # each of these must be refused
        except kfmt.LimitExceededError:
            outcome, crashes = "refused", 0
        except Exception:  # noqa: BLE001
            outcome, crashes = "crash", 1
            print(f"CRASH amplification {name}: {traceback.format_exc()}", file=sys.stderr)
        grown = _grown_mb(base)
        print(f"{'amplification':26} {name:26} {len(data):>9} bytes  {outcome}  +{grown:.0f} MB", file=sys.stderr)
        rows.append((f"amplification: {name} ({len(data):,} B)", "read_batches", 1, crashes, time.time() - t0, grown))
    return rows


def run_atheris(fid: str, runs: int) -> None:
    import atheris

    with atheris.instrument_imports(include=["generated", "kfmt"]):
        mod = importlib.import_module(f"generated.{fid}.python")
    opts = DecodeOptions(verify_crc=False)

    def test_one(data: bytes):
        why = one(mod, data, opts)
        if why:
            save(fid, "codec", data, why)
            raise RuntimeError(why)

    corpus_dir = Path(f"/tmp/kfmt-fuzz-{fid}")
    corpus_dir.mkdir(exist_ok=True)
    for i, s in enumerate(seeds(fid, random.Random(0))):
        (corpus_dir / f"seed{i}").write_bytes(s)
    atheris.Setup([sys.argv[0], f"-runs={runs}", "-max_len=4096", str(corpus_dir)], test_one)
    atheris.Fuzz()


def edge_cases() -> None:
    """Ordinary data that once stopped the sanitized build: empty keys and values decoded into Arrow columns
    (a copy of 0 bytes into a buffer not yet allocated), and a magic-1 gzip wrapper at offset INT64_MAX whose
    one inner message has relative offset -1 (the rebase ``wrapper - last`` overflows int64 part way; the
    answer, MAX - (-1) + (-1), does not). Every backend must give the same answer."""
    import gzip
    import struct
    import zlib

    import kfmt
    from kfmt.codec.formats import available_backends

    data = kfmt.encode_batch([kfmt.Record(key=b"", value=b"", timestamp=1)] * 3)
    assert kfmt.read_arrow(data)["key"].to_pylist() == [b""] * 3

    def v1(offset, attrs, value):
        body = struct.pack(">bbqii", 1, attrs, 1, -1, len(value)) + value
        return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body

    wrapper = v1(2**63 - 1, 1, gzip.compress(v1(-1, 0, b"v")))
    for backend in available_backends():
        got = [(r.offset, r.value) for b in kfmt.read_batches(wrapper, backend=backend) for r in b.records]
        assert got == [(2**63 - 1, b"v")], (backend, got)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=150_000, help="inputs per format for the native and python backends")
    p.add_argument("--backends", default=None, help="comma-separated backends (default: every one built here)")
    p.add_argument("--construct-share", type=float, default=0.1, help="construct backend budget, as a share")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--formats", default=",".join(format_ids()))
    p.add_argument("--atheris", type=int, default=0, metavar="RUNS", help="also run atheris per format for RUNS inputs")
    p.add_argument("--framing", type=int, default=20_000, help="damaged mixed logs for the framing stage")
    p.add_argument("--no-bombs", action="store_true", help="skip the bomb stage (it allocates up to the 256 MiB cap)")
    p.add_argument("--no-amplification", action="store_true",
                   help="skip the amplification cases (tests/test_memory.py holds the same three in the suite)")  # fmt: skip
    p.add_argument("--payloads", type=int, default=20_000, help="mutated keys and values of Kafka's own topics")
    args = p.parse_args(argv)
    atheris_rows = []
    if args.atheris:
        import re
        import subprocess

        for fid in args.formats.split(","):
            t = time.time()
            code = f"import sys; sys.argv=['fuzz']; from fuzz.campaign import run_atheris; run_atheris({fid!r}, {args.atheris})"
            r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
            done = re.findall(r"Done (\d+) runs", r.stderr)
            crashed = int(r.returncode != 0)
            atheris_rows.append((fid, "codec (atheris)", int(done[-1]) if done else 0, crashed, time.time() - t))
            print(f"atheris {fid}: exit {r.returncode}: {(r.stderr.strip().splitlines() or [''])[-1]}", file=sys.stderr)
    t0 = time.time()
    edge_cases()
    chosen = args.backends.split(",") if args.backends else None
    rows = campaign(args.inputs, args.construct_share, args.seed, args.formats.split(","), chosen) + atheris_rows
    base = _reset_peak()
    rows.append(framing(args.framing, args.seed) + (_grown_mb(base),))
    if args.payloads:
        rows.append(payloads(args.payloads, args.seed))
    if not args.no_bombs:
        rows.append(bombs())
        if not args.no_amplification:
            rows += amplification()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(r[2] for r in rows)
    crashes = sum(r[3] for r in rows)
    print(
        f"\n## fuzz campaign: {total:,} inputs in {time.time() - t0:.0f}s, {crashes} crashes, peak RSS {peak_mb:.0f} MB\n"
    )
    print("| format / stage | backend | inputs | crashes | seconds | peak RSS growth |")
    print("|---|---|---|---|---|---|")
    for fid, be, n, c, secs, *grown in rows:
        peak = f"+{grown[0]:.0f} MB" if grown else ""
        print(f"| {fid} | {be} | {n:,} | {c} | {secs:.0f} | {peak} |")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
