"""`make fuzz-jvm`: the JVM engine against the Python engine on damaged logs.

Each input is one partition's only segment: a log mixing v0, v1 and v2 entries in every codec, a log of
transactions (producers, commit and abort markers, one left open), or (every fifth input) a log of one of the
proposals read with option ``format``, then mutated (bit flips, overwrites,
truncations, insertions, tampered length fields) or damaged as a log is (zeroed holes, zero-filled tails,
inserted garbage, size fields too large or too small); inputs come from the seed alone. Each input is read with
a view of its own, drawn from the seed: ``include_control`` or not, offset bounds (``startingOffsets`` /
``endingOffsets`` as a slice carries them) or none, and ``read_committed`` with the transactions the planner
finds in the damaged log, or not. Both
engines read it as the Spark source does, with ``on_corrupt`` fail, skip and quarantine (the slice is the
partition's last, so an entry cut short at its end is a batch being written): the Python engine through
``kfmt.table.slices.read_slice`` (the executors' code), the JVM engine through ``kfmt.jvm.Check`` (its reader
without Spark, one JVM for every input). They must agree word for word: both fail with the same one-line error,
or both give the same rows (a digest over offset, timestamp, key, value and headers, and each quarantine row's
position, raw bytes and error text); once with CRCs
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


def inputs(n: int, seed: int) -> list[tuple[str | None, bytes, dict]]:
    """(format, damaged log, view): mixed v0/v1/v2 logs (format None: detected), every fifth one's offsets and
    timestamps at the edges of their ranges, every fifth a log of transactions, every fifth a proposal's log."""
    rng = random.Random(seed)
    out: list[tuple[str | None, bytes, dict]] = []
    for i in range(n):
        fmt = rng.choice(sorted(PROPOSALS)) if i % 5 == 2 else None
        kind = {4: _edge_log, 1: _txn_log}.get(i % 5, _mixed_log)
        log = proposal_log(fmt, rng) if fmt else kind(rng)
        log = log if i % 10 in (0, 4) else mutate(log, rng) if i % 2 else _damage(log, rng)[0]
        out.append((fmt, log, view(rng)))
    return out


def view(rng: random.Random) -> dict:
    """How an input is read: control records kept or not, offset bounds [first, stop) or none, read_committed."""
    bound = (None, None, 0, 1, 3, 7, 20, TOP)
    return {"include_control": rng.random() < 0.3, "first": rng.choice(bound), "stop": rng.choice(bound),
            "committed": rng.random() < 0.4}  # fmt: skip


def _txn_log(rng: random.Random) -> bytes:
    """v2 batches of three producers, some transactional, commit and abort markers, a transaction left open."""
    import kfmt

    parts, off, open_txn = [], rng.choice((0, 100)), {}
    for _ in range(rng.randint(3, 9)):
        pid = rng.randint(1, 3)
        txn = pid != 3 or rng.random() < 0.2
        if txn and pid in open_txn and rng.random() < 0.4:  # the producer's transaction ends
            kind = rng.choice(("commit", "abort"))
            parts.append(kfmt.encode_batch([kfmt.control_record(kind, timestamp=7)], base_offset=off, producer_id=pid,
                                           producer_epoch=0, is_transactional=True, is_control=True))  # fmt: skip
            del open_txn[pid]
            off += 1
            continue
        n = rng.randint(1, 4)
        recs = [kfmt.Record(key=b"k%d" % i, value=rng.randbytes(rng.randint(0, 20)), timestamp=5) for i in range(n)]
        parts.append(kfmt.encode_batch(recs, codec=rng.choice(("none", "lz4", "gzip")), base_offset=off,
                                       producer_id=pid, producer_epoch=0, base_sequence=0,
                                       is_transactional=txn))  # fmt: skip
        if txn:
            open_txn.setdefault(pid, off)
        off += n
    return b"".join(parts)


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


def python_engine(path: str, size: int, verify_crc: bool, on_corrupt: str = "fail", fmt: str | None = None,
                  seen: dict | None = None, txns=None) -> tuple:  # fmt: skip
    seen = seen or {}
    aborted, open_txns = (None, None) if txns is None else (tuple(txns.aborted), tuple(txns.open.items()))
    part = SegmentSlice(path, "t", 0, 0, size, seen.get("first"), seen.get("stop"), aborted, open_txns, live_end=True)
    try:
        rows = read_slice(part, verify_crc, bool(seen.get("include_control")), on_corrupt, COLUMNS, format=fmt)
        return ("ok", *jvm.row_digest(rows))
    except ValueError as e:
        return ("error", str(e))


def transactions(path: str, fmt: str | None):
    """The log's transactions as the planner finds them for read_committed (None: the planner cannot read them)."""
    from kfmt.log.txn import transactions_of_files

    try:
        return transactions_of_files([path], format=fmt)
    except Exception:  # noqa: BLE001 - damage the planner refuses: the input is read uncommitted instead
        return None


