"""`kfmt synth`: a realistic Kafka log directory, deterministic by seed, written with kfmt's own encoders.

Several topics and partitions; skewed (Zipf-like) keys; JSON-like values of varied size; headers; several
idempotent producers, some transactional with COMMIT and ABORT markers; every codec; segments rolled by
size with ``.index`` / ``.timeindex`` beside them as Kafka writes them (an entry about every 4 KiB);
optionally a legacy topic holding magic 0 and magic 1 segments.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import kfmt
from kfmt.log.txn import txn_index_entry
from kfmt.logdir.indexes import segment_files
from kfmt.tools.args import positive_int, topic_names

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo")


@dataclass
class SynthConfig:
    seed: int = 42
    topics: tuple[str, ...] = ("orders", "clicks", "payments")
    partitions: int = 2
    records: int = 3000  # per partition
    segment_bytes: int = 256 * 1024
    legacy: bool = True
    t0: int = 1_700_000_000_000


class _Segments:
    """Rolls segments by size; each closed segment gets the .index / .timeindex its broker's recovery writes
    (kfmt.logdir.indexes.segment_files) and, when some of its transactions were aborted, a .txnindex."""

    def __init__(self, folder: Path, segment_bytes: int):
        self.folder, self.segment_bytes = folder, segment_bytes
        self.base: int | None = None
        self.buf = bytearray()
        self.txn_index = bytearray()
        self.files: list[Path] = []

    def append(self, data: bytes, base_offset: int, last_offset: int, max_ts: int):
        if self.base is not None and len(self.buf) + len(data) > self.segment_bytes:
            self.flush()
        if self.base is None:
            self.base = base_offset
        self.buf += data

    def aborted(self, producer_id: int, first_offset: int, marker_offset: int):
        """An ABORT marker was appended: the broker records the aborted range in the segment's .txnindex
        (with the last stable offset, here the marker's next offset: no other transaction is open)."""
        self.txn_index += txn_index_entry(producer_id, first_offset, marker_offset, marker_offset + 1)

    def flush(self):
        if self.base is None:
            return
        stem = self.folder / f"{self.base:020d}"
        for path, blob in segment_files(stem.with_suffix(".log"), self.buf, self.base):
            path.write_bytes(blob)
        if self.txn_index:
            stem.with_suffix(".txnindex").write_bytes(bytes(self.txn_index))
        self.files.append(stem.with_suffix(".log"))
        self.base, self.buf, self.txn_index = None, bytearray(), bytearray()


def _zipf_key(rng: random.Random, n: int = 500) -> bytes:
    # P(rank k) ~ 1/k: a few hot keys, a long tail
    return b"user-%d" % int(n ** rng.random())


def _value(rng: random.Random, i: int) -> bytes:
    doc = {"id": i, "event": rng.choice(WORDS), "amount": round(rng.expovariate(1 / 40), 2),
           "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 6))]}  # fmt: skip
    if rng.random() < 0.3:
        doc["note"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 200)))
    return json.dumps(doc, separators=(",", ":")).encode()


def _headers(rng: random.Random) -> list:
    h: list[tuple[str, bytes | None]] = []
    if rng.random() < 0.7:
        h.append(("trace-id", b"%016x" % rng.getrandbits(64)))
    if rng.random() < 0.4:
        h.append(("source", rng.choice([b"web", b"mobile", b"batch"])))
    if rng.random() < 0.1:
        h.append(("flag", None))
    return h


