"""The kafka-capture Spark source: captures decoded in the JVM (kfmt.jvm.Capture: pcap and pcapng, TCP put back
together, Kafka's framing, requests paired with responses, record sets read by kafka-log's reader), held to what
`kfmt dump` reads of the same files: the same rows, the same problems and notes, on the public captures, the same
captures behind every link layer, captures made here, and hundreds of damaged copies of them; and the source's
reads: folders, globs, rows=records, damage failing, skipped or quarantined, a capture split by connection."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import pytest

from kfmt.spark.jvm import as_jvm_reads
from kfmt.tools.cli import main

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "fixtures" / "wire-captures"


def _jar():
    from kfmt.spark import jvm

    if jvm.jar() is None:
        pytest.skip("the JVM engine is not built here")
    return jvm


def dump(path, *extra) -> tuple[list[dict], list[str], list[str], int]:
    """What `kfmt dump --json` prints of a capture: (its objects, its problems, its notes, its exit status)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["dump", "--json", *extra, str(path)])
    said = err.getvalue().splitlines()
    return ([json.loads(line) for line in out.getvalue().splitlines()], [x for x in said if ": problem: " in x],
            [x for x in said if ": note: " in x], status)  # fmt: skip


def corpus(d: Path, damaged_per_capture: int) -> list[Path]:
    """Captures to read both ways: the public ones, one of them behind every link layer kfmt reads, two made here
    (fuzz.capture.synthetic), and damaged copies (packets repeated, swapped, dropped, bytes flipped, files cut)."""
    from test_capture import _relinked

    from fuzz.capture import DAMAGES, damaged, packets, synthetic, write

    paths = sorted(PUBLIC.rglob("*.pcap*"))
    for how in ("vlan", "qinq", "sll", "sll2", "null", "raw", "ipv6"):
        _relinked(PUBLIC / "ntop+nDPI/kafka.pcapng", d / f"relinked-{how}.pcap", how)
        paths.append(d / f"relinked-{how}.pcap")
    made = [synthetic(d / "synthetic-1.pcap", 1), synthetic(d / "synthetic-2.pcap", 2)]
    paths += made
    rng = random.Random(7)
    sources = [*made, PUBLIC / "ntop+nDPI/kafka.pcapng", PUBLIC / "40t+go-sniffer/kafka.pcap",
               PUBLIC / "deepflowio+deepflow/mixed-with-unsupported.pcap"]  # fmt: skip
    for k, src in enumerate(sources):
        pkts, raw = packets(src), src.read_bytes()
        for r in range(damaged_per_capture):
            how = DAMAGES[r % len(DAMAGES)]
            copy, _ = damaged(rng, pkts, how, raw)
            dst = d / f"damaged-{k}-{r}-{how}{src.suffix if isinstance(copy, bytes) else '.pcap'}"
            if isinstance(copy, bytes):
                dst.write_bytes(copy)
            else:
                write(dst, copy)
            paths.append(dst)
    return paths


def test_the_jvm_reads_every_capture_as_kfmt_dump_does(tmp_path):
    """Every capture of the corpus read by the JVM's reader (the kafka-capture source's) and by `kfmt dump --json`:
    the same messages (time, packet number, ends, kind, API, version, correlation id, client id, latency, header,
    body, bytes after the body, notes), and as many problems and notes, damaged copies included."""
    jvm = _jar()
    paths = corpus(tmp_path, 40)
    got = jvm.capture_check([str(p) for p in paths])
    # each direction through its spool file (past 100 bytes, or 1,000 held by all), read back 64 bytes at a time:
    # the same as read in memory
    assert jvm.capture_check([str(p) for p in paths], spool=(100, 64, 1000)) == got
    differ, rows, problems, notes = [], 0, 0, 0
    for p in paths:
        want, said, noted, status = dump(p)
        j = got[str(p)]
        same = [as_jvm_reads(r) for r in want] == j["rows"] and (len(said), len(noted)) == (
            len(j["problem"]), len(j["note"])) and not j["error"]  # fmt: skip
        if not same:
            differ.append((p.name, len(want), len(j["rows"]), said[:2], j["problem"][:2], noted[:2], j["note"][:2]))
        rows, problems, notes = rows + len(want), problems + len(said), notes + len(noted)
        assert (status == 1) == bool(said)
    assert not differ, (len(differ), differ[:3])
    assert len(paths) >= 200 and rows >= 4000 and problems >= 80 and notes >= 250, (len(paths), rows, problems, notes)
    # and the records the messages carry (rows=records), damaged batches left out alike
    records = jvm.capture_check([str(p) for p in paths], records=True)
    differ, total = [], 0
    for p in paths:
        want = [_wire_record(r) for r in dump(p, "--records")[0]]
        total += len(want)
        if records[str(p)]["rows"] != want:
            differ.append((p.name, len(want), len(records[str(p)]["rows"])))
    assert not differ and total >= 1000, (len(differ), differ[:3], total)


