"""`make bench`, Kafka's network protocol: reading and writing three messages, kfmt's backends beside kafka-python
3.0.12's protocol classes (Kafka's JSON specs loaded at run time), in instructions per message (valgrind's
callgrind, which counts the same on a busy machine) and in microseconds (median of the rounds, one process).

Messages (built with ``kfmt.protocol.write_*`` from JSON bodies; kafka-python reads every one of them):
- a Produce v9 request: 10 partitions, each one 100-record v2 batch (10-byte keys, 100-byte values), records
  carried undecoded (what a broker or proxy routing the request needs);
- a Metadata v12 response: 100 topics x 10 partitions, 3 replicas each;
- a Fetch v12 response: 10 partitions, each one 100-record batch.

Read: the frame's bytes in, a message object out (kfmt: ``read_request`` / ``read_response``, which walk the
frame, every length, count, limit and version checked, and build the header and body values when first asked
for: kfmt.protocol.Message; kafka-python: ``Cls.decode``, which builds every value). "Read, body built": the
same, then the header's and body's values built (kfmt: ``m.header``, ``m.body``, a records field kept as a view of the frame, decoded when
asked; kafka-python: as read). Write and "write, one
bytes": see :data:`OPS`. Requests are read with their header; kafka-python 3.0.12 reads a response's header only
with a client's state, so responses are read and written as their body alone there, and with the 4-byte
correlation id (and tags) by kfmt: kfmt does a little more.

Callgrind: each cell runs in its own process, a run of 3 x LOOPS minus a run of LOOPS, over 2 x LOOPS messages
(the interpreter's start-up and the imports cancel out).
"""

from __future__ import annotations

import argparse
import base64
import functools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kfmt
import kfmt.protocol as P

IMPLS = ("kfmt native", "kfmt python", "kafka-python 3.0.12")
MESSAGES = ("Produce v9 request", "Metadata v12 response", "Fetch v12 response")
#: read: bytes to a message object (kfmt: walked, values built when asked for); "read, body built": and its body
#: value built (kafka-python: read again); write: the message to what a socket sends (kfmt: ``encode_parts()``, a list
#: of buffers for a gather write with the record sets by reference; kafka-python, which has no gather writer:
#: ``encode()``); "write, one bytes": to one bytes object (kfmt: ``encode()``; kafka-python: ``encode()`` again)
OPS = ("read", "read, body built", "write", "write, one bytes")
LOOPS = 20


def _batch(base: int) -> str:
    recs = [kfmt.Record(key=b"k%09d" % i, value=bytes(100), timestamp=1_700_000_000_000 + i) for i in range(100)]
    return kfmt.encode_batch(recs, base_offset=base).hex()


def _uuid(n: int) -> str:
    """A topic id as Kafka's JSON writes a Uuid (URL-safe base64 of its 16 bytes, unpadded)."""
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).decode().rstrip("=")


@functools.cache
def messages() -> dict[str, tuple[str, int, int, bytes]]:
    """Each message: (kind, api key, version, frame); built once."""
    produce = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 30000,
        "TopicData": [
            {"Name": "orders", "PartitionData": [{"Index": p, "Records": _batch(p * 1000)} for p in range(10)]}
        ],
    }
    metadata = {
        "ThrottleTimeMs": 0,
        "Brokers": [{"NodeId": n, "Host": f"broker-{n}.example", "Port": 9092, "Rack": None} for n in range(3)],
        "ClusterId": "kfmt-bench",
        "ControllerId": 0,
        "Topics": [
            {
                "ErrorCode": 0,
                "Name": f"topic-{t:03d}",
                "TopicId": _uuid(t),
                "IsInternal": False,
                "TopicAuthorizedOperations": -2147483648,
                "Partitions": [
                    {
                        "ErrorCode": 0,
                        "PartitionIndex": p,
                        "LeaderId": p % 3,
                        "LeaderEpoch": 5,
                        "ReplicaNodes": [0, 1, 2],
                        "IsrNodes": [0, 1, 2],
                        "OfflineReplicas": [],
                    }
                    for p in range(10)
                ],
            }
            for t in range(100)
        ],
    }
    fetch = {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0, "Responses": [
        {"Topic": "orders", "Partitions": [
            {"PartitionIndex": p, "ErrorCode": 0, "HighWatermark": 100, "LastStableOffset": 100, "LogStartOffset": 0,
             "AbortedTransactions": None, "PreferredReadReplica": -1, "Records": _batch(0)} for p in range(10)]}]}  # fmt: skip
    return {
        MESSAGES[0]: ("request", 0, 9, P.write_request(0, 9, produce, correlation_id=7, client_id="bench")),
        MESSAGES[1]: ("response", 3, 12, P.write_response(3, 12, metadata, correlation_id=7)),
        MESSAGES[2]: ("response", 1, 12, P.write_response(1, 12, fetch, correlation_id=7)),
    }


