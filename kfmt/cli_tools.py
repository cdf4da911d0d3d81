"""Subcommands beyond generate/formats/demo."""

from __future__ import annotations


def register(sub) -> None:
    from kfmt import diff, dump, explain, spark_jobs, synth

    dump.add_parser(sub)
    spark_jobs.add_parser(sub)
    synth.add_parser(sub)
    diff.add_parser(sub)
    explain.add_parser(sub)
    c = sub.add_parser(
        "convert",
        help="convert segments (files or log directories) to another magic/codec, Kafka's way",
        description="Write converted copies of Kafka log segments. Never overwrites its input; each output file "
        "is written to a temporary name and renamed. Everything that cannot be carried over is reported.",
    )
    c.add_argument("src", help="a .log segment, a topic-partition folder, or a log directory")
    c.add_argument("dst", help="output file (for one segment) or directory (mirrors the input layout)")
    c.add_argument("--magic", type=int, required=True, choices=(0, 1, 2), help="target magic")
    c.add_argument("--codec", choices=("none", "gzip", "snappy", "lz4", "zstd"), help="target codec (default: keep)")
    c.add_argument("--strict", action="store_true", help="refuse instead of reporting anything that would be lost")
    c.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="carry the good batches over and report each corrupt one (exit 1); default: stop",
    )
    c.set_defaults(func=_convert)


def _convert(args) -> int:
    from kfmt.tools import convert_paths

    return convert_paths(
        args.src, args.dst, to_magic=args.magic, codec=args.codec, strict=args.strict, skip_corrupt=args.skip_corrupt
    )