def _wire_record(r: dict) -> dict:
    """A record of `kfmt dump --records --json` as the JVM's check tool gives it (the capture's columns, where the
    record is, its bytes as hex; a header key that is not UTF-8 as Kafka reads it)."""

    def hexed(v):
        return None if v is None else _payload(v).hex()

    keys = ("packet_time", "frame", "client", "broker", "kind", "api", "version", "topic", "partition", "position",
            "offset", "timestamp")  # fmt: skip
    return {k: r[k] for k in keys} | {"key": hexed(r["key"]), "value": hexed(r["value"]), "headers": [
        [k["kafka"] if isinstance(k, dict) else k, hexed(v)] for k, v in r["headers"]]}  # fmt: skip


def test_the_jvm_reads_a_capture_larger_than_its_heap(tmp_path):
    """A 150 MB capture (one connection: 150 Produce requests of a 1 MB batch each, and their answers) read by the
    JVM's capture reader with a 96 MB heap: every message, no problem (each direction spooled to a file and read back
    through a window, rows given as the exchanges settle; held in memory, the capture alone would not fit)."""
    import socket

    import dpkt

    import kfmt
    import kfmt.protocol as P

    jvm = _jar()
    batch = kfmt.encode_batch([kfmt.Record(key=b"k%d" % i, value=bytes([i % 251]) * 1000) for i in range(1000)]).hex()
    cap, seq = tmp_path / "large.pcap", {True: 1000, False: 5000}
    with cap.open("wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for cid in range(1, 151):
            req = P.write_request(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [
                {"Name": "big", "PartitionData": [{"Index": 0, "Records": batch}]}]}, correlation_id=cid,
                client_id="big")  # fmt: skip
            resp = P.write_response(0, 9, {"Responses": [{"Name": "big", "PartitionResponses": [
                {"Index": 0, "ErrorCode": 0, "BaseOffset": cid, "LogAppendTimeMs": -1, "LogStartOffset": 0,
                 "RecordErrors": [], "ErrorMessage": None}]}], "ThrottleTimeMs": 0}, correlation_id=cid)  # fmt: skip
            for up, frame in ((True, req), (False, resp)):
                data = len(frame).to_bytes(4, "big") + frame
                for i in range(0, len(data), 60000):
                    tcp = dpkt.tcp.TCP(sport=40000 if up else 9092, dport=9092 if up else 40000, flags=dpkt.tcp.TH_ACK,
                                       seq=seq[up], data=data[i : i + 60000])  # fmt: skip
                    a, b = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")
                    ip = dpkt.ip.IP(src=a if up else b, dst=b if up else a, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
                    ip.len = len(ip)
                    w.writepkt(bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)), ts=cid)
                    seq[up] += len(tcp.data)
    assert cap.stat().st_size > 150e6
    got = jvm.capture_check([str(cap)], heap="96m")[str(cap)]
    assert not got["error"] and not got["problem"] and len(got["rows"]) == 300, (got["error"], got["problem"][:2])
    assert [r["correlation_id"] for r in got["rows"][::2]] == list(range(1, 151))


def test_the_jvm_reads_the_connections_a_port_names_as_kfmt_dump_does(tmp_path):
    """--port (the source's option port): only the connections of that port, each side by it."""
    jvm = _jar()
    nd = PUBLIC / "ntop+nDPI/kafka.pcapng"
    for port, n in ((9092, 25), (1, 0)):
        want, said, noted, _ = dump(nd, "--port", str(port))
        got = jvm.capture_check([str(nd)], port=port)[str(nd)]
        assert [as_jvm_reads(r) for r in want] == got["rows"] and len(want) == n
        assert (len(said), len(noted)) == (len(got["problem"]), len(got["note"]))


def test_a_file_that_is_not_a_capture_is_one_line(tmp_path):
    jvm = _jar()
    p = tmp_path / "notes.txt"
    p.write_text("hello, world")
    got = jvm.capture_check([str(p)])[str(p)]
    assert got["rows"] == [] and got["error"] == [f"{p}: not a pcap or pcapng capture (its first bytes are 68656c6c)"]


