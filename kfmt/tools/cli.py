"""The ``kfmt`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the source tree (schemas/, generated/ beside kfmt/)


def _cmd_generate(args) -> int:
    try:
        from generator.driver import generate
        from generator.loader.spec import SchemaError
    except ImportError as e:  # a plain install: the generator's own dependencies are the 'generate' extra
        print(
            f"kfmt generate: the generator needs the 'generate' extra ({e.name} is missing): "
            "pip install 'kfmt[generate]'",
            file=sys.stderr,
        )
        return 2
    schemas = Path(args.schemas or ROOT / "schemas")
    out = Path(args.out or ROOT / "generated")
    if args.schemas is None and not schemas.is_dir():
        print(
            f"kfmt generate: no schemas/ beside the installed package ({schemas}); pass --schemas DIR and --out DIR",
            file=sys.stderr,
        )
        return 2
    if args.show_ir:
        return _show_ir(schemas, args.show_ir, args.until)
    if args.until:
        print("kfmt generate: --until goes with --show-ir FORMAT", file=sys.stderr)
        return 2
    try:
        changed = generate(schemas, out, check=args.check)
    except SchemaError as e:
        print(f"kfmt generate: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"kfmt generate: cannot write {e.filename or out}: {e.strerror or e}", file=sys.stderr)
        return 2
    if args.check:
        if changed:
            print("generated/ is stale; run `make generate` and commit. Differs:", file=sys.stderr)
            for c in changed:
                print(f"  {c}", file=sys.stderr)
            return 1
        print("generated/ is up to date")
        return 0
    print(f"generated {len(changed)} changed file(s)" + (": " + ", ".join(changed) if changed else ""))
    return 0


def _show_ir(schemas: Path, fid: str, until: str | None) -> int:
    from generator import ir
    from generator.ir.printer import show
    from generator.loader import load
    from generator.loader.spec import SchemaError

    path = schemas / f"{fid}.yaml"
    if not path.is_file():
        print(f"kfmt generate: no schema {path}", file=sys.stderr)
        return 2
    try:
        print(show(ir.build(load(path, schemas), until=until)), end="")
    except (SchemaError, ValueError) as e:
        print(f"kfmt generate: {e}", file=sys.stderr)
        return 2
    return 0


def _backends_line() -> str:
    """Which backend reads and writes by default, and which others this installation has."""
    from kfmt.codec.formats import available_backends, default_backend

    try:
        active = default_backend()
    except Exception as e:  # noqa: BLE001 - a wrong KFMT_BACKEND is said, not raised, here
        return f"backend: none ({e})"
    return f"backend: {active}; available: {', '.join(available_backends())}"


class _Version(argparse.Action):
    """--version: the backend line is computed when asked (it loads every backend: 0.2 s of every `kfmt` run)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from kfmt import __version__

        print(f"kfmt {__version__} ({_backends_line()})")
        parser.exit()


def _spark_line() -> str:
    """Which engines the Spark source has here (kfmt.spark.read)."""
    from pathlib import Path

    import kfmt

    jvm = (Path(kfmt.__file__).parent / "spark" / "kfmt-jvm.jar").exists()  # (kfmt.spark.jvm.JAR, without pyspark)
    return "Spark source engines: jvm, python" if jvm else "Spark source engine: python (the JVM engine is not built)"


def _cmd_formats(args) -> int:
    from kfmt.codec.formats import format_ids, get_format

    print(f"# {_backends_line()}")
    print(f"# {_spark_line()}")
    for fid in format_ids():
        mod = get_format(fid)
        auto = "auto" if mod.AUTO_DETECT else "explicit"
        print(f"{fid:28} magic {mod.MAGIC!s:4} {auto:8} {mod.DOC}")
    return 0


def _cmd_demo(args) -> int:
    from kfmt.tools.demo import run

    return run(args)


def build_parser():
    from kfmt.tools.args import Parser, existing_path, positive_int

    p = Parser(
        prog="kfmt",
        description="Kafka wire formats, declared once in YAML (schemas/), generated into fast Python codecs.",
    )
    p.add_argument("--version", action=_Version, nargs=0, help="show kfmt's version and backends, and exit")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="compile schemas/*.yaml into generated/ (every backend)",
        description="Compile every format schema (a *.yaml with 'root' or 'extends') into one package per format "
        "under --out, through the typed IR and every backend in generator/backends (python: python.py and the "
        "model; construct: construct.py; markdown: FIELDS.md). Only files carrying the generator's header are replaced or removed; anything else in --out "
        "is left alone, and a same-named file without the header is refused. Needs the 'generate' extra "
        "(jinja2, pyyaml, ruff). Exit status: 0 done, 1 --check found differences, 2 schema or usage error.",
    )
    g.add_argument("--schemas", help="schema directory (default: the project's schemas/)")
    g.add_argument("--out", help="output package directory (default: the project's generated/)")
    g.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs from the schemas")
    g.add_argument("--show-ir", metavar="FORMAT", help="write nothing; print the typed IR of one format")
    g.add_argument("--until", metavar="PASS", help="with --show-ir: the IR after this pass (resolve, derive, ...)")
    g.set_defaults(func=_cmd_generate)

    f = sub.add_parser("formats", help="list every format with its one-line description")
    f.set_defaults(func=_cmd_formats)

    d = sub.add_parser(
        "demo",
        help="the main job: synthesize a corpus (or use --corpus), compare all formats with Spark, write out/report.md",
    )
    d.add_argument(
        "--corpus",
        type=existing_path,
        help="a Kafka log directory to analyse (default: synthesize one under OUT/corpus)",
    )
    d.add_argument("--out", default="out", help="report directory (default out/)")
    d.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    d.add_argument("--records", type=positive_int, default=2000, help="records per partition of the synthesized corpus")
    d.add_argument("--codec-only", action="store_true", help="only encode a v2 batch and show it field by field")
    d.set_defaults(func=_cmd_demo)

    from kfmt.tools import commands as cli_tools

    cli_tools.register(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.environ.get("KFMT_BACKEND") is not None:  # a wrong one is one line before any command runs
        from kfmt.codec.formats import default_backend
        from kfmt.runtime.errors import CodecError

        try:
            default_backend()
        except CodecError as e:
            print(f"kfmt: KFMT_BACKEND: {e.reason}", file=sys.stderr)
            return 2
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
