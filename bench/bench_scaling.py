"""`make bench-scaling`: time per record and peak memory from a 10 KB to a 1 GB segment.

One v2 segment per size (100-record batches, 10-byte keys, 100-byte values, one header; the batches of a ~1 MB
template repeated with their base offsets moved on, which the CRC does not cover), read whole by each tool:

- ``kfmt.read_batches`` touching every record, ``kfmt.read_arrow`` (a table: it holds every row, so its memory
  grows with the log by design), ``kfmt.read_arrow_batches`` (the same rows streamed) and ``kfmt dump --summary``,
  each in a fresh Python process, timed around the call alone (after the same call on a one-batch segment: not
  the interpreter's start nor the first use of a module); peak memory is the process's peak resident set above
  what it held before the call.
- The Spark source (``--spark``): count and sum of value lengths over the partition folder in one local[2]
  session, with the Python engine (peak memory: the Python workers', their peak resident set reset before each
  run) and the JVM engine (peak memory: Spark's JVM's, where it decodes, reset the same way).

Then two damaged segments of ``--damaged`` bytes (1.2 GB; sparse, so no disk is used): the ~1 MB template followed
by a zero-filled tail (``log.preallocate`` and an unclean shutdown), and the same with the second batch's size
field claiming 0x7FFF0000 bytes. Each is read by the resynchronising readers (``on_corrupt="skip"``, ``dump``)
and by the failing ones (the one-line error), with their time and peak memory: a damaged region is crossed in
time linear in its length and memory independent of it, whatever a size field claims.

Then captures of ``--captures`` sizes (10 MB and 100 MB; bench/bench_capture.py's traffic: Produce and Fetch
exchanges with compressed batches in 1,460-byte segments), read by ``kfmt dump --summary`` and ``--json`` (its
output to /dev/null): seconds and peak memory above the baseline, which stays flat as the capture grows (each
connection's bytes in a spool file, read as they go).

Medians of ``--runs`` runs, the sizes interleaved round by round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
TOOLS = ("read_batches", "read_arrow", "read_arrow_batches", "dump --summary")
DAMAGED_TOOLS = ("read_batches skip", "read_arrow skip", "dump --summary", "read_batches fail", "read_arrow fail")
CAPTURE_TOOLS = ("capture dump --summary", "capture dump --json")


def size_of(text: str) -> int:
    return int(text[:-1]) * SIZES[text[-1].upper()] if text[-1].upper() in SIZES else int(text)


def template() -> list[bytes]:
    """About 1 MB of v2 batches, one per entry."""
    import kfmt

    out, offset = [], 0
    while sum(map(len, out)) < 1 << 20:
        recs = [kfmt.Record(key=b"k%09d" % (offset + i), value=bytes([65 + i % 26]) * 100, timestamp=1_700_000_000_000 + i,
                            headers=[("trace", b"%08d" % i)]) for i in range(100)]  # fmt: skip
        out.append(kfmt.encode_batch(recs, base_offset=offset))
        offset += 100
    return out


def write_segment(folder: str, size: int, batches: list[bytes]) -> tuple[str, int]:
    """A partition folder whose one segment holds at least ``size`` bytes of whole batches; its record count."""
    part = os.path.join(folder, "scale-0")
    os.makedirs(part, exist_ok=True)
    path = os.path.join(part, "00000000000000000000.log")
    written = offset = 0
    with open(path, "wb") as f:
        while written < size:
            for b in batches:
                f.write(struct.pack(">q", offset) + b[8:])  # the base offset: not under the CRC
                written += len(b)
                offset += 100
                if written >= size:
                    break
    return part, offset


def child(tool: str, path: str) -> None:
    """One measurement in this fresh process: prints seconds, records, peak and baseline memory (MB). The tool
    first reads a one-batch segment, so what is timed is the call, not the first use of its modules."""
    import resource

    import kfmt

    def rss() -> float:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

    warm = os.path.join(_scratch("kfmt-warm-"), "00000000000000000000.log")
    with open(warm, "wb") as f:
        f.write(kfmt.encode_batch([kfmt.Record(value=b"x", headers=[("h", b"1")])]))
    if tool.startswith("capture"):  # a one-exchange capture first
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_capture

        warm = os.path.join(os.path.dirname(warm), "warm.pcap")
        bench_capture.make_capture(Path(warm), 0)
    run(tool, warm)
    base = rss()
    t = time.perf_counter()
    n = run(tool, path)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "records": n, "peak_mb": peak, "base_mb": base}))


def damaged_segments(folder: str, size: int, batches: list[bytes]) -> dict:
    """{name: (path, records a resynchronising reader reads)}: the template then a zero tail, and the same with
    the second batch's size field damaged."""
    out = {}
    for name, bad in (("zero tail", False), ("size 0x7FFF0000", True)):
        part = os.path.join(folder, name.split()[0] + "-0")
        os.makedirs(part, exist_ok=True)
        path = os.path.join(part, "00000000000000000000.log")
        data = bytearray(b"".join(struct.pack(">q", i * 100) + b[8:] for i, b in enumerate(batches)))
        if bad:
            struct.pack_into(">i", data, len(batches[0]) + 8, 0x7FFF0000)
        with open(path, "wb") as f:
            f.write(data)
            f.truncate(size)
        out[name] = (path, 100 * (len(batches) - bad))
    return out


