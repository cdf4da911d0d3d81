"""`make fuzz-capture`: damaged captures, and what `kfmt dump` says of them.

Real captures (the public ones in ../shared/fixtures/wire-captures, or any given) and one made here (a long
connection, frames cut into segments: :func:`synthetic`) are damaged packet by packet as captures are in life, and `kfmt dump --json` reads each damaged copy; what it reads is checked against what it
reads from the whole capture:

- a packet captured twice (a retransmission), or two packets swapped (captured out of order): the same messages
  and the same problems;
- a packet with TCP payload dropped (a segment the capture lacks): the same messages, or fewer with a problem
  said (exit 1); never one the capture did not hold;
- the file cut short at any byte: messages the whole capture holds only, and a problem where the cut falls inside
  a packet record or a message;
- one byte of a TCP payload flipped: a problem said, or at most the one exchange it landed in read differently
  (no checksum covers a Kafka request or response: Kafka's own readers would take it too).

And on every copy `kfmt dump --summary --json`, which checks batches by their CRCs without decompressing them,
says what `--json` says: the same exit status, problems and notes, and as many messages.

Never a traceback, never an exit status other than 0 or 1. Where the JVM engine is built, the JVM's capture reader
(the Spark kafka-capture source's) reads every damaged copy too, and must read what `kfmt dump` reads: the same
messages, as many problems and notes. Prints a table per damage and exits 1 on any breach.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PUBLIC = ROOT.parent / "shared" / "fixtures" / "wire-captures"
DAMAGES = ("duplicate", "swap", "drop", "cut", "flip")


def packets(path: Path) -> list[tuple[int, float, bytes]]:
    """(link type, time, frame) of each packet, as kfmt.capture reads them."""
    from kfmt.capture import PCAPNG, _pcap, _pcapng

    with path.open("rb") as f:
        magic = f.read(4)
        f.seek(0)
        return list(_pcapng(f, [0]) if magic == PCAPNG else _pcap(f, path, magic, [0]))


def write(path: Path, pkts: list[tuple[int, float, bytes]]) -> None:
    """``pkts`` as a nanosecond pcap file (one link type: the first packet's)."""
    import dpkt

    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, linktype=pkts[0][0] if pkts else 1, nano=True)
        for _, ts, frame in pkts:
            w.writepkt(frame, ts=ts or 0.0)


def observe(path: Path, seen: dict | None = None) -> tuple[int, Counter, int]:
    """(exit status, the messages `kfmt dump --json` reads, as comparable keys, the problems it says); ``seen``:
    given, what the JVM's reader must read of the same file is put there by its path (kfmt.spark.jvm.as_jvm_reads)."""
    from kfmt.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["dump", "--json", str(path)])
    msgs: Counter = Counter()
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    for j in rows:
        msgs[(j["client"], j["broker"], j["kind"], j["api"], j["version"], j["correlation_id"],
              json.dumps(j["body"], sort_keys=True))] += 1  # fmt: skip
    said = err.getvalue().splitlines()
    problems = sum(" problem: " in line for line in said)
    if seen is not None:
        from kfmt.spark.jvm import as_jvm_reads

        seen[str(path)] = ([as_jvm_reads(j) for j in rows], problems, sum(" note: " in line for line in said))
    return rc, msgs, problems


