"""`make fuzz-native`: the native backend built with AddressSanitizer and UndefinedBehaviorSanitizer, then the
mutation campaign (fuzz/campaign.py) run on it, every input also compared with the python backend.

The extensions are compiled into a scratch copy of the packages (the installed ones are left alone) with
``-fsanitize=address,undefined -fno-sanitize-recover=all``; the interpreter is not instrumented, so the ASan
runtime is preloaded. Any out-of-bounds access, use after free or undefined behaviour aborts the run with
the sanitizer's report (exit status non-zero); leaks are checked by tests/test_native.py through reference
counts, since the interpreter itself keeps memory until exit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# every UBSan check gcc has: the undefined group plus the float checks it leaves out
FLAGS = ["-fsanitize=address,undefined,float-divide-by-zero,float-cast-overflow", "-fno-sanitize-recover=all",
         "-fno-omit-frame-pointer", "-g"]  # fmt: skip


def runtime(name: str) -> str:
    return subprocess.run(
        ["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=True
    ).stdout.strip()


def build(dest: Path, opt: int = 1, apis: list[int] | None = None) -> None:
    """Copy kfmt/ and generated/ into ``dest`` and compile every format's _native.c there, sanitized, at -O``opt``:
    the record formats and Kafka's payloads this campaign mutates, and the protocol schemas of ``apis`` (their
    requests, responses and the two headers; all 178 would be most of the build)."""
    from kfmt.runtime.native import compile_package

    for pkg in ("kfmt", "generated"):
        skip = (
            ("*.so", "__pycache__", "protocol", "protocol_proposals") if pkg == "generated" else ("*.so", "__pycache__")
        )
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns(*skip))
    if apis:
        from kfmt.protocol import api

        keep = {"request_header", "response_header"} | {s for k in apis for s in (api(k).request, api(k).response)}
        src = ROOT / "generated" / "protocol"
        shutil.copytree(src, dest / "generated" / "protocol", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        for c_file in (dest / "generated" / "protocol").glob("*/_native.c"):
            if c_file.parent.name not in keep:
                c_file.unlink()  # the python backend only (a mutated API key reaches any schema)
    flags = ("-shared", "-fPIC", "-std=c11", *FLAGS, f"-O{opt}")
    compile_package(dest / "generated", flags, columns=dest / "kfmt/runtime/native")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=20_000, help="mutated inputs per format and backend")
    p.add_argument("--framing", type=int, default=1_000, help="damaged mixed logs read through scan()")
    p.add_argument("--payloads", type=int, default=5_000, help="mutated keys and values of Kafka's own topics")
    p.add_argument(
        "--protocol",
        type=int,
        default=0,
        help="mutated protocol frames (fuzz/protocol.py) read by the "
        "sanitized protocol decoders of --apis, then held to the python backend (default 0: none)",
    )
    p.add_argument(
        "--apis",
        default="0,1,3,18",
        help="API keys whose protocol decoders are built sanitized for "
        "--protocol (all: every API; a mutated key naming another API is read by the python backend)",
    )
    p.add_argument("--opt", type=int, choices=(0, 1), default=1,
                   help="optimisation of the sanitized build: 1 (default) runs a long campaign faster; 0 builds in "
                        "a fifth of the time (every access still checked), for short slices")  # fmt: skip
    args, rest = p.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="kfmt-asan-") as d:
        dest = Path(d)
        from kfmt.protocol import apis as every_api

        keys = [a.key for a in every_api()] if args.apis == "all" else [int(k) for k in args.apis.split(",")]
        apis = keys if args.protocol else []
        build(dest, args.opt, apis)
        env = dict(
            os.environ,
            PYTHONPATH=str(dest),
            LD_PRELOAD=f"{runtime('libasan.so')} {runtime('libubsan.so')}",
            ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
            UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
            KFMT_BACKEND="native",
        )
        # the imported extension is the sanitized one, and the ASan runtime is mapped into the process
        check = (
            "import generated.kafka_v2._native as m; print(m.__file__); "
            "print('instrumented:', 'yes' if 'libasan' in open('/proc/self/maps').read() else 'no')"
        )
        where = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, cwd=dest)
        if where.returncode != 0 or not where.stdout.startswith(str(dest)) or "instrumented: yes" not in where.stdout:
            print(f"the sanitized build was not the one imported: {where.stdout}{where.stderr}", file=sys.stderr)
            return 2
        shutil.copytree(ROOT / "fuzz", dest / "fuzz", ignore=shutil.ignore_patterns("__pycache__", "regressions"))
        (dest / "tests/vectors").mkdir(parents=True, exist_ok=True)  # the payload stage's seeds: a real broker's
        shutil.copy2(ROOT / "tests/vectors/kafka_internal_payloads.json", dest / "tests/vectors")
        cmd = [sys.executable, str(dest / "fuzz/campaign.py"), "--backends", "native", "--inputs", str(args.inputs),
               "--framing", str(args.framing), "--no-bombs", "--payloads", str(args.payloads), *rest]  # fmt: skip
        # (the payload stage decodes with the message schemas' sanitized C decoders, held to the python backend)
        r = subprocess.run(cmd, env=env, cwd=dest)
        found = dest / "tests/vectors/regressions"  # inputs the campaign saved: replayed by the test suite
        for f in found.glob("*") if found.is_dir() else []:
            shutil.copy2(f, ROOT / "tests/vectors/regressions" / f.name)
            print(f"saved {ROOT / 'tests/vectors/regressions' / f.name}")
        if args.protocol and r.returncode == 0:  # the protocol's readers, from the source tree, on the sanitized build
            r = subprocess.run([sys.executable, str(ROOT / "fuzz/protocol.py"), "--frames", str(args.protocol),
                                "--apis", args.apis, "--sanitized", str(dest)], env=env, cwd=ROOT)  # fmt: skip
        symbols = subprocess.run(["nm", "-D", str(next((dest / "generated").glob("kafka_v2/_native*.so")))],
                                 capture_output=True, text=True).stdout  # fmt: skip
        asan = "__asan_report_load" in symbols and "__ubsan_handle" in symbols
        print(f"\nsanitized native build (ASan + UBSan, {' '.join(FLAGS)} -O{args.opt}): exit {r.returncode}; "
              f"instrumented: {'yes' if asan else 'no'}")  # fmt: skip
        if not asan:
            return 2
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
