"""`make fuzz-jvm`: the JVM engine against the Python engine on damaged logs.

Each input is one partition's only segment: a log mixing v0, v1 and v2 entries in every codec, or (every fifth
input) a log of one of the proposals read with option ``format``, then mutated (bit flips, overwrites,
truncations, insertions, tampered length fields) or damaged as a log is (zeroed holes, zero-filled tails,
inserted garbage, size fields too large or too small); inputs come from the seed alone. Both
engines read it as the Spark source does, with ``on_corrupt`` fail, skip and quarantine (the slice is the
partition's last, so an entry cut short at its end is a batch being written): the Python engine through
``kfmt.table.slices.read_slice`` (the executors' code), the JVM engine through ``kfmt.jvm.Check`` (its reader
without Spark, one JVM for every input). They must agree: both fail, or both give the same rows (a digest over
offset, timestamp, key, value and headers, and each quarantine row's position and raw bytes); once with CRCs
checked and once without, so that the mutations reach the decoders' structural checks. The default, 17,000
inputs, reads 102,000 logs. A disagreement is saved under tests/vectors/regressions/jvm/ and the run exits 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.campaign import _damage, _mixed_log, mutate  # noqa: E402
from kfmt.spark import jvm  # noqa: E402
from kfmt.table.slices import SegmentSlice, read_slice  # noqa: E402

FINDINGS = ROOT / "tests" / "vectors" / "regressions" / "jvm"
COLUMNS = ("offset", "timestamp_ms", "key", "value", "headers", "position", "error", "raw")
MODES = ("fail", "skip", "quarantine")


# what each proposal carries: the codecs it has, and its records' headers (KIP-82: int32 keys; KIP-98: none)
PROPOSALS = {
    "v2_no_record_attributes": (("none", "gzip", "zstd", "lz4"), [("h", b"x"), ("h", None)]),
    "v3_no_record_attributes": (("none", "gzip", "zstd", "snappy"), [("h", b"x"), ("h", None)]),
    "kip82_header_wrapper": (("none",), [(7, b"x"), (-3, None)]),
    "kip98_draft": (("none", "gzip", "zstd", "lz4"), []),
    "enriched_metadata_draft": (("none", "gzip", "lz4", "snappy"), [("app", b"x"), ("\u00e9t\u00e9", None)]),
}


def inputs(n: int, seed: int) -> list[tuple[str | None, bytes]]:
    """(format, damaged log): mixed v0/v1/v2 logs (format None: detected), every fifth one's offsets and
    timestamps at the edges of their ranges, every fifth one a proposal's log."""
    rng = random.Random(seed)
    out: list[tuple[str | None, bytes]] = []
    for i in range(n):
        fmt = rng.choice(sorted(PROPOSALS)) if i % 5 == 2 else None
        log = _edge_log(rng) if i % 5 == 4 else proposal_log(fmt, rng) if fmt else _mixed_log(rng)
        out.append((fmt, log if i % 10 in (0, 4) else mutate(log, rng) if i % 2 else _damage(log, rng)[0]))
    return out


def proposal_log(fid: str, rng: random.Random) -> bytes:
    """A clean log of a proposal: an entry per codec it has, null keys and values, its kind of headers."""
    import kfmt

    codecs, headers = PROPOSALS[fid]
    parts, off = [], rng.choice((0, 1000, TOP - 60))
    for codec in codecs:
        k = rng.randint(1, 4)
        recs = [kfmt.Record(key=None if rng.random() < 0.2 else b"k%d" % i, timestamp=rng.choice((5, -1, 1 << 40)),
                            value=None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 30)),
                            headers=headers[: rng.randint(0, len(headers))]) for i in range(k)]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=off))
        off += k
    return b"".join(parts)


TOP = (1 << 63) - 1
# what Kafka's writers accept (-1: none, else >= 0; mutations reach the rest), around the largest millisecond
# count Spark's microsecond timestamps hold
EDGE_TIMESTAMPS = (-1, 0, 1, TOP, 9_223_372_036_854_775, 9_223_372_036_854_776)


def _edge_log(rng: random.Random) -> bytes:
    """v0, v1 and v2 entries whose offsets end at 2^63-1 (or cross 2^31), with timestamps at the edges of int64
    and of what Spark's microsecond timestamps hold: where an engine's bounds or conversions are off by one."""
    import kfmt

    parts, last = [], rng.choice((TOP, (1 << 31) + 2, TOP - 40))
    specs = [(magic, codec) for magic, codec in ((0, "none"), (1, "none"), (1, "gzip"), (2, "none"), (2, "lz4"))]
    rng.shuffle(specs)
    counts = [rng.randint(1, 4) for _ in specs]
    off = last - sum(counts) + 1
    for (magic, codec), n in zip(specs, counts):
        stamps = [rng.choice(EDGE_TIMESTAMPS) for _ in range(n)]
        if magic == 2:  # v2 stores deltas from the first timestamp: keep them within a varint's int64
            stamps = [stamps[0]] * n
        recs = [kfmt.Record(key=b"k", value=rng.randbytes(rng.randint(0, 20)), timestamp=None if not magic else t,
                            headers=[("h", b"x")] if magic == 2 else []) for t in stamps]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=off))
        off += n
    return b"".join(parts)