def summary_differs(path: Path) -> str | None:
    """Why `kfmt dump --summary --json` of ``path`` does not say what `kfmt dump --json` says of it (its exit status,
    problems, notes and number of messages), or is not byte for byte the definition's summary (a plain capture's is
    counted in one pass in C), or None."""
    from kfmt.tools.cli import main

    said = {}
    for how in (["--json"], ["--summary", "--json"]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["dump", *how, str(path)])
        lines = err.getvalue().splitlines()
        said[how[0]] = (rc, sum(" problem: " in x for x in lines), sum(" note: " in x for x in lines), out.getvalue())
    rc, problems, notes, text = said["--summary"]
    if _definitions_summary(path) != (rc, text):  # (a plain capture's is counted in one pass in C)
        return "--summary --json is not the definition's (the capture read in Python: KFMT_CAPTURE_PYTHON)"
    s = json.loads(text)
    messages = sum(a["requests"] + a["responses"] for a in s["apis"].values())
    mine = (rc, problems, notes, messages, s["problems"], s["notes"])
    rc, problems, notes, text = said["--json"]
    theirs = (rc, problems, notes, len(text.splitlines()), problems, notes)
    return (
        None if mine == theirs else f"--summary says (exit, problems, notes, messages) {mine[:4]}, --json {theirs[:4]}"
    )


def _definitions_summary(path: Path) -> tuple[int, str]:
    """(exit status, output) of `kfmt dump --summary --json` as the definition counts it (KFMT_CAPTURE_PYTHON: no
    one pass in C, the capture read in Python)."""
    from kfmt.tools.cli import main

    saved = os.environ.get("KFMT_CAPTURE_PYTHON")
    os.environ["KFMT_CAPTURE_PYTHON"] = "1"
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = main(["dump", "--summary", "--json", str(path)])
    finally:
        if saved is None:
            del os.environ["KFMT_CAPTURE_PYTHON"]
        else:
            os.environ["KFMT_CAPTURE_PYTHON"] = saved
    return rc, out.getvalue()


def jvm_differential(seen: dict) -> list[str]:
    """The JVM's capture reader (the kafka-capture source's) on every file of ``seen``: a breach for each whose
    messages, problems or notes are not what `kfmt dump` read ([] where the JVM engine is not built)."""
    from kfmt.spark import jvm

    if jvm.jar() is None or not seen:
        return []
    got = jvm.capture_check(list(seen))
    out = []
    for path, (rows, problems, notes) in seen.items():
        j = got.get(path)
        if j is None or (j["rows"], len(j["problem"]), len(j["note"])) != (rows, problems, notes) or j["error"]:
            out.append(f"{Path(path).name}: the JVM reads {len(j['rows']) if j else '-'} message(s), "
                       f"{len(j['problem']) if j else '-'} problem(s), not {len(rows)}, {problems}")  # fmt: skip
    return out


def _segment(pkt: tuple[int, float, bytes]):
    """The TCP segment a packet carries, as kfmt.capture reads it: (source, destination, seq, flags, payload)."""
    from kfmt.capture import tcp_segment

    return tcp_segment(pkt[0], pkt[2])


def _payload_at(pkt: tuple[int, float, bytes]) -> tuple[int, int] | None:
    """(where a packet's TCP payload begins in its frame, its length); None without one."""
    seg = _segment(pkt)
    if seg is None or not seg[4]:
        return None
    return pkt[2].rfind(seg[4]), len(seg[4])


def _inside(pkts: list, i: int) -> bool:
    """Whether packet ``i``'s payload lies between bytes the capture holds of its direction (a SYN or payload before
    it, payload after it): dropping it leaves a hole. At an edge, dropping it is a capture begun later or stopped
    sooner, which no reader can tell."""
    src, dst, seq, _, _ = _segment(pkts[i])
    before = after = False
    for j, p in enumerate(pkts):
        other = _segment(p)
        if j == i or other is None or other[:2] != (src, dst) or not other[4] and not other[3] & 0x02:
            continue
        d = (other[2] - seq) % 2**32
        if other[3] & 0x02 or 2**31 <= d:
            before = True
        elif 0 < d < 2**31:
            after = True
    return before and after