def run(n: int, seed: int, verify_crc: bool, on_corrupt: str = "fail", keep: bool = True) -> tuple[int, int, list[str]]:
    """``n`` inputs of ``seed`` read by both engines: (n, read alike, disagreements)."""
    clean, found = compare(inputs(n, seed), verify_crc, keep=keep, on_corrupt=on_corrupt)
    return n, clean, found


def compare(logs: list, verify_crc: bool, keep: bool = True, on_corrupt: str = "fail") -> tuple[int, list[str]]:
    """Each log (bytes, (format, bytes) or (format, bytes, view)) read by both engines: the JVM engine in one run,
    a plan per format and include_control (without CRCs 100 bytes at a time, so that its window moves at every
    entry), the Python engine one by one.
    Returns how many both read alike, and the disagreements, each kept under FINDINGS (a proposal's as
    ``<hash>.<format>.log``)."""
    return compare_ways(logs, [(verify_crc, on_corrupt)], keep)[0]


def compare_ways(logs: list, ways: list[tuple[bool, str]], keep: bool = True) -> list[tuple[int, list[str]]]:
    """:func:`compare` for each ``(verify_crc, on_corrupt)`` of ``ways``, the JVM engine reading them all in one
    run (one JVM start): a ``(read alike, disagreements)`` per way."""
    by_plan: dict[tuple, list] = {}  # one plan per format and include_control (a plan's options)
    for x in logs:
        fmt, data, seen = _item(x)
        by_plan.setdefault((fmt, bool(seen.get("include_control"))), []).append((data, seen))
    with tempfile.TemporaryDirectory() as tmp:
        read, plans = [], []
        for verify_crc, on_corrupt in ways:
            for (fmt, control), group in by_plan.items():
                groups, txns = [], []
                for data, seen in group:
                    p = Path(tmp) / f"t-{len(read)}" / "00000000000000000000.log"
                    p.parent.mkdir()
                    p.write_bytes(data)
                    t = transactions(str(p), fmt) if seen.get("committed") else None
                    read.append((verify_crc, on_corrupt, fmt, str(p), len(data), seen, t))
                    if t is not None:
                        txns.append(
                            {"aborted": [list(a) for a in t.aborted], "open": [list(o) for o in t.open.items()]}
                        )
                    groups.append([{"path": str(p), "topic": "t", "partition": 0, "start": 0, "end": len(data),
                                    "first": seen.get("first"), "stop": seen.get("stop"), "live_end": True,
                                    "txn": None if t is None else len(txns) - 1}])  # fmt: skip
                plans.append(json.dumps({"limits": jvm.limits(verify_crc), "include_control": control, "format": fmt,
                                         "null_empty_headers": False, "groups": groups, "on_corrupt": on_corrupt,
                                         "txns": txns, "chunk_bytes": (8 << 20) if verify_crc else 100}))  # fmt: skip
        out = {way: (0, []) for way in ways}
        for (verify_crc, on_corrupt, fmt, path, size, seen, t), theirs in zip(read, jvm.check(*plans)):
            clean, found = out[verify_crc, on_corrupt]
            ours = python_engine(path, size, verify_crc, on_corrupt, fmt, seen, t)
            if ours == theirs:  # the same rows, or the same one-line error, word for word
                out[verify_crc, on_corrupt] = (clean + (ours[0] == "ok"), found)
                continue
            found.append(_keep(Path(path).read_bytes(), fmt, seen, keep) + f" ({on_corrupt}, {seen}): python "
                         f"{ours[:2]} vs jvm {theirs[:2]}")  # fmt: skip
    return [out[way] for way in ways]


def _item(x) -> tuple:
    """(format, log, view) of an input given as bytes, (format, bytes) or (format, bytes, view)."""
    if not isinstance(x, tuple):
        return None, x, {}
    return (*x, {}) if len(x) == 2 else x


def _keep(data: bytes, fmt: str | None, seen: dict, keep: bool) -> str:
    """A disagreement's log kept under FINDINGS (``<hash>[.<format>].log``, its view beside it as ``.json``)."""
    import hashlib

    name = f"{hashlib.sha256(data + json.dumps(seen, sort_keys=True).encode()).hexdigest()[:16]}"
    name += f"{'.' + fmt if fmt else ''}.log"
    if keep:
        FINDINGS.mkdir(parents=True, exist_ok=True)
        (FINDINGS / name).write_bytes(data)
        if seen:
            (FINDINGS / name).with_suffix(".json").write_text(json.dumps(seen, sort_keys=True))
    return name


def findings() -> list[tuple[str | None, bytes, dict]]:
    """The logs kept under FINDINGS, with their format (named in the file's name; none: detected) and view."""
    out = []
    for p in sorted(FINDINGS.glob("*.log")):
        parts = p.name.split(".")
        seen = json.loads(p.with_suffix(".json").read_text()) if p.with_suffix(".json").is_file() else {}
        out.append((parts[1] if len(parts) == 3 else None, p.read_bytes(), seen))
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