def _spark_messages(df) -> dict[str, list[dict]]:
    """The source's message rows by capture, as `kfmt dump --json`'s objects (JSON text parsed, absent keys left
    out as kfmt dump leaves them)."""
    out: dict[str, list[dict]] = {}
    for r in df.orderBy("capture").collect():  # (each file one task: its rows in their order)
        d = r.asDict()
        o = {k: d[k] for k in ("time", "frame", "client", "broker", "kind", "api", "api_key", "version",
                               "correlation_id")}  # fmt: skip
        o |= {"client_id": d["client_id"]} if d["kind"] == "request" else {"latency_ms": d["latency_ms"]}
        o |= {"header": json.loads(d["header"]), "body": None if d["body"] is None else json.loads(d["body"])}
        o |= ({"trailing": d["trailing"]} if d["trailing"] is not None else {}) | (
            {"notes": list(d["notes"])} if d["notes"] else {})  # fmt: skip
        out.setdefault(d["capture"], []).append(o)
    return out


def test_spark_reads_a_folder_of_captures_as_kfmt_dump_does(spark, tmp_path):
    """`spark.read.format("kafka-capture").load(folder)`: every capture under it (a file that is not one left
    aside), a row per request and response with kfmt dump --json's columns; a glob and a list of paths alike."""
    _jar()
    df = spark.read.format("kafka-capture").load(str(PUBLIC))
    got = _spark_messages(df)
    files = sorted(PUBLIC.rglob("*.pcap*"))
    assert sorted(got) == sorted(map(str, files)) and len(files) == 15  # (the folder's README and raw files aside)
    for p in files:
        assert got[str(p)] == [as_jvm_reads(r) for r in dump(p)[0]], p
    pattern = PUBLIC / "deepflowio+deepflow" / "0*-v*.pcap"
    globbed = spark.read.format("kafka-capture").load(str(pattern))
    matched = sorted(pattern.parent.glob(pattern.name))
    assert globbed.count() == sum(len(dump(p)[0]) for p in matched) and len(matched) == 6
    two = [str(files[0]), str(files[1])]
    assert spark.read.format("kafka-capture").load(two).count() == sum(len(dump(p)[0]) for p in files[:2])


def _records_of(df) -> list[tuple]:
    return sorted((r.packet_time, r.frame, r.client, r.broker, r.kind, r.api, r.version, r.topic, r.partition,
                   r.position, r.offset, r.timestamp_ms if r.timestamp_ms is not None else -1, r.key, r.value,
                   tuple((h.key, h.value) for h in r.headers or [])) for r in df.collect())  # fmt: skip


def _payload(v) -> bytes | None:
    if v is None:
        return None
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else v.encode("utf-8", "surrogateescape")


def _dumped_records(paths) -> list[tuple]:
    out = []
    for p in paths:
        for r in dump(p, "--records")[0]:
            out.append((r["packet_time"], r["frame"], r["client"], r["broker"], r["kind"], r["api"], r["version"],
                        r["topic"], r["partition"], r["position"], r["offset"], r["timestamp"], _payload(r["key"]),
                        _payload(r["value"]), tuple((k, _payload(v)) for k, v in r["headers"])))  # fmt: skip
    return sorted(out, key=repr)


def test_spark_records_on_the_wire_are_kfmt_dumps(spark, tmp_path):
    """rows=records: the records Produce requests and Fetch responses carry, in kafka-log's columns and the
    capture's, as `kfmt dump --records --json` gives them (control records kept; every codec in tests/test_wire_clients.py)."""
    from fuzz.capture import synthetic

    _jar()
    folder = tmp_path / "captures"
    folder.mkdir()
    for p in sorted(PUBLIC.rglob("*.pcap*")):
        (folder / f"{p.parent.name}-{p.name}").write_bytes(p.read_bytes())
    synthetic(folder / "synthetic.pcap", 3)
    df = spark.read.format("kafka-capture").option("rows", "records").load(str(folder))
    assert "packet_time" in df.columns and "is_control" in df.columns and "error" in df.columns
    got = sorted(_records_of(df), key=repr)
    want = _dumped_records(sorted(folder.iterdir()))
    assert got == want and len(got) >= 40, (len(got), len(want))