def run(tool: str, path: str) -> int:
    """The records ``tool`` reads from the segment at ``path`` (-1: dump --summary, which prints them; -2: the
    reader's one-line error, as due on a damaged segment read without skipping)."""
    import kfmt

    n = 0
    if tool.endswith(" skip"):
        if tool.startswith("read_arrow"):
            return kfmt.read_arrow(path, on_corrupt="skip").num_rows
        return sum(len(b.records) for b in kfmt.read_batches(path, on_corrupt="skip"))
    if tool.endswith(" fail"):
        try:
            if tool.startswith("read_arrow"):
                return kfmt.read_arrow(path).num_rows
            return sum(len(b.records) for b in kfmt.read_batches(path, partial_tail="error"))
        except kfmt.CodecError:
            return -2
    if tool == "read_batches":
        for b in kfmt.read_batches(path):
            for r in b.records:
                r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018 - every field read
                n += 1
        return n
    if tool == "read_arrow":
        return kfmt.read_arrow(path).num_rows
    if tool == "read_arrow_batches":
        return sum(b.num_rows for b in kfmt.read_arrow_batches(path))
    from contextlib import redirect_stdout

    from kfmt.tools.cli import main

    how = "--json" if tool.endswith("--json") else "--summary"
    with open(os.devnull, "w") as out, redirect_stdout(out):
        if main(["dump", how, path]) != (1 if "/damaged/" in path else 0):
            raise SystemExit(f"dump {how} did not exit as due")
    return -1