def damaged(rng: random.Random, pkts: list, how: str, raw: bytes) -> tuple[list | bytes, str]:
    """A damaged copy (a packet list, or the file's bytes for ``cut``) and what was done."""
    carrying = [i for i, p in enumerate(pkts) if _payload_at(p) is not None]
    out = list(pkts)
    if how == "duplicate":
        i = rng.choice(carrying)
        out.insert(i + rng.randint(1, 3), pkts[i])
        return out, f"packet {i + 1} again"
    if how == "swap":
        i = rng.randrange(len(pkts) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
        return out, f"packets {i + 1} and {i + 2} swapped"
    if how == "drop":
        i = rng.choice(carrying)
        del out[i]
        return out, f"packet {i + 1} dropped" + ("" if _inside(pkts, i) else " (at its stream's edge)")
    if how == "cut":
        n = rng.randrange(24, len(raw))
        return raw[:n], f"cut at byte {n}"
    i = rng.choice(carrying)
    at, size = _payload_at(pkts[i])  # type: ignore[misc]
    k = at + rng.randrange(size)
    frame = bytearray(pkts[i][2])
    frame[k] ^= 1 << rng.randrange(8)
    out[i] = (pkts[i][0], pkts[i][1], bytes(frame))
    return out, f"packet {i + 1} byte {k} flipped"


def breach(how: str, did: str, whole: tuple, got: tuple) -> str | None:
    """Why what kfmt says of the damaged copy breaks the rule for ``how`` (None: it keeps it)."""
    rc0, m0, p0 = whole
    rc, m, p = got
    if rc not in (0, 1):
        return f"exit {rc}"
    invented, lost = m - m0, m0 - m
    if how in ("duplicate", "swap"):
        return None if (m, p) == (m0, p0) else f"messages or problems changed ({len(lost)} lost, {p} vs {p0} problems)"
    if how == "drop":
        if invented:
            return f"{sum(invented.values())} message(s) the capture does not hold"
        if lost and "edge" not in did and not (rc == 1 and p > p0):
            return f"{sum(lost.values())} message(s) lost unsaid"
        return None
    if how == "cut":
        return f"{sum(invented.values())} message(s) the capture does not hold" if invented else None
    changed = max(sum(invented.values()), sum(lost.values()))
    return None if rc == 1 or changed <= 2 else f"{changed} messages read differently, nothing said"


def synthetic(path: Path, seed: int) -> Path:
    """A capture made here, as long connections have them: one connection opened with its handshake, 24 exchanges
    (ApiVersions, Metadata, Produce with a batch of records and its answer), each frame cut into one to three
    segments, so that a segment dropped inside it leaves a hole between bytes the capture holds."""
    import socket

    import dpkt

    import kfmt
    import kfmt.protocol as P

    rng = random.Random(seed)
    batch = kfmt.encode_batch([kfmt.Record(key=b"k%d" % i, value=b"v" * 40) for i in range(5)]).hex()
    framed = []
    for cid in range(1, 25):
        kind = cid % 3
        if kind == 0:
            req = P.write_request(18, 3, {"ClientSoftwareName": "fuzz", "ClientSoftwareVersion": "1"},
                                  correlation_id=cid, client_id="fuzz")  # fmt: skip
            resp = P.write_response(18, 3, {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 0, "MinVersion": 0,
                                                                         "MaxVersion": 9}], "ThrottleTimeMs": 0},
                                    correlation_id=cid)  # fmt: skip
        elif kind == 1:
            req = P.write_request(3, 12, {"Topics": [{"Name": "orders", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}],
                                          "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False},
                                  correlation_id=cid, client_id="fuzz")  # fmt: skip
            resp = P.write_response(3, 12, {"Brokers": [{"NodeId": 0, "Host": "b", "Port": 9092, "Rack": None}],
                                            "ClusterId": "c", "ControllerId": 0, "Topics": [], "ThrottleTimeMs": 0},
                                    correlation_id=cid)  # fmt: skip
        else:
            req = P.write_request(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [
                {"Name": "orders", "PartitionData": [{"Index": 0, "Records": batch}]}]}, correlation_id=cid,
                client_id="fuzz")  # fmt: skip
            resp = P.write_response(0, 9, {"Responses": [{"Name": "orders", "PartitionResponses": [
                {"Index": 0, "ErrorCode": 0, "BaseOffset": cid, "LogAppendTimeMs": -1, "LogStartOffset": 0, "RecordErrors": [],
                 "ErrorMessage": None}]}], "ThrottleTimeMs": 0}, correlation_id=cid)  # fmt: skip
        framed += [(True, len(req).to_bytes(4, "big") + req), (False, len(resp).to_bytes(4, "big") + resp)]
    a, b = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")
    seq = {True: 1000, False: 5000}
    segments = [(True, dpkt.tcp.TH_SYN, 999, b""), (False, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, 4999, b"")]
    for up, data in framed:
        cuts = sorted(rng.sample(range(1, len(data)), min(rng.randint(0, 2), len(data) - 1)))
        for lo, hi in zip([0, *cuts], [*cuts, len(data)]):
            segments.append((up, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, seq[up], data[lo:hi]))
            seq[up] += hi - lo
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i, (up, flags, sq, data) in enumerate(segments):
            tcp = dpkt.tcp.TCP(sport=40000 if up else 9092, dport=9092 if up else 40000, flags=flags, seq=sq, data=data)
            ip = dpkt.ip.IP(src=a if up else b, dst=b if up else a, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
            ip.len = len(ip)
            w.writepkt(bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)), ts=i / 1000)
    return path