def test_damage_fails_the_read_or_is_quarantined(spark, tmp_path):
    """A capture with a damaged record set inside a Produce request (a CRC that does not match) and a message cut
    by a missing segment: the read fails with the first problem in one line (on_corrupt=fail, the default); skip
    reads on; quarantine gives a row per problem and note, as many as `kfmt dump` says; rows=records quarantines
    the damaged batch and the capture's problems in kafka-log's error column."""
    from fuzz.capture import packets, synthetic, write

    _jar()
    src = synthetic(tmp_path / "whole.pcap", 4)
    pkts = packets(src)
    # the first Produce request's record set: flip a byte of its batch's records (after its CRC field)
    produce = next(i for i, (_, _, f) in enumerate(pkts) if b"orders" in f and b"v" * 40 in f)
    frame = bytearray(pkts[produce][2])
    frame[frame.rindex(b"v" * 40) + 5] ^= 1
    pkts[produce] = (pkts[produce][0], pkts[produce][1], bytes(frame))
    bad = tmp_path / "damaged.pcap"
    write(bad, pkts)
    want, said, noted, status = dump(bad)
    assert status == 1 and len(said) == 1 and "crc" in said[0], said

    def read():  # (a reader's options stay set on it: a new one for each read)
        return spark.read.format("kafka-capture")

    with pytest.raises(Exception) as e:
        read().load(str(bad)).count()
    line = next(x for x in str(e.value).splitlines() if "kafka-capture:" in x)
    assert "1 problem(s), the first:" in line and "Records at byte" in line and "crc" in line, line
    assert read().option("on_corrupt", "skip").load(str(bad)).count() == len(want)
    q = read().option("on_corrupt", "quarantine").load(str(bad))
    kinds = {r.kind: r.n for r in q.groupBy("kind").count().withColumnRenamed("count", "n").collect()}
    assert kinds.get("problem") == len(said) and kinds.get("note", 0) == len(noted)
    assert kinds["request"] + kinds["response"] == len(want)
    recs = read().option("rows", "records").option("on_corrupt", "quarantine").load(str(bad))
    errors = [r.error for r in recs.where("error is not null").collect()]
    assert len(errors) == 1 and "crc" in errors[0], errors
    whole = read().option("rows", "records").load(str(src)).count()
    assert recs.where("error is null").count() == whole - 5  # the damaged batch's five records, in its error row
    with pytest.raises(Exception) as e:
        read().option("rows", "records").load(str(bad)).count()
    line = str(e.value).splitlines()[0]
    assert line.startswith(
        f"kafka-capture: {bad}: 10.0.0.1:40000 -> 10.0.0.2:9092: Produce v9 request (correlation id "
    )
    assert "body.TopicData[0].PartitionData[0].Records: kafka-log: corrupt batch" in line and "crc" in line, line


def test_options_kafka_capture_does_not_take_are_one_line(spark):
    """An option kafka-capture does not know, or a value that is not one of its option's, is refused in one line
    naming the option (and, for an unknown one, the options it takes), before any task runs."""
    _jar()
    capture = str(PUBLIC / "ntop+nDPI" / "kafka.pcapng")
    cases = {("rowz", "records"): "kafka-capture: unknown option rowz (its options: path, paths, rows, port, "
                                  "on_corrupt, read_timeout)",
             ("read_timeout", "0"): "kafka-capture: option read_timeout is seconds (more than 0), not 0",
             ("read_timeout", "soon"): "kafka-capture: option read_timeout is a number, not soon",
             ("port", "90000"): "kafka-capture: option port is a TCP port (0-65535), not 90000",
             ("rows", "all"): "kafka-capture: option rows is messages or records, not all"}  # fmt: skip
    for (key, value), want in cases.items():
        with pytest.raises(Exception) as e:
            spark.read.format("kafka-capture").option(key, value).load(capture).count()
        assert str(e.value) == want, (key, str(e.value)[:500])
    assert spark.read.format("kafka-capture").option("read_timeout", "0.5").option("port", "9092").load(capture).count()


def test_a_capture_larger_than_a_task_is_split_by_connection(spark, tmp_path):
    """A capture file larger than spark.sql.files.maxPartitionBytes is read by several tasks, each putting together
    and decoding its share of the connections (whole: a TCP stream runs through the file): the same messages,
    records, problems and notes as one task reads, none twice (a file cut inside a packet record said once)."""
    _jar()
    folder = tmp_path / "captures"
    folder.mkdir()
    nd = PUBLIC / "ntop+nDPI" / "kafka.pcapng"
    (folder / "ndpi.pcapng").write_bytes(nd.read_bytes())
    (folder / "cut.pcapng").write_bytes(nd.read_bytes()[:-37])  # a file cut inside its last packet's block
    (folder / "sniffer.pcap").write_bytes((PUBLIC / "40t+go-sniffer" / "kafka.pcap").read_bytes())

    def read(**options):
        df = spark.read.format("kafka-capture").options(on_corrupt="quarantine", **options).load(str(folder))
        return df.rdd.getNumPartitions(), sorted(map(repr, df.collect()))

    whole = read(), read(rows="records")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1500")
    try:
        split = read(), read(rows="records")
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert whole[0][0] == whole[1][0] == 3 and split[0][0] >= 12, (whole[0][0], split[0][0])
    assert split[0][1] == whole[0][1] and split[1][1] == whole[1][1]
    kinds = [r for r in whole[0][1] if "kind='problem'" in r]
    assert len(kinds) == 1 and "the capture ends inside a packet record" in kinds[0], kinds
    assert len(whole[0][1]) > 50 and len(whole[1][1]) > 4