def measure(tool: str, segment: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", tool, segment], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{tool} on {segment}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def spark_runs(folders: dict, runs: int) -> dict:
    """{(engine, size): [(seconds, records, peak MB)]} through the kafka-log source: the Python engine (its
    Python workers' peak) and, where it is built, the JVM engine (the peak of Spark's JVM, which it runs in)."""
    from pyspark.sql import functions as F

    import kfmt.spark
    from kfmt.spark import jvm
    from kfmt.spark.jobs import session

    spark = session("local[2]", "kfmt-bench-scaling")
    engines = ("python", "jvm") if jvm.jar() is not None else ("python",)
    got: dict = {(e, s): [] for e in engines for s in folders}
    try:
        first = next(iter(folders.values()))[0]
        for e in engines:  # warm up: workers started, the JVM's code compiled
            kfmt.spark.read(spark, first, engine=e).agg(F.count("*")).collect()
        for _ in range(runs):
            for s, (part, _) in folders.items():
                for e in engines:
                    pids = _workers() if e == "python" else _jvms()
                    _reset_peaks(pids)
                    t = time.perf_counter()
                    row = kfmt.spark.read(spark, part, engine=e).agg(F.count("*").alias("n"),
                                                                     F.sum(F.length("value"))).collect()[0]  # fmt: skip
                    got[(e, s)].append((time.perf_counter() - t, row["n"], _peak(pids)))
    finally:
        spark.stop()
    return got


def _jvms() -> list[int]:
    """Spark's JVM: the java processes this one started."""
    me, out = os.getpid(), []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                java = b"java" in f.read().split(b"\0")[0]
        except (OSError, ValueError, IndexError):
            continue
        if java and ppid == me:
            out.append(int(pid))
    return out


def _workers() -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
                pids.append(int(pid))
        except (OSError, ValueError):
            continue
    return pids


def _reset_peaks(pids) -> None:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")  # resets the peak resident set (VmHWM)
        except OSError:
            pass


def _peak(pids) -> float:
    peak = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                peak = max(peak, next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024)
        except (OSError, StopIteration):
            continue
    return peak


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10K,1M,100M,1G", help="segment sizes (K, M, G)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--spark", action="store_true", help="also the Spark source (local[2])")
    p.add_argument("--damaged", default="1200M", help="size of the two damaged (sparse) segments; 0: none")
    p.add_argument("--captures", default="10M,100M", help="capture sizes (K, M, G); 0: none")
    p.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    work = _scratch("kfmt-scaling-")
    batches = template()
    folders = {s: write_segment(os.path.join(work, s), size_of(s), batches) for s in args.sizes.split(",")}
    rows: dict = {(t, s): [] for t in TOOLS for s in folders}
    for _ in range(args.runs):
        for s, (part, _) in folders.items():
            for tool in TOOLS:
                got = measure(tool, os.path.join(part, "00000000000000000000.log"))
                if got["records"] not in (-1, folders[s][1]):
                    raise SystemExit(f"{tool} read {got['records']} records of {folders[s][1]}")
                rows[(tool, s)].append(got)
    damaged = (
        damaged_segments(os.path.join(work, "damaged"), size_of(args.damaged), batches) if size_of(args.damaged) else {}
    )
    hurt = damaged_runs(damaged, args.runs)
    caps = captures(os.path.join(work, "captures"), args.captures)
    taken = {(t, c): [measure(t, path) for _ in range(args.runs)] for c, path in caps.items() for t in CAPTURE_TOOLS}
    spark = spark_runs(folders, args.runs) if args.spark else {}
    print(f"# kfmt bench-scaling: v2 segments, 100-record batches; medians of {args.runs} runs\n")
    print("| tool | " + " | ".join(f"{s} ({n:,} records)" for s, (_, n) in folders.items()) + " |")
    print("|---|" + "---|" * len(folders))
    for tool in TOOLS:
        cells = []
        for s, (_, n) in folders.items():
            got = rows[(tool, s)]
            ns = statistics.median(r["seconds"] for r in got) / n * 1e9
            extra = statistics.median(r["peak_mb"] - r["base_mb"] for r in got)
            cells.append(f"{ns:,.0f} ns/rec, +{max(extra, 0):,.0f} MB")
        print(f"| `{tool}` | " + " | ".join(cells) + " |")
    for engine, name, what in (("python", "Spark source", "workers"), ("jvm", "Spark source, JVM engine", "JVM")):
        if (engine, next(iter(folders))) not in spark:
            continue
        cells = []
        for s, (_, n) in folders.items():
            got = spark[(engine, s)]
            ns = statistics.median(x[0] for x in got) / n * 1e9
            cells.append(f"{ns:,.0f} ns/rec, {what} {statistics.median(x[2] for x in got):,.0f} MB")
            if any(x[1] != n for x in got):
                raise SystemExit(f"the {name} counted {got[0][1]} records of {n}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if damaged:
        _print_damaged(damaged, hurt, args.damaged)
    if caps:
        _print_captures(caps, taken)
    return 0


def captures(folder: str, sizes: str) -> dict:
    """{size: path}: a capture of each size (bench/bench_capture.py's traffic)."""
    if sizes in ("", "0"):
        return {}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_capture

    os.makedirs(folder, exist_ok=True)
    out = {}
    for s in sizes.split(","):
        out[s] = os.path.join(folder, f"{s}.pcap")
        bench_capture.make_capture(Path(out[s]), max(size_of(s) // 1_000_000, 1))
    return out


def _print_captures(caps: dict, taken: dict) -> None:
    heads = {c: f"{c} ({os.path.getsize(p) / 1e6:,.1f} MB)" for c, p in caps.items()}
    _print_whole_reads("captures", heads, CAPTURE_TOOLS, taken)


def damaged_runs(damaged: dict, runs: int) -> dict:
    """{(tool, segment): [measurement]}: each tool on each damaged segment, checked to read what it must."""
    hurt: dict = {(t, d): [] for t in DAMAGED_TOOLS for d in damaged}
    for _ in range(runs):
        for d, (path, n) in damaged.items():
            for tool in DAMAGED_TOOLS:
                got = measure(tool, path)
                if got["records"] != (-2 if tool.endswith(" fail") else -1 if tool.startswith("dump") else n):
                    raise SystemExit(f"{tool} read {got['records']} records of {n} from the damaged segment ({d})")
                hurt[(tool, d)].append(got)
    return hurt


def _print_damaged(damaged: dict, hurt: dict, size: str) -> None:
    _print_whole_reads(f"damaged {size} segments (sparse)", {d: d for d in damaged}, DAMAGED_TOOLS, hurt)


def _print_whole_reads(title: str, heads: dict, tools: tuple, taken: dict) -> None:
    """A table of whole reads: a row per tool, a column per input (``heads``: its key and heading), each cell the
    median seconds and peak memory above the baseline of ``taken[(tool, key)]``."""
    print(f"\n# {title}: the whole read, seconds and peak memory above the baseline\n")
    print("| tool | " + " | ".join(heads.values()) + " |")
    print("|---|" + "---|" * len(heads))
    for tool in tools:
        cells = []
        for key in heads:
            got = taken[(tool, key)]
            extra = statistics.median(r["peak_mb"] - r["base_mb"] for r in got)
            cells.append(f"{statistics.median(r['seconds'] for r in got):,.2f} s, +{max(extra, 0):,.0f} MB")
        print(f"| `{tool}` | " + " | ".join(cells) + " |")


def _scratch(prefix: str) -> str:
    """A temporary folder removed when the benchmark exits (its segments can be a gigabyte)."""
    import atexit
    import shutil

    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


if __name__ == "__main__":
    sys.exit(main())
