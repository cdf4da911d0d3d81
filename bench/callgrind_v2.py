"""`make bench-callgrind`: instructions per record (valgrind --tool=callgrind) for the v2 workload of
`make bench` (100-record batches, 10-byte keys, 100-byte values, one header, uncompressed), per implementation;
and the same batch compressed with each codec, decoded into Arrow columns beside decompressing it alone.

Like for like: every row starts from what its user holds and ends where its user does. Encoding: the user's
records in, bytes out (kfmt: ``kfmt.encode_batch`` of a list of ``kfmt.Record``; kafka-python and aiokafka:
their ``DefaultRecordBatchBuilder``, one ``append`` per record, then ``build``). Decoding: the batch's bytes in,
every record's offset, timestamp, key, value and headers read out (kfmt through ``kfmt.read_batches``, the
reader users call, which checks the CRC; aiokafka also with ``validate_crc()``, its CRC check).

Instruction counts do not depend on what else the machine is doing, so they compare implementations on a busy
or shared machine where timings drift. Each implementation runs in its own process under callgrind: the same
imports and set-up, then one call (its one-time costs) and LOOPS decodes (or encodes) of one batch; a run of
3 x LOOPS minus a run of LOOPS, over 2 x LOOPS x 100 records, is the figure (the interpreter's start-up, the
same in both, cancels out; the modules are compiled first, so that neither run compiles one). Decoding touches
every record's offset, timestamp, key, value and headers, as `make bench` does.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

IMPLS = {
    "decode": [
        "kfmt.read_batches, native",
        "kfmt native, Arrow columns",
        "kfmt.read_batches, python",
        "kafka-python",
        "aiokafka",
        "aiokafka, validate_crc()",
    ],
    "encode": ["kfmt.encode_batch, native", "kfmt.encode_batch, python", "kafka-python", "aiokafka"],
}


CODECS = ("gzip", "snappy", "lz4", "zstd")
COMPRESSED = ("kfmt native, Arrow columns", "kfmt decompress() alone", "the library's call alone")


def compressed_job(codec: str, impl: str):
    """One compressed batch of the same workload: decoded into Arrow columns, or only decompressed (kfmt's
    ``decompress()``, the floor of any decoding of it, and the codec library's own call)."""
    from bench_codecs import arrow_decoder, library_call, workload

    import kfmt
    from kfmt.codec.formats import available_backends, backend_module
    from kfmt.runtime.compression import decompress
    from kfmt.runtime.options import DEFAULT_OPTIONS

    recs = [kfmt.Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in workload()]
    data = kfmt.encode_batch(recs, codec=codec, backend="python")
    payload = data[61:]  # everything after the v2 batch header is the compressed stream
    if impl == COMPRESSED[0]:
        return arrow_decoder(backend_module("kafka_v2", "native"), data) if "native" in available_backends() else None
    if impl == COMPRESSED[1]:
        return lambda: decompress(codec, payload, 2, DEFAULT_OPTIONS)
    return library_call(codec, payload)


def worker(direction: str, impl: str, loops: int) -> None:
    if direction in CODECS:
        job = compressed_job(direction, impl)
        if job is not None:
            job()
            for _ in range(loops):
                job()
        return
    import aiokafka.record.default_records as aio
    from bench_codecs import arrow_decoder, build_default, read_ours, touch, workload
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    import kfmt
    from kfmt.codec.formats import available_backends, backend_module

    recs = workload()
    ours = [kfmt.Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in recs]
    nat = backend_module("kafka_v2", "native") if "native" in available_backends() else None
    data = bytes(build_default(DefaultRecordBatchBuilder, "none", recs))
    columns = arrow_decoder(nat, data) if nat is not None else None
    run = {
        ("decode", "kfmt.read_batches, native"): lambda: read_ours(data, backend="native"),
        ("decode", "kfmt native, Arrow columns"): columns,
        ("decode", "kfmt.read_batches, python"): lambda: read_ours(data, backend="python"),
        ("decode", "kafka-python"): lambda: touch(DefaultRecordBatch(data)),
        ("decode", "aiokafka"): lambda: touch(aio.DefaultRecordBatch(data)),
        ("decode", "aiokafka, validate_crc()"): lambda: (lambda b: (b.validate_crc(), touch(b)))(
            aio.DefaultRecordBatch(data)
        ),
        ("encode", "kfmt.encode_batch, native"): lambda: kfmt.encode_batch(ours, backend="native"),
        ("encode", "kfmt.encode_batch, python"): lambda: kfmt.encode_batch(ours, backend="python"),
        ("encode", "kafka-python"): lambda: build_default(DefaultRecordBatchBuilder, "none", recs),
        ("encode", "aiokafka"): lambda: build_default(aio.DefaultRecordBatchBuilder, "none", recs),
    }[(direction, impl)]
    if "native" in impl and nat is None:
        return
    run()  # warm: first-call caches out of the count's variable part
    for _ in range(loops):
        run()


def instructions(direction: str, impl: str, loops: int) -> int:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
               "--worker", direction, impl, str(loops)]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=os.path.dirname(__file__))
        text = open(out).read()
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if m is None:
        raise RuntimeError("no totals in the callgrind output")
    return int(m.group(1))


def per_record(direction: str, impl: str, loops: int) -> float:
    """Instructions per record: a run of 3 x ``loops`` batches minus a run of ``loops`` (both past the first
    call's one-time costs, and the interpreter's start-up, identical in both, cancels out)."""
    return (instructions(direction, impl, 3 * loops) - instructions(direction, impl, loops)) / (2 * loops * 100)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loops", type=int, default=200, help="batches decoded or encoded per measured run")
    p.add_argument("--worker", nargs=3, metavar=("DIRECTION", "IMPL", "LOOPS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for d in ("kfmt", "generated", "bench"):  # no run compiles a module the other does not
        compileall.compile_dir(os.path.join(root, d), quiet=2)
    print(f"# instructions per record (callgrind), v2, 100 records of 10 B key / 100 B value / one header, "
          f"uncompressed; a run of {3 * args.loops} batches minus a run of {args.loops}\n")  # fmt: skip
    print("| direction | implementation | instructions / record |")
    print("|---|---|---|")
    for direction, impls in IMPLS.items():
        for impl in impls:
            print(f"| {direction} | {impl} | {per_record(direction, impl, args.loops):,.0f} |", flush=True)
    print("\n# the same batch compressed: decoded into Arrow columns against decompressing it alone "
          "(instructions per record)\n")  # fmt: skip
    print("| codec | " + " | ".join(COMPRESSED) + " | Arrow speed, % of decompress() | % of the library call |")
    print("|---|---|---|---|---|---|")
    for codec in CODECS:
        per = [per_record(codec, impl, args.loops) for impl in COMPRESSED]
        print(f"| {codec} | " + " | ".join(f"{x:,.0f}" for x in per)
              + f" | {per[1] / per[0]:.0%} | {per[2] / per[0]:.0%} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
