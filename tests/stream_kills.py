"""`make test-streams`: a streaming query killed with SIGKILL and restarted from its checkpoint, again and again,
while a producer appends to the log directory it tails; at the end every record is in the output exactly once.

The query (a process of its own: ``python tests/stream_kills.py query <logs> <out> <checkpoint> <engine>``) reads
``spark.readStream.format("kafka-log")`` and appends to a kfmt log directory (``writeStream.format("kafka-log")``),
one micro-batch at a time (``maxOffsetsPerTrigger``). Each trial kills it at a random moment (before its first
batch, mid-batch, between a sink's commit and Spark's commit log) and starts it again; a last run catches up. The
output's values are then counted: each appended record once, none missing, none twice. ``python
tests/stream_kills.py campaign --trials N --engine jvm|python`` runs it; tests/test_streaming.py runs a slice.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

PARTITIONS = 2


def _batch(p: int, base: int, n: int) -> bytes:
    import kfmt

    recs = [kfmt.Record(key=b"k%d" % (base + i), value=b"p%d-%d" % (p, base + i), timestamp=10_000 + base + i)
            for i in range(n)]  # fmt: skip
    return kfmt.encode_batch(recs, base_offset=base, codec="lz4" if (base // n) % 2 else "none")


def query(logs: str, out: str, checkpoint: str, engine: str, spark=None) -> int:
    """The streaming query, run until killed (or, with ``KFMT_CATCH_UP`` or in a given session, until it has read
    everything)."""
    from kfmt.spark.jobs import session

    catch_up = spark is not None or bool(os.environ.get("KFMT_CATCH_UP"))
    spark = spark or session("local[2]", "kfmt-stream-kills")
    reader = spark.readStream.format("kafka-log").option("engine", engine).option("startingOffsets", "earliest")
    if not catch_up:  # many small micro-batches, for kills to land among; the last run reads the rest at once
        reader = reader.option("maxOffsetsPerTrigger", 40)
    df = reader.load(logs)
    w = df.writeStream.format("kafka-log").option("checkpointLocation", checkpoint)
    if catch_up:  # (not availableNow: restarted with a batch planned, it runs only that one)
        q = w.trigger(processingTime="200 milliseconds").start(out)
        q.processAllAvailable()
        q.stop()
    else:
        q = w.trigger(processingTime="200 milliseconds").start(out)
        print("STARTED", flush=True)
        q.awaitTermination()
    return 0


class Producer(threading.Thread):
    """Appends batches to every partition (some in two writes, a segment rolled now and then) until stopped; after
    its 30th batch a new partition appears (a stream reads it from its earliest offset, as Spark's Kafka source)."""

    def __init__(self, logs: Path, seed: int):
        super().__init__(daemon=True)
        self.logs, self.rng, self.stop = logs, random.Random(seed), threading.Event()
        self.ends: dict[int, int] = {}
        for p in range(PARTITIONS):
            self.add(p)

    def add(self, p: int) -> None:
        (self.logs / f"t-{p}").mkdir(parents=True, exist_ok=True)
        (self.logs / f"t-{p}" / f"{0:020d}.log").touch()
        self.ends[p] = 0

    def append(self, p: int) -> None:
        d = self.logs / f"t-{p}"
        if self.ends[p] and self.rng.random() < 0.1:  # roll: a new segment named by the next offset
            (d / f"{self.ends[p]:020d}.log").touch()
        blob = _batch(p, self.ends[p], 10)
        with open(sorted(d.glob("*.log"))[-1], "ab") as f:
            cut = self.rng.randrange(len(blob)) if self.rng.random() < 0.3 else len(blob)
            f.write(blob[:cut])
            f.flush()
            time.sleep(0.05 if cut < len(blob) else 0)  # a batch half written for a moment
            f.write(blob[cut:])
        self.ends[p] += 10

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            if n == 30:
                self.add(len(self.ends))
            self.append(self.rng.randrange(len(self.ends)))
            n += 1
            time.sleep(self.rng.uniform(0.02, 0.2))


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "ab") as f:  # Spark's output, kept for a failure's report
        return subprocess.Popen([sys.executable, __file__, "query", *args], env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def _batches(ck: Path) -> int:
    """Micro-batches the checkpoint has planned (offsets/<id>) so far."""
    d = ck / "offsets"
    return sum(1 for f in d.iterdir() if f.name.isdigit()) if d.is_dir() else 0


def _wait_for_batches(ck: Path, n: int, p: subprocess.Popen, log: Path, seconds: float = 180) -> None:
    """Until this run of the query has planned ``n`` more micro-batches (0: none, killed while starting)."""
    seen, deadline = _batches(ck), time.time() + seconds
    while _batches(ck) < seen + n:
        if p.poll() is not None:
            raise AssertionError(f"the query exited by itself ({p.returncode}): {log.read_text()[-3000:]}")
        if time.time() > deadline:
            raise AssertionError(f"the query planned no micro-batch in {seconds:.0f} s: {log.read_text()[-3000:]}")
        time.sleep(0.05)
    if n == 0:
        time.sleep(2.0)


def campaign(work: Path, trials: int, engine: str, seed: int, spark=None) -> dict:
    """Run the trials; returns the counts (raises AssertionError when a record is missing or twice). The last
    run, which reads the rest, is a process of its own too, or a query in ``spark`` (a session of the caller's)."""
    import kfmt

    rng = random.Random(seed)
    logs, out, ck = work / "logs", work / "out", work / "ck"
    producer = Producer(logs, seed)
    producer.start()
    args, env = [str(logs), str(out), str(ck), engine], dict(os.environ)
    kills = 0
    try:
        for i in range(trials):
            log = work / f"query-{i}.log"
            p = _start(args, env, log)
            _wait_for_batches(ck, rng.randint(0, 3), p, log)
            time.sleep(rng.uniform(0.0, 0.8))  # then a moment into the next: planning, tasks, the sink's commit
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            kills += 1
    finally:
        producer.stop.set()
        producer.join()
    if spark is not None:
        query(*args, spark=spark)
    else:
        done = subprocess.run([sys.executable, __file__, "query", *args], env={**env, "KFMT_CATCH_UP": "1"},
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        if done.returncode != 0:
            raise AssertionError(f"the last run failed: {(done.stdout + done.stderr)[-3000:]}")
    got = Counter(r.value for log in sorted(out.rglob("*.log")) for b in kfmt.read_batches(log) for r in b.records)
    want = Counter(b"p%d-%d" % (p, o) for p, end in producer.ends.items() for o in range(end))
    missing, twice = want - got, +(got - want)
    assert not missing and not twice, (sorted(missing)[:10], sorted(twice)[:10])
    return {"kills": kills, "records": sum(want.values()), "partitions": len(producer.ends), "engine": engine}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("query", help="the streaming query (run by the campaign)")
    q.add_argument("logs")
    q.add_argument("out")
    q.add_argument("checkpoint")
    q.add_argument("engine")
    c = sub.add_parser("campaign", help="kill and restart the query TRIALS times, then check the output")
    c.add_argument("--trials", type=int, default=14)
    c.add_argument("--engine", default="jvm", choices=("jvm", "python"))
    c.add_argument("--seed", type=int, default=int(time.time()))
    c.add_argument("--work", default=None, help="folder for the logs, output and checkpoint (default: a new one)")
    args = p.parse_args(argv)
    if args.cmd == "query":
        return query(args.logs, args.out, args.checkpoint, args.engine)
    import tempfile

    work = Path(args.work or tempfile.mkdtemp(prefix="kfmt-stream-kills-"))
    res = campaign(work, args.trials, args.engine, args.seed)
    print(f"stream kills ({res['engine']} engine, seed {args.seed}): {res['kills']} SIGKILLs and restarts, "
          f"{res['records']} records appended meanwhile, each in the output exactly once")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
