"""The ``kfmt`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cmd_generate(args) -> int:
    from generator.loader import SchemaError
    from generator.render import generate

    try:
        changed = generate(Path(args.schemas), Path(args.out), check=args.check)
    except SchemaError as e:
        print(f"kfmt generate: {e}", file=sys.stderr)
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


def _cmd_formats(args) -> int:
    from kfmt.api import format_ids, get_format

    for fid in format_ids():
        mod = get_format(fid)
        auto = "auto" if mod.AUTO_DETECT else "explicit"
        print(f"{fid:28} magic {mod.MAGIC!s:4} {auto:8} {mod.DOC}")
    return 0


def _cmd_demo(args) -> int:
    from kfmt.demo import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kfmt",
        description="Kafka wire formats, declared once in YAML (schemas/), generated into fast Python codecs.",
    )
    from kfmt import __version__

    p.add_argument("--version", action="version", version=f"kfmt {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    g = sub.add_parser("generate", help="compile schemas/*.yaml into generated/ (both backends)")
    g.add_argument("--schemas", default=str(ROOT / "schemas"), help="schema directory (default: schemas/)")
    g.add_argument("--out", default=str(ROOT / "generated"), help="output package directory (default: generated/)")
    g.add_argument("--check", action="store_true", help="write nothing; exit 1 if generated/ differs from the schemas")
    g.set_defaults(func=_cmd_generate)

    f = sub.add_parser("formats", help="list every format with its one-line description")
    f.set_defaults(func=_cmd_formats)

    d = sub.add_parser(
        "demo",
        help="the main job: synthesize a corpus (or use --corpus), compare all formats with Spark, write out/report.md",
    )
    d.add_argument("--corpus", help="a Kafka log directory to analyse (default: synthesize one under OUT/corpus)")
    d.add_argument("--out", default="out", help="report directory (default out/)")
    d.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    d.add_argument("--records", type=int, default=2000, help="records per partition of the synthesized corpus")
    d.add_argument("--codec-only", action="store_true", help="only encode a v2 batch and show it field by field")
    d.set_defaults(func=_cmd_demo)

    from kfmt import cli_tools

    cli_tools.register(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