def write_partition(folder: Path, rng: random.Random, cfg: SynthConfig, partition_seed: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    seg = _Segments(folder, cfg.segment_bytes)
    producers = [dict(pid=1000 + partition_seed * 10 + k, epoch=rng.randint(0, 3), seq=0, txn=(k == 2))
                 for k in range(3)]  # fmt: skip
    offset, ts, written, batches, markers = 0, cfg.t0 + partition_seed * 1000, 0, 0, 0
    open_txn: dict | None = None
    txn_first = 0
    while written < cfg.records:
        p = rng.choice(producers)
        n = min(
            cfg.records - written, max(1, int(rng.paretovariate(1.2))) if rng.random() < 0.8 else rng.randint(20, 120)
        )
        codec = CODECS[batches % len(CODECS)]
        recs: list = []
        for _ in range(n):
            ts += rng.randint(0, 40)
            recs.append(kfmt.Record(key=_zipf_key(rng) if rng.random() < 0.9 else None, value=_value(rng, offset + len(recs)),
                                    headers=_headers(rng), timestamp=ts))  # fmt: skip
        data = kfmt.encode_batch(recs, codec=codec, base_offset=offset, producer_id=p["pid"], producer_epoch=p["epoch"],
                                 base_sequence=p["seq"], is_transactional=p["txn"],
                                 partition_leader_epoch=rng.randint(0, 2))  # fmt: skip
        seg.append(data, offset, offset + n - 1, ts)
        p["seq"] = (p["seq"] + n) % (2**31)
        offset += n
        written += n
        batches += 1
        if p["txn"]:
            if open_txn is None:
                txn_first = offset - n
            open_txn = p
        if open_txn and rng.random() < 0.3:
            kind = "abort" if rng.random() < 0.25 else "commit"
            ts += 1
            marker = kfmt.encode_batch([kfmt.control_record(kind, coordinator_epoch=rng.randint(0, 5), timestamp=ts)],
                                       base_offset=offset, producer_id=open_txn["pid"],
                                       producer_epoch=open_txn["epoch"], is_transactional=True, is_control=True)  # fmt: skip
            seg.append(marker, offset, offset, ts)
            if kind == "abort":
                seg.aborted(open_txn["pid"], txn_first, offset)
            offset += 1
            markers += 1
            open_txn = None
    seg.flush()
    return {
        "records": written,
        "batches": batches,
        "markers": markers,
        "segments": len(seg.files),
        "next_offset": offset,
    }


def write_legacy(folder: Path, rng: random.Random, cfg: SynthConfig) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    seg = _Segments(folder, cfg.segment_bytes // 4)
    offset, ts, n_total = 0, cfg.t0, 0
    for magic in (0, 1):
        for k in range(20):
            n = rng.randint(1, 30)
            codec = ("none", "gzip", "snappy", "lz4")[k % 4]
            recs = [
                kfmt.Record(key=_zipf_key(rng), value=_value(rng, offset + i), timestamp=ts + i if magic else None)
                for i in range(n)
            ]  # fmt: skip  (v0: none)
            data = kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=offset)
            seg.append(data, offset, offset + n - 1, ts + n if magic else -1)
            offset += n
            ts += n
            n_total += n
        seg.flush()  # one segment per magic, as after a message.format.version upgrade
    return {"records": n_total, "segments": len(seg.files)}


def synth(out_dir, cfg: SynthConfig | None = None, *, overwrite: bool = False) -> dict:
    """Write the corpus under ``out_dir`` (published whole, with a completion marker, when it is complete;
    an existing non-empty ``out_dir`` is refused unless ``overwrite``); returns a summary per topic-partition."""
    from kfmt.storage.publish import Staging

    cfg = cfg or SynthConfig()
    summary = {}
    with Staging(Path(out_dir), overwrite=overwrite) as st:
        out = st.root
        for t_i, topic in enumerate(cfg.topics):
            for part in range(cfg.partitions):
                rng = random.Random(f"{cfg.seed}/{topic}/{part}")
                summary[f"{topic}-{part}"] = write_partition(out / f"{topic}-{part}", rng, cfg, t_i * 10 + part)
        if cfg.legacy:
            summary["legacy-0"] = write_legacy(out / "legacy-0", random.Random(f"{cfg.seed}/legacy"), cfg)
        st.publish({"tool": "kfmt synth", "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
                    "partitions": summary})  # fmt: skip
    return summary


def run(args) -> int:
    cfg = SynthConfig(seed=args.seed, topics=tuple(args.topics), partitions=args.partitions,
                      records=args.records, segment_bytes=args.segment_bytes, legacy=not args.no_legacy)  # fmt: skip
    try:
        summary = synth(args.out, cfg, overwrite=args.overwrite)
    except FileExistsError as e:
        print(f"kfmt synth: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"kfmt synth: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    total = sum(v["records"] for v in summary.values())
    print(f"wrote {total} records in {sum(v['segments'] for v in summary.values())} segments under {args.out}")
    for tp, v in summary.items():
        print(f"  {tp}: {v}")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("synth", help="write a realistic, deterministic Kafka log directory (a corpus)")
    s.add_argument("out", metavar="OUTDIR")
    s.add_argument("--seed", type=int, default=42)
    s.add_argument("--topics", type=topic_names, default="orders,clicks,payments", help="comma-separated topic names")
    s.add_argument("--partitions", type=positive_int, default=2, help="partitions per topic")
    s.add_argument("--records", type=positive_int, default=3000, help="records per partition")
    s.add_argument("--segment-bytes", type=positive_int, default=256 * 1024, help="roll segments at this size")
    s.add_argument("--overwrite", action="store_true", help="replace OUTDIR if it exists (default: refuse)")
    s.add_argument("--no-legacy", action="store_true", help="no legacy-0 topic with magic 0/1 segments")
    s.set_defaults(func=run)