def _kafka_python(kind: str, key: int):
    """kafka-python's protocol class for the API's ``kind``, found as the suite finds it (tests/test_protocol.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import test_protocol

    return test_protocol._kafka_python_classes()[(key, kind)]


def job(impl: str, message: str) -> dict:
    """Each op of :data:`OPS`: a zero-argument call, one message read or written."""
    kind, key, version, frame = messages()[message]
    if impl.startswith("kfmt"):
        backend = impl.split()[1]
        if kind == "request":

            def read():
                return P.read_request(frame, backend=backend)
        else:

            def read():
                return P.read_response(frame, key, version, backend=backend)

        def built():
            m = read()
            return m.header, m.body

        m = read()
        assert m.encode() == frame and b"".join(m.encode_parts()) == frame
        return dict(zip(OPS, (read, built, m.encode_parts, m.encode)))
    cls = _kafka_python(kind, key)
    if kind == "request":

        def read():
            return cls.decode(frame, version=version, header=True)

        obj = read()
        assert obj.encode(version=version, header=True) == frame
        write = functools.partial(obj.encode, version=version, header=True)
        return dict(zip(OPS, (read, read, write, write)))
    body = frame[4 + (P.api(key).response_header_version(version) == 1) :]

    def read():
        return cls.decode(body, version=version)

    obj = read()
    assert obj.encode() == body
    return dict(zip(OPS, (read, read, obj.encode, obj.encode)))


def timed(rounds: int) -> dict:
    out: dict = {}
    for message in MESSAGES:
        for impl in IMPLS:
            for op, call in job(impl, message).items():
                samples = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    for _ in range(LOOPS):
                        call()
                    samples.append((time.perf_counter() - t) / LOOPS)
                out[(message, impl, op)] = statistics.median(samples) * 1e6
    return out


def _instructions(impl: str, message: str, op: str, loops: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
               "--one", impl, message, op, str(loops)]  # fmt: skip
        # one hash seed for every run: with random seeds, the order of sets and dicts (and so which lazy work
        # runs when) differs between the two runs a cell subtracts, by some 10,000 instructions per message
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"callgrind failed for {impl} / {message} / {op}: {r.stderr[-500:]}")
        return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def counted() -> dict:
    out = {}
    for message in MESSAGES:
        for impl in IMPLS:
            for op in OPS:
                many = _instructions(impl, message, op, 3 * LOOPS)
                few = _instructions(impl, message, op, LOOPS)
                out[(message, impl, op)] = (many - few) / (2 * LOOPS)
    return out


def table(figures: dict, unit: str, fmt: str) -> str:
    lines = [f"| message | op | {' | '.join(IMPLS)} | kafka-python / native | kafka-python / python |",
             "|---|---|" + "---|" * (len(IMPLS) + 2)]  # fmt: skip
    for message in MESSAGES:
        for op in OPS:
            vals = [figures[(message, impl, op)] for impl in IMPLS]
            lines.append(f"| {message} | {op} | " + " | ".join(fmt.format(v) for v in vals)
                         + f" | {vals[2] / vals[0]:.1f}x | {vals[2] / vals[1]:.1f}x |")  # fmt: skip
    return f"{unit}\n\n" + "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-callgrind", action="store_true", help="timings only")
    ap.add_argument("--one", nargs=4, metavar=("IMPL", "MESSAGE", "OP", "LOOPS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        impl, message, op, loops = args.one
        call = job(impl, message)[op]
        for _ in range(int(loops)):
            call()
        return 0
    for message, (*_, frame) in messages().items():
        print(f"{message}: {len(frame) + 4:,} bytes framed")
    print()
    print(table(timed(args.rounds), f"Microseconds per message (median of {args.rounds} rounds of {LOOPS})", "{:.1f}"))
    if not args.no_callgrind:
        import shutil

        if shutil.which("valgrind") is None:
            print("\n(valgrind not found: no instruction counts)")
            return 0
        print()
        print(table(counted(), "Instructions per message (callgrind)", "{:,.0f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
