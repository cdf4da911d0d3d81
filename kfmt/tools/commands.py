"""Subcommands beyond generate/formats/demo."""

from __future__ import annotations


def register(sub) -> None:
    from kfmt.spark import jobs as spark_jobs
    from kfmt.tools import diff, dump, explain, synth

    dump.add_parser(sub)
    spark_jobs.add_parser(sub)
    synth.add_parser(sub)
    diff.add_parser(sub)
    explain.add_parser(sub)
    c = sub.add_parser(
        "convert",
        help="convert segments (files or log directories) to another magic/codec, Kafka's way",
        description="Write converted copies of Kafka log segments, with .index/.timeindex as a broker writes them. "
        "v2 batch fields (producer state, transactional and control flags, leader epoch, timestamps) are kept; "
        "what the target magic cannot carry is reported per kind (--strict: refused). Every segment is "
        "converted before any file is written, then all appear at once. Exit status: 0 every input byte read, "
        "1 corrupt or unread input (or --strict refused), 2 usage error.",
    )
    c.add_argument("src", help="a .log segment, a topic-partition folder, or a log directory")
    c.add_argument("dst", help="output file (for one segment) or directory (mirrors the input layout)")
    c.add_argument("--magic", type=int, required=True, choices=(0, 1, 2), help="target magic")
    c.add_argument("--codec", choices=("none", "gzip", "snappy", "lz4", "zstd"), help="target codec (default: keep)")
    c.add_argument("--strict", action="store_true", help="refuse instead of reporting anything that would be lost")
    c.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="carry the good batches over and report each corrupt one and any unread tail (exit 1); "
        "default: stop and write nothing",
    )
    c.add_argument("--verbose", action="store_true", help="list what was not carried over batch by batch")
    c.add_argument("--overwrite", action="store_true", help="replace output files that exist (default: refuse)")
    c.set_defaults(func=_convert)


def _convert(args) -> int:
    from kfmt.tools.convert import convert_paths

    return convert_paths(
        args.src,
        args.dst,
        to_magic=args.magic,
        codec=args.codec,
        strict=args.strict,
        skip_corrupt=args.skip_corrupt,
        verbose=args.verbose,
        overwrite=args.overwrite,
    )
