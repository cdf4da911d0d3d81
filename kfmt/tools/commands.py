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
    r = sub.add_parser(
        "recover",
        help="complete or drop a kafka-log writer's interrupted commit (readers refuse the table until then)",
        description="A table written by the Spark kafka-log writer whose commit was interrupted (its journal "
        "_KFMT_PENDING is still there) is refused by every reader. Run this once no writer is running: a "
        "commit that reached its commit point is completed (every file put in place and checked), one that "
        "did not is dropped (the table stays as it was); leftover staging folders are removed. Local writers "
        "do this themselves; in a store, which cannot tell a slow writer from a killed one, this command "
        "does. Exit status: 0 the table is whole (nothing to do, or done), 1 it could not be completed, "
        "2 usage error.",
    )
    r.add_argument("table", help="the table's folder or URI (s3://bucket/prefix), as given to save()")
    r.add_argument("--storage", action="append", default=[], metavar="KEY=VALUE",
                   help="a storage option (s3.endpoint=..., s3.region=...); repeatable")  # fmt: skip
    r.set_defaults(func=_recover)
    _add_import_spec(sub)


def _add_import_spec(sub) -> None:
    s = sub.add_parser(
        "import-kafka-spec",
        help="lower Kafka's JSON message specs into the schema language (printed as YAML, or written to --out)",
        description="Read Kafka's JSON message specs (files or folders of *.json, e.g. a Kafka source tree's "
        "group-coordinator/src/main/resources/common/message) and lower each into the schema language: the "
        "record's int16 version first, then every field under a condition on it, Kafka's names kept as "
        "orig_name. A spec whose every version is flexible (KRaft's records, framed as MetadataRecordSerde frames "
        "them) gets compact lengths and its tagged-field sections kept raw; a spec with classic and flexible "
        "versions is lowered for its classic ones; what cannot be said yet (arrays of primitives...) is refused, "
        "one line each. Exit status: 0 all lowered, 1 some refused, 2 usage error.",
    )
    s.add_argument("paths", nargs="+", help="spec files (*.json) or folders holding them")
    s.add_argument("--out", help="write <message>.yaml files here (default: print the YAML)")
    s.add_argument("--emit-yaml", action="store_true", help="print the YAML (the default without --out)")
    s.set_defaults(func=_import_spec)


def _import_spec(args) -> int:
    import sys
    from pathlib import Path

    from generator.frontends.kafka_spec import SpecError, lower, to_yaml

    files: list[Path] = []
    for raw in args.paths:
        p = Path(raw)
        if not p.exists():
            print(f"kfmt import-kafka-spec: no such file or directory: {p}", file=sys.stderr)
            return 2
        files += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    refused = 0
    for f in files:
        try:
            schema = lower(f.read_text(encoding="utf-8"), str(f))
        except (SpecError, UnicodeDecodeError) as e:
            print(f"kfmt import-kafka-spec: {e}", file=sys.stderr)
            refused += 1
            continue
        text = to_yaml(schema, str(f))
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / f"{schema['root']}.yaml").write_text(text)
        if args.emit_yaml or not args.out:
            print(text)
    return 1 if refused else 0


def _recover(args) -> int:
    import os
    import sys

    from kfmt.commit import CommitError, exclusive, recover
    from kfmt.storage import Tree, is_uri

    bad = [kv for kv in args.storage if "=" not in kv]
    if bad:
        print(f"kfmt recover: --storage takes KEY=VALUE, not {bad[0]!r}", file=sys.stderr)
        return 2
    if not is_uri(args.table) and not os.path.isdir(args.table):
        print(f"kfmt recover: {args.table} is not a folder (give the table's folder or URI, as given to save())",
              file=sys.stderr)  # fmt: skip
        return 2
    tree = Tree(args.table, dict(kv.split("=", 1) for kv in args.storage))
    try:
        with exclusive(tree, tree.root):  # locally: waits for a live writer, which then completes its own commit
            journal = recover(tree, tree.root)
    except (CommitError, OSError) as e:
        print(f"kfmt recover: {e}", file=sys.stderr)
        return 1
    if journal is None:
        print(f"kfmt recover: {args.table}: no interrupted commit")
    else:
        print(f"kfmt recover: {args.table}: {journal.describe()} {'completed' if journal.ready else 'dropped'}")
    return 0


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
