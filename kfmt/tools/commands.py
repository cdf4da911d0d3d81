"""Subcommands beyond generate/formats/demo."""

from __future__ import annotations


def register(sub) -> None:
    from kfmt.spark import jobs as spark_jobs
    from kfmt.tools import diff_cli as diff
    from kfmt.tools import dump, explain, synth

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
        "did not is dropped (the table stays as it was), and so is a journal that does not read (an empty body a "
        "store kept: it never reached its commit point); leftover staging folders are removed. Local writers "
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
        help="lower Kafka's JSON message specs into the schema language (its payloads, or with --protocol every "
        "request and response; printed as YAML, or written to --out)",
        description="Read Kafka's JSON message specs (files or folders of *.json, e.g. a Kafka source tree's "
        "group-coordinator/src/main/resources/common/message) and lower them into the schema language, Kafka's "
        "names kept as orig_name. Each spec alone: the record's int16 version (KRaft records: MetadataRecordSerde's "
        "frame) first, then every field under a condition on it. With --family NAME, the specs together: NAME for "
        "metadata records (one schema, the record chosen by its apiKey), NAME_key and NAME_value for a "
        "coordinator's Key/Value pairs (the value chosen by the key's record type, a parameter). Flexible versions "
        "get compact lengths and tagged-field sections (tagged fields by name, unknown tags kept); a spec with "
        "classic and flexible versions is lowered as its two parts and a switch on the version (alone: its classic "
        "versions); what cannot be said yet is refused, one "
        "line each. Exit status: 0 all lowered, 1 some refused, 2 usage error.",
    )
    s.add_argument("paths", nargs="*", help="spec files (*.json) or folders holding them")
    s.add_argument("--family", metavar="NAME", help="lower the specs together, as the schemas of one family")
    s.add_argument("--kafka-tree", metavar="DIR", help="lower every family kfmt ships from this Kafka source tree "
                   "(the schemas of schemas/messages)")  # fmt: skip
    s.add_argument("--kafka-commit", metavar="SHA", default="", help="the tree's commit, named in the YAML headers")
    s.add_argument(
        "--protocol",
        action="store_true",
        help="with --kafka-tree: lower the protocol instead (every "
        "*Request.json and *Response.json and the two headers: a schema each, the version a parameter; "
        "the schemas of schemas/protocol)",
    )
    s.add_argument(
        "--newer-specs",
        metavar="DIR",
        help="with --protocol: a folder of newer specs (its SOURCE file's "
        "first line names it) giving the versions the tree lacks",
    )
    s.add_argument("--out", help="write <schema>.yaml files here (default: print the YAML)")
    s.add_argument("--check", metavar="DIR", help="compare with the schemas in DIR instead of writing: say what "
                   "changed (exit 1 if anything did)")  # fmt: skip
    s.add_argument("--emit-yaml", action="store_true", help="print the YAML (the default without --out)")
    s.set_defaults(func=_import_spec)


def _spec_files(paths: list[str]):
    from pathlib import Path

    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            return None, p
        files += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    return files, None


def _import_spec(args) -> int:
    import sys
    from pathlib import Path

    from generator.frontends.kafka_spec import SpecError, SpecInvalid, family, from_tree, lower, parse, to_yaml

    if bool(args.paths) == bool(args.kafka_tree):
        print("kfmt import-kafka-spec: give spec files or folders, or --kafka-tree DIR (one of them)", file=sys.stderr)
        return 2
    files, missing = _spec_files(args.paths)
    if files is None:
        print(f"kfmt import-kafka-spec: no such file or directory: {missing}", file=sys.stderr)
        return 2
    schemas: list[tuple[str, dict, str]] = []
    refused = 0
    try:
        if args.kafka_tree and args.protocol:
            schemas = _protocol(args)
        elif args.kafka_tree:
            schemas = [(stem, sc, src) for stem, (sc, src) in from_tree(args.kafka_tree, args.kafka_commit).items()]
        elif args.family:
            specs = [(parse(f.read_text(encoding="utf-8"), str(f)), str(f)) for f in files]
            schemas = [(n, sc, ", ".join(args.paths)) for n, sc in family(specs, args.family).items()]
    except (SpecError, UnicodeDecodeError) as e:
        print(f"kfmt import-kafka-spec: {e}", file=sys.stderr)
        return 2 if isinstance(e, SpecInvalid) else 1
    invalid = 0
    for f in files if not args.family else []:
        try:
            schema = lower(f.read_text(encoding="utf-8"), str(f))
        except (SpecError, UnicodeDecodeError) as e:
            print(f"kfmt import-kafka-spec: {e}", file=sys.stderr)
            invalid += isinstance(e, SpecInvalid)
            refused += 1
            continue
        schemas.append((schema["root"], schema, str(f)))
    if args.check:
        return max(refused and 1, _check_schemas(args.check, [(stem, to_yaml(sc, src)) for stem, sc, src in schemas]))
    for stem, schema, source in schemas:
        text = to_yaml(schema, source)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / f"{stem}.yaml").write_text(text)
        if args.emit_yaml or not args.out:
            print(text)
    return 2 if invalid else 1 if refused else 0


def _protocol(args) -> list[tuple[str, dict, str]]:
    """The protocol's schemas from ``--kafka-tree`` (and ``--newer-specs``)."""
    from pathlib import Path

    from generator.frontends.kafka_protocol import FOLDER, Source, protocol_schemas
    from generator.frontends.kafka_spec import SpecError

    base = Source(Path(args.kafka_tree) / FOLDER, f"apache/kafka {args.kafka_commit or '(no commit given)'} {FOLDER}")
    newer = None
    if args.newer_specs:
        label = Path(args.newer_specs) / "SOURCE"
        if not label.is_file():
            raise SpecError(f"{args.newer_specs}: no SOURCE file naming where these specs come from")
        newer = Source(Path(args.newer_specs), label.read_text(encoding="utf-8").splitlines()[0].strip())
    return [(stem, sc, src) for stem, (sc, src) in protocol_schemas(base, newer).items()]


def _check_schemas(folder: str, texts: list[tuple[str, str]]) -> int:
    """Say how the lowered schemas differ from those in ``folder`` (a unified diff per changed file); 1 if any."""
    import difflib
    from pathlib import Path

    changed = 0
    for stem, text in texts:
        path = Path(folder) / f"{stem}.yaml"
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if old == text:
            print(f"{stem}: unchanged")
            continue
        changed += 1
        diff = list(
            difflib.unified_diff(old.splitlines(), text.splitlines(), str(path), f"{stem} (lowered)", lineterm="")
        )
        print(f"{stem}: {'new' if not old else 'changed'} ({sum(d.startswith('+') for d in diff[2:])} lines added, "
              f"{sum(d.startswith('-') for d in diff[2:])} removed)")  # fmt: skip
        print("\n".join(diff[:200]) + ("\n..." if len(diff) > 200 else ""))
    return 1 if changed else 0


def _recover(args) -> int:
    import os
    import sys

    from kfmt.storage import Tree, is_uri
    from kfmt.table.commit import CommitError, exclusive, recover

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