def python_engine(path: str, size: int, verify_crc: bool, on_corrupt: str = "fail", fmt: str | None = None) -> tuple:
    part = SegmentSlice(path, "t", 0, 0, size, live_end=True)
    try:
        rows = read_slice(part, verify_crc, on_corrupt=on_corrupt, columns=COLUMNS, format=fmt)
        return ("ok", *jvm.row_digest(rows))
    except ValueError as e:
        return ("error", str(e))


def run(n: int, seed: int, verify_crc: bool, on_corrupt: str = "fail", keep: bool = True) -> tuple[int, int, list[str]]:
    """``n`` inputs of ``seed`` read by both engines: (n, read alike, disagreements)."""
    clean, found = compare(inputs(n, seed), verify_crc, keep=keep, on_corrupt=on_corrupt)
    return n, clean, found


def compare(logs: list, verify_crc: bool, keep: bool = True, on_corrupt: str = "fail") -> tuple[int, list[str]]:
    """Each log (bytes, or (format, bytes)) read by both engines: the JVM engine in one run, a plan per format
    (without CRCs 100 bytes at a time, so that its window moves at every entry), the Python engine one by one.
    Returns how many both read alike, and the disagreements, each kept under FINDINGS (a proposal's as
    ``<hash>.<format>.log``)."""
    import hashlib

    by_format: dict[str | None, list[bytes]] = {}
    for x in logs:
        fmt, data = x if isinstance(x, tuple) else (None, x)
        by_format.setdefault(fmt, []).append(data)
    found, clean = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        read, plans = [], []
        for fmt, group in by_format.items():
            groups = []
            for data in group:
                p = Path(tmp) / f"t-{len(read)}" / "00000000000000000000.log"
                p.parent.mkdir()
                p.write_bytes(data)
                read.append((fmt, str(p), len(data)))
                groups.append([{"path": str(p), "topic": "t", "partition": 0, "start": 0, "end": len(data),
                                "first": None, "stop": None, "live_end": True, "txn": None}])  # fmt: skip
            plans.append(json.dumps({"limits": jvm.limits(verify_crc), "include_control": False, "format": fmt,
                                     "null_empty_headers": False, "groups": groups, "on_corrupt": on_corrupt,
                                     "chunk_bytes": (8 << 20) if verify_crc else 100}))  # fmt: skip
        for (fmt, path, size), theirs in zip(read, jvm.check(*plans)):
            ours = python_engine(path, size, verify_crc, on_corrupt, fmt)
            if (ours == theirs) if ours[0] == "ok" else theirs[0] == "error":
                clean += ours[0] == "ok"
                continue
            data = Path(path).read_bytes()
            name = f"{hashlib.sha256(data).hexdigest()[:16]}{'.' + fmt if fmt else ''}.log"
            if keep:
                FINDINGS.mkdir(parents=True, exist_ok=True)
                (FINDINGS / name).write_bytes(data)
            found.append(f"{name} ({on_corrupt}): python {ours[:2]} vs jvm {theirs[:2]}")
    return clean, found


def findings() -> list[tuple[str | None, bytes]]:
    """The logs kept under FINDINGS, with their format (named in the file's name; none: detected)."""
    out = []
    for p in sorted(FINDINGS.glob("*.log")):
        parts = p.name.split(".")
        out.append((parts[1] if len(parts) == 3 else None, p.read_bytes()))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=17000, help="logs per option set (3 on_corrupt modes x CRCs on/off)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args(argv)
    import logging

    logging.getLogger("kfmt").setLevel(logging.ERROR)  # batches being written are logged: expected here
    if jvm.jar() is None:
        print("the JVM engine is not built here (make setup with a JDK)", file=sys.stderr)
        return 2
    t = time.perf_counter()
    bad = 0
    for on_corrupt in MODES:
        for verify_crc in (True, False):  # without CRCs the mutations reach the decoders' structural checks
            n, clean, found = run(args.inputs, args.seed, verify_crc, on_corrupt)
            print(f"jvm vs python engine, on_corrupt={on_corrupt}, verify_crc={verify_crc}: {n} logs (seed {args.seed}): "
                  f"{clean} read alike, {n - clean - len(found)} refused by both, {len(found)} disagreement(s), "
                  f"{time.perf_counter() - t:.1f} s")  # fmt: skip
            for f in found[:20]:
                print("  " + f)
            bad += len(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
