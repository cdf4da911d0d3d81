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
    bar = _bar_plot(res, str(out / "bytes_per_record_by_format"))
    report = out / "report.md"
    lines = [
        "# kfmt report: Kafka wire formats compared by encoding",
        "",
        f"Corpus: `{corpus}` ({n_rows} records read through the `kafka-log` Spark data source); "
        f"Spark master `{args.master}`; comparison job {spark_s:.1f}s.",
        "",
        "## Bytes per record on the corpus (each source batch re-encoded in every format)",
        "",
        "Formats without record headers (kafka_v0, kafka_v1, kip98_draft) carry the records without them, so",
        "their figures exclude header bytes; overhead/record is bytes minus key and value bytes (negative when",
        "compression saves more than the framing costs).",
        "",
        render_compare(res, markdown=True),
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


def _bar_plot(res: dict, stem: str) -> list[str]:
    from kfmt.tools.plotting import pyplot, save_figure

    plt = pyplot()
    fmts = list(res)
    codecs = list(next(iter(res.values())))
    fig, ax = plt.subplots(figsize=(9, 4.2))
    w = 0.8 / len(codecs)
    for j, c in enumerate(codecs):
        vals = [res[f][c]["bytes_per_record"] or 0 for f in fmts]
        ax.bar([i + j * w for i in range(len(fmts))], vals, width=w, label=c)
    ax.set_xticks([i + w * (len(codecs) - 1) / 2 for i in range(len(fmts))])
    ax.set_xticklabels(fmts, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("bytes per record")
    ax.set_title("Corpus re-encoded in each format (0 = cannot carry the codec)")
    ax.legend()
    fig.tight_layout()
    return save_figure(fig, stem)
