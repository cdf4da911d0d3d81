"""`make demo`: the main job. Synthesize a corpus (unless one is given), compare every format on it with
Spark, measure the workload overhead table, and write a report with tables and plots under out/."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def run_codec_demo() -> None:
    """A v2 batch encoded, then decoded field by field."""
    import kfmt
    from kfmt.codec.formats import get_format

    v2 = get_format("kafka_v2")
    data = kfmt.encode_batch(
        [
            kfmt.Record(
                key=b"user-1",
                value=b'{"clicks": 3}',
                headers=[("trace", b"ab12"), ("trace", None)],
                timestamp=1700000000000,
            ),  # fmt: skip
            kfmt.Record(key=None, value=b"null key", timestamp=1700000000123),
        ],
        producer_id=4000,
        producer_epoch=2,
        base_sequence=0,
    )
    print(f"v2 batch, {len(data)} bytes:")
    from kfmt.tools.explain import hexdump

    hexdump(v2, data)
    (batch,) = kfmt.read_batches(data)
    print("batch (schemas/kafka_v2.yaml, struct 'batch'):")
    for name in v2.Batch._fields:
        if name != "records":
            print(f"  {name:24} {getattr(batch, name)!r}")
    print(f"  {'last_offset':24} {batch.last_offset!r}")
    for r in batch.records:
        print(
            f"  record @ offset {r.offset}: key={r.key!r} value={r.value!r} headers={r.headers} timestamp={r.timestamp}"
        )


def run(args) -> int:
    from kfmt.spark.jobs import DEFAULT_FORMATS, compare, render_compare, session
    from kfmt.tools import diff
    from kfmt.tools.synth import SynthConfig, synth

    if args.codec_only:
        run_codec_demo()
        return 0
    t0 = time.time()
    corpus = str(args.corpus) if args.corpus else None
    if corpus:
        from kfmt.logdir.layout import find_segments

        if not (Path(corpus).is_dir() or corpus.endswith(".log")) or not find_segments(corpus):
            print(f"kfmt demo: no Kafka log segments (*.log) under {corpus}", file=sys.stderr)
            return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not corpus:
        corpus = str(out / "corpus")
        if not Path(corpus).exists():
            print(f"synthesizing a corpus under {corpus} ...", file=sys.stderr)
            synth(corpus, SynthConfig(records=args.records))
    formats = list(DEFAULT_FORMATS)
    print("1/3 workload overhead by encoding ...", file=sys.stderr)
    rows = diff.workload_rows(formats, batch_sizes=[1, 3, 10, 50, 100], key_size=10, value_size=100)
    seed_rows = diff.workload_rows(["kafka_v1", "kip98_draft", "kafka_v2"], batch_sizes=[1, 3, 10, 50, 100],
                                   key_size=100, value_size=1000)  # fmt: skip
    plots = diff.plot(rows, formats, str(out / "overhead_by_batch_size"))
    print(f"2/3 Spark comparison over {corpus} ({args.master}) ...", file=sys.stderr)
    spark = session(args.master, "kfmt-demo")
    try:
        t1 = time.time()
        res = compare(spark, corpus, formats, ["none", "lz4"], fields=["kafka_v2"])  # the fields it reports
        spark_s = time.time() - t1
    finally:
        spark.stop()
    print("3/3 report ...", file=sys.stderr)
    n_rows = res["kafka_v2"]["none"]["records"]  # every data record, as the comparison job read them
    disk = _on_disk(corpus, res)
    bar = _bar_plot(res, str(out / "bytes_per_record_by_format"))
    report = out / "report.md"
    headerless = ", ".join(f for f in res if not _carries_headers(f))
    lines = [
        "# kfmt report: Kafka wire formats compared by encoding",
        "",
        *conclusion(res, disk),
        "",
        f"Corpus: `{corpus}` ({n_rows} records read through the `kafka-log` Spark data source); "
        f"Spark master `{args.master}`; comparison job {spark_s:.1f}s.",
        "",
        "## Bytes per record on the corpus (each source batch re-encoded in every format)",
        "",
        f"Formats without record headers ({headerless}) carry the records without them, so",
        "their figures exclude header bytes; overhead/record is bytes minus key and value bytes (negative when",
        "compression saves more than the framing costs). The first row is the corpus as it is on disk (its",
        "segments as written: every codec, control records, legacy segments).",
        "",
        render_compare(res, markdown=True, on_disk=disk),
        "",
        "![bytes per record](bytes_per_record_by_format.png)",
        "",
        "## Overhead by batch size (key 10 B, value 100 B, no headers), by encoding",
        "",
        diff.render_workload(rows, formats, markdown=True),
        "",
        "![overhead](overhead_by_batch_size.png)",
        "",
        "## The KIP-98 draft's Space Comparison, reproduced from the schemas (1 KB values, 100-byte keys)",
        "",
        diff.render_workload(seed_rows, ["kafka_v1", "kip98_draft", "kafka_v2"], markdown=True),
        "",
        "## Bytes by schema field, uncompressed (kafka_v2)",
        "",
        diff.table(["field", "bytes"], sorted(res["kafka_v2"]["none"]["fields"].items(), key=lambda kv: -kv[1]), True),
        "",
    ]
    report.write_text("\n".join(lines))
    print(render_compare(res, markdown=True))
    print(f"\nwrote {report}, {', '.join(plots + bar)} in {time.time() - t0:.1f}s")
    return 0


def _carries_headers(format_id: str) -> bool:
    from kfmt.codec.formats import get_format

    return "headers" in get_format(format_id).CARRIES


def _on_disk(corpus: str, res: dict) -> dict:
    """The corpus as it is on disk: its segments' bytes, over the data records the comparison read, against the
    same key and value bytes."""
    from kfmt.logdir.layout import find_segments

    v2 = res["kafka_v2"]["none"]
    return {"bytes": sum(s.size for s in find_segments(corpus)), "records": v2["records"], "payload": v2["payload"]}


def conclusion(res: dict, disk: dict) -> list[str]:
    """What the figures say, in sentences: v2 against the older formats, the smallest proposal, compression."""
    from kfmt.log.measure import overhead_per_record

    v2 = res["kafka_v2"]["none"]
    per = {f: o for f, p in res.items() if (o := overhead_per_record(p.get("none", {"records": 0}))) is not None}
    out = [f"On this corpus ({v2['records']:,} records, {v2['payload'] / v2['records']:.1f} bytes of key and value "
           f"each), Kafka's v2 record batch spends {per['kafka_v2']:.1f} bytes per record on framing beyond the key "
           f"and value, uncompressed."]  # fmt: skip
    for f in ("kafka_v1", "kafka_v0"):
        if f in per:
            d = per["kafka_v2"] - per[f]
            out.append(f"{f} spends {per[f]:.1f} ({abs(d):.1f} bytes per record {'less' if d > 0 else 'more'}, but it "
                       "carries no headers, no producer state and no transactions).")  # fmt: skip
    proposals = sorted((p, f) for f, p in per.items() if not f.startswith("kafka_"))
    if proposals:
        p, f = proposals[0]
        what = "" if _carries_headers(f) else " (it cannot carry headers: the corpus's headers are left out)"
        out.append(f"Of the proposals, {f} spends the least: {p:.1f} bytes per record, {abs(p - per['kafka_v2']):.1f} "
                   f"{'less' if p < per['kafka_v2'] else 'more'} than v2{what}.")  # fmt: skip
    lz4 = res["kafka_v2"].get("lz4", {})
    if lz4.get("records"):
        out.append(f"lz4 takes v2 from {v2['bytes_per_record']:.1f} to {lz4['bytes_per_record']:.1f} bytes per record "
                   f"({100 * (1 - lz4['bytes'] / v2['bytes']):.0f}% smaller).")  # fmt: skip
    out.append(f"As written on disk (every codec, control records, legacy segments) the corpus takes "
               f"{disk['bytes'] / disk['records']:.1f} bytes per record.")  # fmt: skip
    return [" ".join(out)]


def _bar_plot(res: dict, stem: str) -> list[str]:
    """Overhead per record beyond key and value, per format and codec: the bytes the formats differ by (bytes per
    record would bury a few bytes of difference under a few hundred of payload). Formats that cannot carry
    headers are hatched and marked."""
    from kfmt.log.measure import overhead_per_record
    from kfmt.tools.plotting import pyplot, save_figure

    plt = pyplot()
    fmts = list(res)
    codecs = list(next(iter(res.values())))
    fig, ax = plt.subplots(figsize=(9, 4.6))
    w = 0.8 / len(codecs)
    from matplotlib.patches import Patch

    handles = []
    for j, c in enumerate(codecs):
        got = [overhead_per_record(res[f][c]) for f in fmts]
        vals = [v or 0 for v in got]
        bars = ax.bar([i + j * w for i in range(len(fmts))], vals, width=w)
        handles.append(Patch(facecolor=bars[0].get_facecolor(), label=c))
        for b, f in zip(bars, fmts, strict=True):
            if not _carries_headers(f):
                b.set_hatch("//")
        for x, v in zip([i + j * w for i in range(len(fmts))], got, strict=True):
            said = "n/a" if v is None else f"{v:.1f}"
            ax.annotate(said, (x, v or 0), ha="center", va="bottom" if (v or 0) >= 0 else "top", fontsize=6)
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="cannot carry headers"))
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks([i + w * (len(codecs) - 1) / 2 for i in range(len(fmts))])
    ax.set_xticklabels([f if _carries_headers(f) else f"{f}\n(no headers)" for f in fmts], rotation=25, ha="right",
                       fontsize=8)  # fmt: skip
    ax.set_ylabel("overhead per record beyond key and value (bytes)")
    ax.set_title("Corpus re-encoded in each format (n/a: the format cannot carry the codec)", fontsize=9)
    ax.legend(handles=handles, fontsize=8)
    fig.tight_layout()
    return save_figure(fig, stem)
