"""`make bench`, captured traffic: `kfmt dump --json` and `kfmt dump --summary` beside `tshark -T json` and
`tshark -q -z io,phs` (Debian's tshark 4.0, the Kafka dissector on) on the same capture, in MB of capture per
second (wall clock, best of the runs, one process each), and each one's peak memory; then Spark's kafka-capture
source beside Parquet files of the same rows (``--no-spark`` leaves it out).

The capture is made here (``--mb``, default 200): connections of a producer and a consumer against one broker,
each Produce v7 request carrying a batch of 100 records compressed with lz4, zstd, gzip or snappy in turn and its
answer, each Fetch v11 response carrying such batches of 10 partitions; frames cut into 1,460-byte TCP segments as
an Ethernet capture holds them. Versions tshark 4.0 reads (Produce up to v8, Fetch up to v11), so that both tools
read every message. ``kfmt dump --json`` writes every message with its records decoded; tshark -T json writes
every packet's dissection (which does not decompress... it does: its Kafka dissector decompresses batches).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kfmt
import kfmt.protocol as P

CODECS = ("lz4", "zstd", "gzip", "snappy")
MSS = 1460


def _batch(rng: random.Random, base: int, codec: str) -> str:
    words = [b"order", b"payment", b"refund", b"user", b"click", b"view", b"cart"]
    recs = [kfmt.Record(key=b"k%08d" % (base + i), value=b" ".join(rng.choice(words) for _ in range(30)),
                        timestamp=1_700_000_000_000 + base + i) for i in range(100)]  # fmt: skip
    return kfmt.encode_batch(recs, base_offset=base, codec=codec).hex()


def exchanges(rng: random.Random):
    """(request frame, response frame) pairs, forever: a Produce v7 exchange, then a Fetch v11 one, in turn."""
    offset, cid = 0, 0
    while True:
        cid += 1
        codec = CODECS[cid % len(CODECS)]
        produce = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 30000, "TopicData": [
            {"Name": "orders", "PartitionData": [{"Index": cid % 10, "Records": _batch(rng, offset, codec)}]}]}  # fmt: skip
        answer = {"Responses": [{"Name": "orders", "PartitionResponses": [
            {"Index": cid % 10, "ErrorCode": 0, "BaseOffset": offset, "LogAppendTimeMs": -1, "LogStartOffset": 0}]}],
            "ThrottleTimeMs": 0}  # fmt: skip
        yield (P.write_request(0, 7, produce, correlation_id=cid, client_id="producer"),
               P.write_response(0, 7, answer, correlation_id=cid))  # fmt: skip
        fetch = {"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 52428800, "IsolationLevel": 0,
                 "SessionId": 0, "SessionEpoch": -1, "Topics": [{"Topic": "orders", "Partitions": [
                     {"Partition": p, "CurrentLeaderEpoch": -1, "FetchOffset": offset, "LogStartOffset": -1,
                      "PartitionMaxBytes": 1048576} for p in range(10)]}], "ForgottenTopicsData": [], "RackId": ""}  # fmt: skip
        data = {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0, "Responses": [{"Topic": "orders", "Partitions": [
            {"PartitionIndex": p, "ErrorCode": 0, "HighWatermark": offset + 100, "LastStableOffset": offset + 100,
             "LogStartOffset": 0, "AbortedTransactions": None, "PreferredReadReplica": -1,
             "Records": _batch(rng, offset, CODECS[(cid + p) % len(CODECS)])} for p in range(10)]}]}  # fmt: skip
        cid += 1
        yield (P.write_request(1, 11, fetch, correlation_id=cid, client_id="consumer"),
               P.write_response(1, 11, data, correlation_id=cid))  # fmt: skip
        offset += 100


def make_capture(path: Path, mb: int, seed: int = 1) -> int:
    """A capture of at least ``mb`` MB at ``path`` (see the module's text); returns its messages."""
    import socket

    import dpkt

    rng = random.Random(seed)
    a, b = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")
    seq = {True: 1000, False: 5000}
    n, t, size = 0, 1_700_000_000.0, 0

    def packet(w, up: bool, flags: int, payload: bytes) -> int:
        tcp = dpkt.tcp.TCP(sport=40000 if up else 9092, dport=9092 if up else 40000, flags=flags, seq=seq[up],
                           ack=seq[not up], data=payload)  # fmt: skip
        ip = dpkt.ip.IP(src=a if up else b, dst=b if up else a, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
        ip.len = len(ip)
        frame = bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip))
        w.writepkt(frame, ts=t)
        seq[up] = (seq[up] + len(payload) + (1 if flags & dpkt.tcp.TH_SYN else 0)) % 2**32
        return 16 + len(frame)

    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=True)
        size += packet(w, True, dpkt.tcp.TH_SYN, b"") + packet(w, False, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"")
        for req, resp in exchanges(rng):
            for up, frame in ((True, req), (False, resp)):
                data = len(frame).to_bytes(4, "big") + frame
                for i in range(0, len(data), MSS):
                    t += 0.00001
                    size += packet(w, up, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, data[i : i + MSS])
                n += 1
            if size >= mb << 20:
                return n
    return n