def campaign(paths: list[Path], rounds: int, seed: int, tmp: Path) -> int:
    rng = random.Random(seed)
    tally = {how: Counter() for how in DAMAGES}
    breaches = []
    seen: dict = {}  # what the JVM must read of each damaged copy (each kept under a name of its own)
    (tmp / "copies").mkdir(exist_ok=True)
    for k, path in enumerate(paths):
        pkts, raw = packets(path), path.read_bytes()
        whole = observe(path)
        if len(pkts) < 2 or not any(_payload_at(p) for p in pkts):
            continue  # nothing to swap or damage
        for r in range(rounds):
            how = DAMAGES[r % len(DAMAGES)]
            copy, did = damaged(rng, pkts, how, raw)
            dst = tmp / "copies" / f"{k}-{r}-{how}.pcap"
            if isinstance(copy, bytes):
                dst = dst.with_suffix(path.suffix)
                dst.write_bytes(copy)
            else:
                write(dst, copy)
            try:
                got = observe(dst, seen)
            except Exception as e:  # noqa: BLE001 - a traceback is the breach to report
                got, why = None, f"raised {type(e).__name__}: {e}"
            else:
                why = breach(how, did, whole, got) or summary_differs(dst)
            tally[how]["copies"] += 1
            tally[how]["said"] += got is not None and got[0] == 1
            if why:
                tally[how]["breaches"] += 1
                breaches.append(f"{path.name}: {did}: {why}")
    jvm = jvm_differential(seen)
    breaches += [f"jvm: {b}" for b in jvm]
    print("| damage | copies | problems said (exit 1) | breaches |")
    print("|---|---|---|---|")
    for how in DAMAGES:
        t = tally[how]
        print(f"| {how} | {t['copies']} | {t['said']} | {t['breaches']} |")
    for b in breaches:
        print(f"BREACH {b}")
    if seen:
        print(f"the JVM's capture reader (kafka-capture) on the {len(seen)} copies: {len(jvm)} differ from kfmt dump")
    print(f"{sum(t['copies'] for t in tally.values())} damaged copies, {len(breaches)} breach(es)")
    return 1 if breaches else 0


def main(argv=None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="*", type=Path, help="captures to damage (default: the public ones)")
    ap.add_argument("--rounds", type=int, default=200, help="damaged copies per capture (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = args.captures or [*sorted(p for p in PUBLIC.rglob("*") if p.suffix in (".pcap", ".pcapng")),
                                  synthetic(Path(tmp) / "synthetic.pcap", args.seed)]  # fmt: skip
        return campaign(paths, args.rounds, args.seed, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
