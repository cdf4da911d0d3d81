"""`make fuzz`: a fuzz campaign over every format and both backends.

Inputs are mutated valid entries (bit flips, byte overwrites, truncations, insertions, tampered
length fields, recompressed garbage) and random bytes. Every decoder must either decode or raise
`kfmt.CodecError`; anything else is a crash, saved under tests/vectors/regressions/ so the suite
replays it. With --atheris each format is also fuzzed coverage-guided by atheris (libFuzzer).
The campaign ends with a table: inputs per format and backend, crashes, peak memory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import random
import resource
import struct
import sys
import time
import traceback
from pathlib import Path

import kfmt
from kfmt.api import format_ids, get_format
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
            b = bytearray(os.urandom(rng.randrange(1, 64)))
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif op == 2:
            del b[i:]
        elif op == 3:
            b[i:i] = os.urandom(rng.randrange(1, 9))
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


def save(fid: str, backend: str, data: bytes, why: str) -> Path:
    REGRESSIONS.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(data).hexdigest()[:16]
    p = REGRESSIONS / f"{fid}-{backend}-{h}.bin"
    p.write_bytes(data)
    p.with_suffix(".txt").write_text(f"format: {fid}\nbackend: {backend}\nfound by: fuzz/campaign.py\n\n{why}\n")
    return p


def campaign(n: int, construct_share: float, seed: int, formats) -> list[tuple]:
    rows = []
    for fid in formats:
        rng = random.Random(f"{seed}/{fid}")
        pool = seeds(fid, rng)
        for backend in ("codec", "construct"):
            mod = importlib.import_module(f"generated.{fid}.{backend}")
            budget = n if backend == "codec" else max(1, int(n * construct_share))
            crashes, t0 = 0, time.time()
            for k in range(budget):
                r = rng.random()
                if r < 0.1:
                    data = os.urandom(rng.randrange(0, 300))
                elif r < 0.15:
                    data = rng.choice(pool)[: rng.randrange(0, 80)] + os.urandom(rng.randrange(0, 40))
                else:
                    data = mutate(rng.choice(pool), rng)
                why = one(mod, data, OPTS[k % len(OPTS)])
                if why:
                    crashes += 1
                    if crashes <= 5:
                        print(f"CRASH {fid}/{backend}: {save(fid, backend, data, why)}\n{why}", file=sys.stderr)
            rows.append((fid, backend, budget, crashes, time.time() - t0))
            print(
                f"{fid:26} {backend:9} {budget:>9} inputs  {crashes} crashes  {time.time() - t0:6.1f}s", file=sys.stderr
            )
    return rows


def run_atheris(fid: str, runs: int) -> None:
    import atheris

    with atheris.instrument_imports(include=["generated", "kfmt"]):
        mod = importlib.import_module(f"generated.{fid}.codec")
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=150_000, help="inputs per format for the codec backend")
    p.add_argument("--construct-share", type=float, default=0.1, help="construct backend budget, as a share")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--formats", default=",".join(format_ids()))
    p.add_argument("--atheris", type=int, default=0, metavar="RUNS", help="also run atheris per format for RUNS inputs")
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
    rows = campaign(args.inputs, args.construct_share, args.seed, args.formats.split(",")) + atheris_rows
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(r[2] for r in rows)
    crashes = sum(r[3] for r in rows)
    print(
        f"\n## fuzz campaign: {total:,} inputs in {time.time() - t0:.0f}s, {crashes} crashes, peak RSS {peak_mb:.0f} MB\n"
    )
    print("| format | backend | inputs | crashes | seconds |")
    print("|---|---|---|---|---|")
    for fid, be, n, c, s in rows:
        print(f"| {fid} | {be} | {n:,} | {c} | {s:.0f} |")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