def timed(cmd: list[str], runs: int) -> tuple[float, float]:
    """(best wall seconds, peak resident MB) of ``cmd`` (its own, from wait4), its output thrown away."""
    best, peak = float("inf"), 0.0
    for _ in range(runs):
        with tempfile.TemporaryFile() as err:
            t = time.perf_counter()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(p.pid, 0)
            best = min(best, time.perf_counter() - t)
            p.returncode = code = os.waitstatus_to_exitcode(status)
            if code != 0:
                err.seek(0)
                raise SystemExit(f"{' '.join(cmd)} exited {code}: {err.read()[-500:].decode(errors='replace')}")
        peak = max(peak, usage.ru_maxrss / 1024)
    return best, peak


SPARK = r"""
import json, os, sys, time
os.environ["PYSPARK_SUBMIT_ARGS"] = "--driver-memory 4g pyspark-shell"  # (Parquet's reader: 4,096 rows of bodies)
import kfmt.spark
from kfmt.spark.jobs import session

cap, out = sys.argv[1:3]
spark = session("local[2]", "kfmt-bench-capture")
kfmt.spark.register(spark)


def scan(df, what):  # every row's every column read: a sum over its text and bytes
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        df.selectExpr(f"sum({what})").collect()
        best = min(best, time.perf_counter() - t)
    return best


rows = {}
for name, reader in (("messages", spark.read.format("kafka-capture")),
                     ("records", spark.read.format("kafka-capture").option("rows", "records"))):
    df = reader.load(cap)
    what = ("length(header) + length(body) + frame" if name == "messages"
            else "length(key) + length(value) + offset + frame")
    df.write.mode("overwrite").parquet(f"{out}/{name}.parquet")
    pq = spark.read.parquet(f"{out}/{name}.parquet")
    rows[name] = {"rows": df.count(), "capture": scan(df, what), "parquet": scan(pq, what)}
print(json.dumps(rows))
spark.stop()
"""


def spark_rows(cap: Path, tmp: str) -> dict:
    """The Spark source beside Parquet: each kind of row (messages, records) read from the capture by kafka-capture
    and from Parquet files of the same rows, a full scan each (best of three, the session warm)."""
    import json

    r = subprocess.run([sys.executable, "-c", SPARK, str(cap), tmp], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"the Spark run failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="capture size in MB (default 200)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each tool (best taken; default 1)")
    ap.add_argument("--no-tshark", action="store_true", help="kfmt only")
    ap.add_argument("--no-spark", action="store_true", help="without the Spark source beside Parquet")
    args = ap.parse_args(argv)
    kfmt_exe = str(Path(sys.executable).parent / "kfmt")
    with tempfile.TemporaryDirectory() as tmp:
        cap = Path(tmp) / "traffic.pcap"
        n = make_capture(cap, args.mb)
        mb = cap.stat().st_size / 1e6
        print(f"capture: {mb:,.1f} MB, {n:,} messages (Produce v7 and Fetch v11, batches in {', '.join(CODECS)})\n")
        tools = [("kfmt dump --json", [kfmt_exe, "dump", "--json", str(cap)]),
                 ("kfmt dump --summary", [kfmt_exe, "dump", "--summary", str(cap)]),
                 ("kfmt dump --summary --deep", [kfmt_exe, "dump", "--summary", "--deep", str(cap)])]  # fmt: skip
        tshark = shutil.which("tshark")
        if tshark and not args.no_tshark:
            env_ports = ["-d", "tcp.port==9092,kafka"]
            tools += [("tshark -T json", [tshark, "-r", str(cap), *env_ports, "-T", "json"]),
                      ("tshark -q -z io,phs", [tshark, "-r", str(cap), *env_ports, "-q", "-z", "io,phs"])]  # fmt: skip
        warm = Path(tmp) / "warm.pcap"  # an untimed run first: Python's bytecode written, as an installation has it
        make_capture(warm, 1)
        for how in ("--json", "--summary"):
            subprocess.run([kfmt_exe, "dump", how, str(warm)], stdout=subprocess.DEVNULL, check=True)
        rows = {}
        for name, cmd in tools:
            rows[name] = timed(cmd, args.runs)
        print("| tool | seconds | MB/s | peak RSS MB |")
        print("|---|---|---|---|")
        for name, (s, peak) in rows.items():
            print(f"| {name} | {s:.2f} | {mb / s:.1f} | {peak:.0f} |")
        if "tshark -T json" in rows:
            print(f"\nkfmt dump --json / tshark -T json throughput: "
                  f"{rows['tshark -T json'][0] / rows['kfmt dump --json'][0]:.2f}x; kfmt dump --summary / tshark -q -z "
                  f"io,phs: {rows['tshark -q -z io,phs'][0] / rows['kfmt dump --summary'][0]:.2f}x (with --deep: "
                  f"{rows['tshark -q -z io,phs'][0] / rows['kfmt dump --summary --deep'][0]:.2f}x)")  # fmt: skip
        if not args.no_spark:
            from kfmt.spark import jvm

            if jvm.jar() is None:
                print("\n(the Spark source: the JVM engine is not built here)")
                return 0
            print(
                "\nSpark, local[2]: kafka-capture beside Parquet of the same rows (a full scan, best of 3, seconds)\n"
            )
            print("| rows | count | kafka-capture | Parquet | capture MB/s | Parquet / capture |")
            print("|---|---|---|---|---|---|")
            for kind, x in spark_rows(cap, tmp).items():
                print(f"| {kind} | {x['rows']:,} | {x['capture']:.2f} | {x['parquet']:.2f} | {mb / x['capture']:.1f} | "
                      f"{x['parquet'] / x['capture']:.2f}x |")  # fmt: skip
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # (the runs use the bytecode an installation keeps)
    sys.exit(main())
