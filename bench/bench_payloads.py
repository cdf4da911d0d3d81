"""`make bench`, Kafka's own topics: records/s decoding a `__cluster_metadata` segment and a `__consumer_offsets`
segment, every record's key and value decoded by name (read_batches, then kfmt.payloads.decode_payload with
each backend: native decodes the batches and the payloads in C), beside kafka-python reading the same payloads with its own reader of Kafka's JSON specs
(kafka.protocol.schemas.StructField: the frame or record version read by hand, then the message).

Workload: the distinct records of a real broker's log (tests/vectors/kafka_internal_payloads.json: 14
KRaft records and a snapshot's, 2 offset-topic records: an offset commit and a 1.7 KB group metadata
value with 8 members), repeated into one-record batches, as brokers write them. Median of the rounds,
interleaved, in one process.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import kfmt
from kfmt.payloads import decode_payload

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "kafka"


def segment(topic: str, copies: int) -> tuple[bytes, int]:
    """A segment of one-record batches holding the vectors of ``topic``, ``copies`` times; and its records."""
    vectors = json.loads((ROOT / "tests" / "vectors" / "kafka_internal_payloads.json").read_text())["records"]
    recs = [r for r in vectors if r["topic"] == topic]
    out, off = bytearray(), 0
    for _ in range(copies):
        for r in recs:
            rec = kfmt.Record(key=bytes.fromhex(r["key"]) if r["key"] else None, value=bytes.fromhex(r["value"]),
                              timestamp=1769791662893 + off)  # fmt: skip
            out += kfmt.encode_batch([rec], base_offset=off)
            off += 1
    return bytes(out), off


def _specs(folder: str) -> dict:
    from kafka.protocol.schemas.fields.struct import StructField
    from kafka.protocol.schemas.load_json import _resolve_common_structs

    from generator.frontends.kafka_spec import strip_comments

    out = {}
    for p in sorted((TREE / folder).glob("*.json")):
        d = json.loads(strip_comments(p.read_text()))
        _resolve_common_structs(d["fields"], {s["name"]: s["fields"] for s in d.get("commonStructs", [])})
        _int_tags(d["fields"])
        out[d["name"]] = (d, StructField(d) if d["fields"] else None)
    return out


def _int_tags(fields: list) -> None:
    for f in fields:
        if isinstance(f.get("tag"), str):
            f["tag"] = int(f["tag"])  # kafka-python needs numbers; Kafka writes some as strings
        _int_tags(f.get("fields", []))


def kafka_python_metadata():
    """kafka-python's reading of a KRaft record: the frame's three unsigned varints, then the record."""
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

    by_key = {d["apiKey"]: sf for d, sf in _specs("metadata/src/main/resources/common/metadata").values()}

    def read(key, value):
        buf = io.BytesIO(value)
        UnsignedVarInt32.decode(buf)
        api_key, version = UnsignedVarInt32.decode(buf), UnsignedVarInt32.decode(buf)
        sf = by_key[api_key]
        return sf.decode(buf, version=version, compact=True, tagged=True) if sf else {}

    return read


def kafka_python_offsets():
    """kafka-python's reading of an offset-topic record: the key's int16 record type picks the key and value
    specs (classic versions), each read after its int16 version."""
    specs = _specs("group-coordinator/src/main/resources/common/message")
    by_type = {}
    for name, (d, sf) in specs.items():
        if name.endswith("Key"):
            lo, _, hi = d["validVersions"].partition("-")
            for t in range(int(lo), int(hi or lo) + 1):
                by_type[t] = (sf, specs[name[:-3] + "Value"][1])

    def read(key, value):
        kb, vb = io.BytesIO(key), io.BytesIO(value)
        t = int.from_bytes(kb.read(2), "big", signed=True)
        ksf, vsf = by_type[t]
        k = ksf.decode(kb, version=t)
        v = vsf.decode(vb, version=int.from_bytes(vb.read(2), "big", signed=True))
        return k, v

    return read


def rate(fn, n: int, min_time: float) -> float:
    count, t0 = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return count * n / dt


def peers(topic: str, data: bytes) -> dict:
    from kfmt.codec.formats import available_backends

    def ours(backend, batches=None):
        def run():
            for b in kfmt.read_batches(data, backend=batches or backend):
                for r in b.records:
                    decode_payload(topic, r.key, r.value, backend=backend)

        return run

    def theirs(reader):
        def run():
            for b in kfmt.read_batches(data):
                for r in b.records:
                    reader(r.key, r.value)

        return run

    def frames_only():
        for b in kfmt.read_batches(data):
            for r in b.records:
                r.key, r.value  # noqa: B018

    out = {"kfmt python": ours("python"), "kfmt construct": ours("construct")}
    if "native" in available_backends():
        out["kfmt native"] = ours("native")  # batches and payloads decoded in C
        out["kfmt native (batches), python (payloads)"] = ours("python", "native")
    out["kafka-python (specs)"] = theirs(
        kafka_python_metadata() if topic == "__cluster_metadata" else kafka_python_offsets()
    )
    out["batches only (no payloads)"] = frames_only
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--copies", type=int, default=200, help="copies of the distinct records in each segment")
    args = p.parse_args(argv)
    print(f"# Kafka's own topics: every record's key and value decoded by name; median of {args.rounds} rounds, "
          "records/s\n")  # fmt: skip
    for topic in ("__cluster_metadata", "__consumer_offsets"):
        data, n = segment(topic, args.copies)
        print(f"## a {topic} segment: {n:,} records in one-record batches, {len(data):,} bytes")
        print(f"| {'implementation':42} | {'decode rec/s':>13} |")
        print(f"|{'-' * 44}|{'-' * 15}|")
        runs = peers(topic, data)
        samples: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.rounds):
            for name, fn in runs.items():
                samples[name].append(rate(fn, n, args.min_time))
        for name, xs in samples.items():
            print(f"| {name:42} | {statistics.median(xs):13,.0f} |", flush=True)
        best = next(k for k in ("kfmt native", "kfmt python") if k in samples)
        ours, kp = statistics.median(samples[best]), statistics.median(samples["kafka-python (specs)"])
        print(f"\n{best} vs kafka-python's spec reader (batches read the same way): {ours / kp:.2f}x\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
