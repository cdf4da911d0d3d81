"""kfmt.capture on captures written here with dpkt's writer: TCP segments out of order, sent twice, or missing
(a hole), and a file that is not a capture."""

from __future__ import annotations

import re
import socket

import dpkt
import pytest

import kfmt
from kfmt.capture import connections


def _pcap(path, segments, port: int = 9092, more=()) -> None:
    """``segments``: (from the client?, sequence offset, flags, payload) of one connection 10.0.0.1:5000 ->
    10.0.0.2:``port`` (client ISN 1000, server ISN 5000); ``more``: another connection's, to port 80."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        both = [(s, port) for s in segments] + [(s, 80) for s in more]
        for i, ((up, off, flags, payload), port) in enumerate(both):
            tcp = dpkt.tcp.TCP(sport=5000 if up else port, dport=port if up else 5000, flags=flags,
                               seq=(1000 if up else 5000) + off, data=payload)  # fmt: skip
            a, b = socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2")
            ip = dpkt.ip.IP(src=a if up else b, dst=b if up else a, p=dpkt.ip.IP_PROTO_TCP, data=tcp)
            ip.len = len(ip)
            w.writepkt(bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)), ts=i)


SYN, ACK, PSH = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH


def test_segments_out_of_order_and_sent_twice_give_each_byte_once(tmp_path):
    path = tmp_path / "c.pcap"
    _pcap(path, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 6, ACK | PSH, b"world"),
                 (True, 1, ACK | PSH, b"hello"), (True, 1, ACK | PSH, b"hello"), (False, 1, ACK, b"ok")])  # fmt: skip
    (c,) = connections(path)
    assert c.opened and c.client == ("10.0.0.1", 5000) and c.server == ("10.0.0.2", 9092)
    assert (c.to_server.data, c.to_client.data, c.to_server.repeated, c.to_server.hole_at) == (b"helloworld", b"ok",
                                                                                               1, None)  # fmt: skip


def test_a_hole_ends_a_run_and_what_follows_is_the_next(tmp_path):
    path = tmp_path / "c.pcap"
    _pcap(path, [(True, 0, SYN, b""), (True, 1, ACK | PSH, b"abc"), (True, 9, ACK | PSH, b"xyz"),
                 (True, 10, ACK | PSH, b"yz!")])  # fmt: skip
    (c,) = connections(path)
    assert (c.to_server.data, c.to_server.hole_at, c.to_server.after_hole) == (b"abc", 3, 4)
    assert c.to_server.runs == [(8, b"xyz!")] and c.to_server.packet_at(9) == (3, 2.0)


def test_without_the_opening_the_client_is_the_side_that_sends_a_request(tmp_path):
    import kfmt.protocol as P

    req = P.write_request(18, 0, {}, correlation_id=1, client_id="c")
    path = tmp_path / "c.pcap"
    _pcap(path, [(False, 1, ACK | PSH, b"\x00\x00\x00\x02xx"), (True, 1, ACK | PSH, len(req).to_bytes(4, "big") + req)])
    (c,) = connections(path)
    assert not c.opened and c.client == ("10.0.0.1", 5000) and bytes(c.to_server.data).endswith(req)


def test_a_file_that_is_not_a_capture_is_one_line(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(b"not a capture")
    with pytest.raises(kfmt.CodecError, match=r"not a pcap or pcapng capture \(its first bytes are 6e6f7420\)"):
        connections(path)


@pytest.mark.parametrize("name", ["deepflowio+deepflow/00-produce-v9.pcap", "ntop+nDPI/kafka.pcapng"])
def test_a_capture_cut_inside_a_record_is_said_and_the_cut_record_not_read(tmp_path, name):
    """A file that ends inside a packet record (a capture still being written, a copy cut short): the records
    before it are read, the cut one is not (dpkt's pcap reader gives it as it is), and the loss is said with its
    byte; whole, the same file has no problem."""
    from pathlib import Path

    data = (Path(__file__).resolve().parent.parent.parent / "shared/fixtures/wire-captures" / name).read_bytes()
    whole = read_bytes_as(tmp_path / "whole", data)
    cut = read_bytes_as(tmp_path / "cut", data[:-5])
    assert not whole.problems and len(cut.problems) == 1 and "ends inside a packet record" in cut.problems[0]
    before = b"".join(bytes(c.to_server.data) + bytes(c.to_client.data) for c in whole.connections)
    after = b"".join(bytes(c.to_server.data) + bytes(c.to_client.data) for c in cut.connections)
    assert len(after) <= len(before) and before.startswith(after[:100])


def read_bytes_as(path, data: bytes):
    from kfmt.capture import read

    path.write_bytes(data)
    return read(path)


def test_dump_reads_every_public_capture(capsys):
    """`kfmt dump CAPTURE`: every message of the public captures, one JSON object each (the requests and responses
    tests/test_wire_clients.py counts), exit 0; responses whose request came before a capture began are notes, and so
    are bytes after a message that Kafka's parser leaves unread (four ApiVersions requests of the nDPI capture)."""
    import json

    from test_wire_clients import CAPTURES, PUBLIC

    from kfmt.tools.cli import main

    for name, (requests, responses, unasked) in PUBLIC.items():
        assert main(["dump", "--json", str(CAPTURES / name)]) == 0, name
        out, err = capsys.readouterr()
        rows = [json.loads(line) for line in out.splitlines()]
        assert [r["kind"] for r in rows].count("request") == requests and len(rows) == requests + responses, name
        assert all(r["client"] != r["broker"] and r["api"] and "body" in r for r in rows)
        assert err.count("which no request of this connection carries") == unasked and "problem" not in err, name
        kept = sum("trailing" in r for r in rows)  # a message with bytes after it Kafka leaves unread: said too
        assert err.count("kfmt dump: note: ") == unasked + kept and err.count("Kafka's parser leaves them") == kept
    assert main(["dump", str(CAPTURES / "ntop+nDPI/kafka.pcapng")]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == "0 problem(s), 7 note(s)" and "request  Produce v3  correlation_id 2  " in out


def test_dump_says_a_cut_capture_and_refuses_mixing_captures_with_logs(tmp_path, capsys):
    from pathlib import Path

    from test_wire_clients import CAPTURES

    from kfmt.tools.cli import main

    data = (CAPTURES / "deepflowio+deepflow/00-produce-v9.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-5])
    assert main(["dump", str(cut)]) == 1
    out, err = capsys.readouterr()
    assert "kfmt dump: problem: " in err and "ends inside a packet record" in err and "request  Produce v9" in out
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)]))
    assert main(["dump", str(cut), str(log)]) == 2
    assert "not both at once" in capsys.readouterr().err
    assert Path(cut).is_file()


def test_dump_leaves_other_protocols_aside_and_port_says_which_connections_are_kafka(tmp_path, capsys):
    """A connection whose bytes read as no Kafka request (HTTP here) is a note, not a problem; --port reads only
    the connections of that port, and reads them as Kafka's even when they are not (then problems, exit 1)."""
    import kfmt.protocol as P
    from kfmt.tools.cli import main

    req = P.write_request(18, 0, {}, correlation_id=1, client_id="c")
    resp = P.write_response(18, 0, {"ErrorCode": 0, "ApiKeys": []}, correlation_id=1)
    path = tmp_path / "two.pcap"
    _pcap(path, [(True, 0, SYN, b""), (True, 1, ACK | PSH, len(req).to_bytes(4, "big") + req),
                 (False, 1, ACK | PSH, len(resp).to_bytes(4, "big") + resp)],
          more=[(True, 0, SYN, b""), (True, 1, ACK | PSH, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")])  # fmt: skip
    assert main(["dump", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "request  ApiVersions v0  correlation_id 1  client_id 'c'" in out and out.endswith(
        "0 problem(s), 1 note(s)\n"
    )
    assert "10.0.0.1:5000 -> 10.0.0.2:80: not Kafka traffic (no frame reads as a request; 27 byte(s))" in err
    assert main(["dump", "--port", "9092", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "10.0.0.2:80" not in out + err and out.endswith("0 problem(s), 0 note(s)\n")
    assert main(["dump", "--port", "80", str(path)]) == 1
    assert "problem: 10.0.0.1:5000 -> 10.0.0.2:80: client byte 0: 27 byte(s) after the last whole frame" in (
        capsys.readouterr().err
    )


def test_dump_summary_of_a_capture(capsys):
    """`kfmt dump --summary CAPTURE`: per API its requests, responses, bytes, versions and error codes; the topics
    each client id produced to, topic by topic; in JSON the same counts, which add up to the messages the capture
    holds."""
    import json

    from test_wire_clients import CAPTURES

    from kfmt.tools.cli import main

    path = str(CAPTURES / "ntop+nDPI/kafka.pcapng")
    assert main(["dump", "--summary", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("9 connection(s)\n") and re.search(r"^LB_MAIN_LOG_INPUT +rdkafka +- +-$", out, re.M)
    assert re.search(r"^Produce +3 +3 +1129 +[\d.]+/[\d.]+/[\d.]+ +- +3,9$", out, re.M), out
    assert re.search(r"^172\.16\.17\.101:53052 +172\.30\.0\.237:9092 +1 +0 +21 +- +- +ApiVersions v0$", out, re.M), out
    assert re.search(r"^127\.0\.0\.1:46136 .* ApiVersions v3, InitProducerId v4, Metadata v12, Produce v9$", out, re.M)
    assert main(["dump", "--summary", "--json", path]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (
        sum(a["requests"] for a in s["apis"].values()) == 14 and sum(a["responses"] for a in s["apis"].values()) == 11
    )
    assert (s["problems"], s["notes"], s["produced"]["console-producer"]) == (0, 7, ["sampleTopic"])
    assert s["topics"] == {"LB_MAIN_LOG_INPUT": {"producers": ["rdkafka"], "consumers": [], "groups": []},
                           "sampleTopic": {"producers": ["console-producer"], "consumers": [], "groups": []}}  # fmt: skip


def test_summary_latencies_groups_and_what_brokers_support(tmp_path, capsys):
    """--summary's latency percentiles (nearest rank) are those of the responses' own latencies in --json; the
    connections' counts add up to the APIs'; what each broker said it supports (its ApiVersions answer) is what
    tshark reads from the same packets; a consumer group is named with the topics it commits offsets of."""
    import json
    import math
    import subprocess

    from test_wire_clients import CAPTURES
    from wire import tools_missing

    import kfmt.protocol as P
    from kfmt.tools.cli import main
    from kfmt.tools.dump.summary import latency_percentiles

    assert latency_percentiles([]) == {}
    assert latency_percentiles([5.0, 1.0, 3.0, 2.0, 4.0]) == {"p50": 3.0, "p99": 5.0, "max": 5.0}
    xs = [float(i) for i in range(1, 201)]  # nearest rank: the 100th and the 198th of 200
    assert latency_percentiles(xs) == {"p50": 100.0, "p99": 198.0, "max": 200.0}
    path = str(CAPTURES / "ntop+nDPI/kafka.pcapng")
    main(["dump", "--json", path])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["dump", "--summary", "--json", path]) == 0
    s = json.loads(capsys.readouterr().out)
    for name, a in s["apis"].items():
        own = [r["latency_ms"] for r in rows if r["api"] == name and r["kind"] == "response"]
        ordered = sorted(own)
        assert a["latency_ms"] == {"p50": ordered[math.ceil(len(own) / 2) - 1],
                                   "p99": ordered[math.ceil(len(own) * 0.99) - 1], "max": ordered[-1]}  # fmt: skip
    for kind in ("requests", "responses", "bytes"):
        assert sum(x[kind] for x in s["links"]) == sum(a[kind] for a in s["apis"].values())
    for x in s["links"]:  # each connection's versions, latencies and errors: those of its messages in --json
        own = [r for r in rows if (r["client"], r["broker"]) == (x["client"], x["broker"])]
        versions: dict = {}
        for r in sorted(own, key=lambda r: (r["api"], r["version"])):
            if r["version"] not in versions.setdefault(r["api"], []):
                versions[r["api"]].append(r["version"])
        assert x["versions"] == versions and x["requests"] + x["responses"] == len(own)
        ordered = sorted(r["latency_ms"] for r in own if r.get("latency_ms") is not None)
        assert x["latency_ms"] == ({"p50": ordered[math.ceil(len(ordered) / 2) - 1],
                                    "p99": ordered[math.ceil(len(ordered) * 0.99) - 1], "max": ordered[-1]}
                                   if ordered else {})  # fmt: skip
        assert x["errors"] == {}  # (this capture's answers carry none: errors are in the next test's captures)
    if not tools_missing():
        out = subprocess.run(["tshark", "-r", path, "-Y", "kafka.api_versions.max_version", "-T", "fields", "-e",
                              "ip.src", "-e", "tcp.srcport", "-e", "kafka.api_versions.api_key", "-e",
                              "kafka.api_versions.min_version", "-e", "kafka.api_versions.max_version"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        theirs = {}
        for line in out.splitlines():
            ip, port, keys, lows, highs = line.split("\t")
            theirs[f"{ip}:{port}"] = {P.api(int(k)).name: [int(lo), int(hi)]
                                      for k, lo, hi in zip(keys.split(","), lows.split(","), highs.split(","))}  # fmt: skip
        assert s["supported"] == theirs and len(theirs) == 2
    # a consumer group committing offsets, in a capture made here
    commit = P.write_request(8, 8, {"GroupId": "billing", "GenerationIdOrMemberEpoch": 1, "MemberId": "m",
                                    "GroupInstanceId": None, "Topics": [{"Name": "orders", "Partitions": [
                                        {"PartitionIndex": 0, "CommittedOffset": 5, "CommittedLeaderEpoch": -1,
                                         "CommittedMetadata": ""}]}]}, correlation_id=1, client_id="c")  # fmt: skip
    fetch = P.write_request(9, 8, {"Groups": [{"GroupId": "audit", "MemberId": None, "MemberEpoch": -1,
                                               "Topics": [{"Name": "payments", "PartitionIndexes": [0]}]}],
                                   "RequireStable": False}, correlation_id=2, client_id="c")  # fmt: skip
    framed = b"".join(len(m).to_bytes(4, "big") + m for m in (commit, fetch))
    _pcap(tmp_path / "g.pcap", [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 1, ACK | PSH, framed)])
    assert main(["dump", "--summary", str(tmp_path / "g.pcap")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^orders +- +- +billing$", out, re.M) and re.search(r"^payments +- +- +audit$", out, re.M), out


def test_a_summary_counts_error_codes_per_api_and_connection(tmp_path, capsys):
    """The error codes of a connection's answers, wherever they sit (a Produce response's partitions, a Fetch
    response's top level and partitions), counted per API and per connection as they were written, 0 left out;
    the text line of each answer lists its codes."""
    import json

    import kfmt.protocol as P
    from kfmt.tools.cli import main

    produce = P.write_request(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [
        {"Name": "t", "PartitionData": [{"Index": 0, "Records": None}, {"Index": 1, "Records": None}]}]},
        correlation_id=1, client_id="c")  # fmt: skip
    answered = P.write_response(0, 9, {"Responses": [{"Name": "t", "PartitionResponses": [
        {"Index": 0, "ErrorCode": 6, "BaseOffset": -1, "LogAppendTimeMs": -1, "LogStartOffset": -1, "RecordErrors": [],
         "ErrorMessage": None},
        {"Index": 1, "ErrorCode": 0, "BaseOffset": 5, "LogAppendTimeMs": -1, "LogStartOffset": 0, "RecordErrors": [],
         "ErrorMessage": None}]}], "ThrottleTimeMs": 0}, correlation_id=1)  # fmt: skip
    fetch = P.write_request(1, 11, {"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 1000,
                                    "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1, "Topics": [
        {"Topic": "t", "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                                       "LogStartOffset": -1, "PartitionMaxBytes": 100}]}],
                                    "ForgottenTopicsData": [], "RackId": ""}, correlation_id=2, client_id="c")  # fmt: skip
    fetched = P.write_response(1, 11, {"ThrottleTimeMs": 0, "ErrorCode": 71, "SessionId": 0, "Responses": [
        {"Topic": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": 6, "HighWatermark": -1,
                                       "LastStableOffset": -1, "LogStartOffset": -1, "AbortedTransactions": None,
                                       "PreferredReadReplica": -1, "Records": None}]}]}, correlation_id=2)  # fmt: skip
    sized = [len(m).to_bytes(4, "big") + m for m in (produce, answered, fetch, fetched)]
    path = tmp_path / "errors.pcap"
    _pcap(path, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 1, ACK | PSH, sized[0]),
                 (False, 1, ACK | PSH, sized[1]), (True, 1 + len(sized[0]), ACK | PSH, sized[2]),
                 (False, 1 + len(sized[1]), ACK | PSH, sized[3])])  # fmt: skip
    assert main(["dump", "--summary", "--json", str(path)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert {n: a["errors"] for n, a in s["apis"].items()} == {"Produce": {"6": 1}, "Fetch": {"71": 1, "6": 1}}
    assert [x["errors"] for x in s["links"]] == [{"6": 2, "71": 1}]
    assert main(["dump", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("errors ")[1].split()[0] for line in lines if "response" in line] == ["6", "6,71"]


def test_each_message_says_its_packet_time_and_latency(tmp_path, capsys):
    """--json gives each message the number and time of the packet holding its first byte (Wireshark's numbering,
    from 1 over every packet), its correlation and client ids, and a response its latency: from its request's
    packet to its own. The response here starts in a packet sent before the one ending the request's segment
    retransmitted: the first captured copy counts."""
    import json

    import kfmt.protocol as P
    from kfmt.tools.cli import main

    req = P.write_request(18, 0, {}, correlation_id=1, client_id="c")
    resp = P.write_response(18, 0, {"ErrorCode": 0, "ApiKeys": []}, correlation_id=1)
    framed_req, framed_resp = len(req).to_bytes(4, "big") + req, len(resp).to_bytes(4, "big") + resp
    path = tmp_path / "t.pcap"
    _pcap(
        path,
        [
            (True, 0, SYN, b""),
            (False, 0, SYN | ACK, b""),
            (True, 1, ACK | PSH, framed_req[:5]),
            (True, 6, ACK | PSH, framed_req[5:]),
            (True, 1, ACK | PSH, framed_req[:5]),
            (False, 1, ACK | PSH, framed_resp),
        ],
    )  # fmt: skip  (packet i is sent at i seconds)
    assert main(["dump", "--json", str(path)]) == 0
    request, response = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert (request["frame"], request["time"], request["client_id"], request["correlation_id"]) == (3, 2.0, "c", 1)
    assert (response["frame"], response["time"], response["latency_ms"], response["correlation_id"]) == (6, 5.0,
                                                                                                         3000.0, 1)  # fmt: skip
    assert "latency_ms" not in request and "client_id" not in response
    assert list(request)[:10] == ["time", "frame", "client", "broker", "kind", "api", "api_key", "version",
                                  "correlation_id", "client_id"]  # fmt: skip
    assert main(["dump", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("00:00:02.000000 #3  request  ApiVersions v0  correlation_id 1  client_id 'c'")
    assert lines[2].startswith("00:00:05.000000 #6  response ApiVersions v0  correlation_id 1") and lines[2].endswith(
        " B  3000.0 ms"
    )


def test_packet_numbers_and_times_are_tsharks(tmp_path, capsys):
    """On the public captures, each message's packet (its number and time) is the packet tshark numbers so, whose
    TCP payload holds the message's correlation id; on a file of two sections too."""
    import json

    from test_wire_clients import CAPTURES, PUBLIC
    from wire import tools_missing

    from kfmt.tools.cli import main

    if tools_missing():
        pytest.skip(tools_missing())
    import subprocess

    # a file of two sections (a capture appended to another, as `cat a.pcapng b.pcapng` makes one): a microsecond
    # and a nanosecond interface in the first, its own in the second; its packets numbered on across both
    two = tmp_path / "two-sections.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(CAPTURES / "deepflowio+deepflow/00-produce-v9.pcap"),
                    str(tmp_path / "second.pcapng")], check=True, capture_output=True)  # fmt: skip
    two.write_bytes((CAPTURES / "ntop+nDPI/kafka.pcapng").read_bytes() + (tmp_path / "second.pcapng").read_bytes())
    checked, expected = 0, sum(r + s for r, s, _ in PUBLIC.values())
    for name in [*PUBLIC, two]:
        fields = subprocess.run(["tshark", "-r", str(CAPTURES / name), "-T", "fields", "-e", "frame.number", "-e",
                                 "frame.time_epoch", "-e", "tcp.payload"], capture_output=True, text=True,
                                check=True).stdout  # fmt: skip
        packets = {int(n): (float(t), bytes.fromhex(p.replace(":", ""))) for n, t, p in
                   (ln.split("\t") for ln in fields.splitlines())}  # fmt: skip
        main(["dump", "--json", str(CAPTURES / name)])
        for row in map(json.loads, capsys.readouterr().out.splitlines()):
            when, payload = packets[row["frame"]]
            assert abs(when - row["time"]) < 1e-6, (name, row["frame"])
            size = row["correlation_id"].to_bytes(4, "big", signed=True)  # the header's correlation id follows
            first = payload.find(size)
            assert first >= 4 or (0 <= first < 4 and row["kind"] == "response"), (name, row["frame"], payload[:16])
            checked += 1
    assert checked == expected + sum(PUBLIC["ntop+nDPI/kafka.pcapng"][:2]) + 2  # the second section: Produce v9
    assert row["frame"] == 43 and row["api"] == "Produce"


def test_a_capture_begun_inside_a_message_is_read_from_the_first_whole_frame(tmp_path, capsys):
    """A connection already open whose captured bytes begin inside a message (each side the end of a Metadata
    request or response, then an ApiVersions exchange): the bytes before each side's first whole frame are counted
    in a note, the exchange after them read; exit 0. The same bytes of a connection the capture saw opened, read
    as Kafka's (--port), are a problem: there they hide a message."""
    import kfmt.protocol as P
    from kfmt.tools.cli import main

    def framed(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    before_req = framed(P.write_request(3, 1, {"Topics": [{"Name": "orders"}]}, correlation_id=1, client_id="c"))
    before_resp = framed(P.write_response(3, 1, {"Brokers": [], "ControllerId": 0, "Topics": []}, correlation_id=1))
    req = framed(P.write_request(18, 0, {}, correlation_id=2, client_id="c"))
    resp = framed(P.write_response(18, 0, {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 3, "MinVersion": 0,
                                                                           "MaxVersion": 12}]}, correlation_id=2))  # fmt: skip
    client, server = before_req[9:] + req, before_resp[6:] + resp
    path = tmp_path / "mid.pcap"
    _pcap(path, [(True, 1, ACK | PSH, client), (False, 1, ACK | PSH, server)])
    assert main(["dump", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "request  ApiVersions v0  correlation_id 2  client_id 'c'" in out and "response ApiVersions v0" in out
    assert f"the client's first {len(before_req) - 9} byte(s) are the end of a message" in err
    assert f"the broker's first {len(before_resp) - 6} byte(s)" not in err  # (the side is named as the reader's)
    assert f"the server's first {len(before_resp) - 6} byte(s) are the end of a message" in err
    assert out.endswith("0 problem(s), 2 note(s)\n")
    opened = tmp_path / "opened.pcap"
    _pcap(opened, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 1, ACK | PSH, client),
                   (False, 1, ACK | PSH, server)])  # fmt: skip
    assert main(["dump", "--port", "9092", str(opened)]) == 1  # (without --port: no frame reads, another protocol)
    assert "problem: 10.0.0.1:5000 -> 10.0.0.2:9092: client byte 0: " in capsys.readouterr().err


def test_diff_on_a_capture_measures_each_version_as_kafka_python_writes_it(capsys):
    """`kfmt diff CAPTURE`: every request of the public captures written at every version of its API, framed; where
    kafka-python 3.0.12 (its own classes, the request read from the capture's bytes) writes that version too, the
    sizes are equal. kafka-python writes some versions kfmt refuses: a topic name at Produce v13 (which names topics
    by id) and an ApiVersions v3 client name at v0-v2, each of which it drops unsaid; kfmt counts the message as not
    representable there. At its own version, a message measures as the bytes the capture holds (bytes after it that
    Kafka leaves unread aside)."""
    import json

    from test_protocol import _kafka_python_classes
    from test_wire_clients import CAPTURES, PUBLIC

    import kfmt.protocol as P
    from kfmt.tools.cli import main
    from kfmt.tools.diff_capture import messages, size_at

    kp = _kafka_python_classes()
    compared = refused = 0
    for name in PUBLIC:
        for m in messages([str(CAPTURES / name)], []):
            a, body = P.api(m.api_key), m.to_json()["body"]
            if m.frame == m._written():
                assert size_at(a, m, m.api_version, body) == len(m.frame) - len(m.trailing) + 4, (name, m.api_name)
            cls = kp.get((m.api_key, m.kind))
            if m.kind != "request" or cls is None or not cls._valid_versions[0] <= m.api_version:
                continue
            theirs_obj = cls.decode(m.frame, version=m.api_version, header=True)
            for v in a.versions:
                ours = size_at(a, m, v, body)
                if v < cls._valid_versions[0] or v > cls._valid_versions[1]:
                    continue
                theirs = 4 + len(theirs_obj.encode(version=v, header=True))
                if isinstance(ours, int):
                    assert ours == theirs, (name, m.api_name, m.api_version, v)
                    compared += 1
                else:
                    assert ours == "not representable", (name, m.api_name, m.api_version, v, ours)
                    refused += 1
    assert compared >= 240 and refused >= 40, (compared, refused)
    path = str(CAPTURES / "ntop+nDPI/kafka.pcapng")
    assert main(["diff", path, "MetadataByTopicId@14"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^Metadata request +v9 +5/5 +0 +0 +233 +240 +-2\.9%$", out, re.M), out
    assert re.search(r"^Metadata request +MetadataByTopicId v14 +0/5 +5 +0 ", out, re.M), out  # names, not ids
    assert main(["diff", "--json", path]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["Produce request"]["messages"] == 3 and res["Produce request"]["versions"]["v13"][
        "not_representable"] == 3  # fmt: skip


def test_diff_on_a_capture_says_which_fields_make_the_difference(tmp_path, capsys):
    """`kfmt diff CAPTURE --fields`: each version's bytes by field add up to its bytes (the sizes the test above
    holds to kafka-python's), the messages as captured to their own bytes re-encoded; KIP-482's compact counts
    and lengths and its tagged sections show where they begin (Produce v9); --plot writes the figure."""
    import json

    from test_wire_clients import CAPTURES

    from kfmt.tools.cli import main

    path = str(CAPTURES / "ntop+nDPI/kafka.pcapng")
    assert main(["diff", "--json", "--fields", path]) == 0
    res = json.loads(capsys.readouterr().out)
    for key, r in res.items():
        for v, c in r["versions"].items():
            assert sum(c["fields"].values()) == c["bytes"], (key, v)
    produce = res["Produce request"]
    assert sum(produce["captured_fields"].values()) == 969  # v3 and v9 requests, as the capture holds them
    v8, v9 = produce["versions"]["v8"]["fields"], produce["versions"]["v9"]["fields"]
    assert (v8["topic_data"], v9["topic_data"]) == (12, 3)  # a 4-byte count each, then a 1-byte compact one
    assert (v8["topic_data.name"], v9["topic_data.name"]) == (6, 3)  # a 2-byte length, then a compact one
    assert v8.get("tagged_fields", 0) == 0 and v9["tagged_fields"] == 3
    stem = tmp_path / "fig" / "capture"
    assert main(["diff", "--fields", "--plot", str(stem), path]) == 0
    out = capsys.readouterr().out
    assert "== Produce request: bytes by field" in out
    assert re.search(r"^topic_data +count +9 +12 .* 3 +3 +3 +3$", out, re.M), out
    assert (tmp_path / "fig" / "capture.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "fig" / "capture.svg").read_bytes()[:500]


def test_docs_capture_block(tmp_path):
    """docs/protocol.md's capture commands, run as written on a public capture: exit 0, a line per message, a table
    with a row per API, kind and version, the tables by field and the figure."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from test_readme import _block, _commands
    from test_wire_clients import CAPTURES

    shutil.copy(CAPTURES / "ntop+nDPI/kafka.pcapng", tmp_path / "capture.pcapng")
    cmds = _commands(_block("bash", "kfmt dump capture.pcapng"))
    assert [c.split()[:2] for c in cmds] == [["kfmt", "dump"], ["kfmt", "diff"], ["kfmt", "diff"]]
    exe = str(Path(sys.executable).parent / "kfmt")
    dump, diff, fields = (subprocess.run([exe, *c.split()[1:]], cwd=tmp_path, capture_output=True, text=True)
                          for c in cmds)  # fmt: skip
    assert (dump.returncode, diff.returncode, fields.returncode) == (0, 0, 0), (dump.stderr, diff.stderr, fields.stderr)
    assert "== Metadata request: bytes by field" in fields.stdout and (tmp_path / "capture-diff.png").is_file()
    assert re.search(r"^\d\d:\d\d:\d\d\.\d{6} #1  request  ApiVersions v0  correlation_id 129", dump.stdout, re.M)
    assert re.search(r"^Metadata request +MetadataByTopicId v14 ", diff.stdout, re.M), diff.stdout


def test_records_on_the_wire_are_the_ones_tshark_shows(capsys):
    """`kfmt dump --records --json CAPTURE`: the records Produce requests and Fetch responses carry, each with the
    capture's columns (its packet's number and time, client, broker, API, version), its topic and partition, and
    the record as `kfmt dump --records --json` shows a log's; each value is the one tshark's dissector shows in that
    packet (kafka.message_value, wherever Debian's tshark 4.0 reads the batch)."""
    import json
    import subprocess

    from test_wire_clients import CAPTURES, PUBLIC
    from wire import tools_missing

    from kfmt.tools.cli import main

    if tools_missing():
        pytest.skip(tools_missing())
    checked = 0
    for name in PUBLIC:
        fields = subprocess.run(["tshark", "-r", str(CAPTURES / name), "-Y", "kafka", "-T", "fields", "-e",
                                 "frame.number", "-e", "kafka.message_value"], capture_output=True, text=True,
                                check=True).stdout  # fmt: skip
        theirs: dict = {}
        for line in fields.splitlines():
            number, _, values = line.partition("\t")
            if values and "<MISSING>" not in values:
                theirs[int(number)] = [bytes.fromhex(v).decode() for v in values.split(",")]
        assert main(["dump", "--records", "--json", str(CAPTURES / name)]) == 0
        ours: dict = {}
        for row in map(json.loads, capsys.readouterr().out.splitlines()):
            assert row["api"] in ("Produce", "Fetch") and row["topic"] and row["partition"] is not None, row
            assert {"packet_time", "frame", "client", "broker", "offset", "key", "value", "headers"} <= set(row)
            ours.setdefault(row["frame"], []).append(row["value"])
        for number, values in theirs.items():
            assert ours.get(number) == values, (name, number)
            checked += len(values)
    assert checked >= 2


def test_text_lines_name_topics_partitions_and_records_as_tshark_reads_them(capsys):
    """A message's text line ends with the topics and partitions it names and the records it carries: for each
    message of the public captures where tshark's dissector names one topic (kafka.topic_name), that topic with
    the partitions tshark reads (kafka.partition_id), and as many records as it shows values (kafka.message_value,
    where it reads the batch)."""
    import subprocess

    from test_wire_clients import CAPTURES, PUBLIC
    from wire import tools_missing

    from kfmt.tools.cli import main
    from kfmt.tools.dump.capture import _runs

    if tools_missing():
        pytest.skip(tools_missing())
    checked = records = 0
    for name in PUBLIC:
        main(["dump", str(CAPTURES / name)])
        ours = {
            int(m.group(1)): line
            for line in capsys.readouterr().out.splitlines()
            if (m := re.search(r" #(\d+) ", line))
        }
        fields = subprocess.run(["tshark", "-r", str(CAPTURES / name), "-Y", "kafka", "-T", "fields", "-e",
                                 "frame.number", "-e", "kafka.topic_name", "-e", "kafka.partition_id", "-e",
                                 "kafka.message_value"], capture_output=True, text=True, check=True).stdout  # fmt: skip
        for line in fields.splitlines():
            number, topics, partitions, values = line.split("\t")
            if len(set(topics.split(","))) != 1 or not topics or "[ Null ]" in topics or "<MISSING>" in values:
                continue
            parts = sorted({int(p) for p in partitions.split(",") if p})
            mine = ours[int(number)]
            assert f"  {topics.split(',')[0]}{f'[{_runs(parts)}]' if parts else ''}" in mine, (name, line, mine)
            if values:
                assert mine.endswith(f"  records {len(values.split(','))}"), (name, line, mine)
                records += 1
            checked += 1
    assert checked >= 19 and records >= 2


def test_records_on_the_wire_through_a_kcat_template(capsys):
    """`kfmt dump --template FMT CAPTURE`: each record Produce requests and Fetch responses carry through the
    kcat-style template logs take (nothing else on stdout, as for logs): their values are tshark's, in the same
    order; a null key is empty, as kcat prints it."""
    import subprocess

    from test_wire_clients import CAPTURES
    from wire import tools_missing

    from kfmt.tools.cli import main

    path = str(CAPTURES / "ntop+nDPI/kafka.pcapng")
    assert main(["dump", "--template", "%t|%p|%o|%k|%K|%S|%s<end>\\n", path]) == 0  # (values hold newlines)
    lines = capsys.readouterr().out.split("<end>\n")[:-1]
    parts = [line.split("|", 6) for line in lines]
    assert parts and all(p[0] in ("sampleTopic", "LB_MAIN_LOG_INPUT") and p[3] == "" and p[4] == "-1" for p in parts)
    assert all(int(p[5]) == len(p[6].encode()) for p in parts)
    if not tools_missing():
        out = subprocess.run(["tshark", "-r", path, "-Y", "kafka.message_value", "-T", "fields", "-e",
                              "kafka.message_value"], capture_output=True, text=True, check=True).stdout  # fmt: skip
        theirs = [bytes.fromhex(v).decode() for line in out.splitlines() for v in line.split(",")]
        # (Debian's tshark 4.0 reads Produce up to v8: not the console producer's v9 request to sampleTopic)
        assert [p[6] for p in parts if p[0] == "LB_MAIN_LOG_INPUT"] == theirs and len(theirs) >= 2


def test_a_missing_segment_hides_one_message_and_the_stream_reads_on(tmp_path, capsys):
    """Three ApiVersions exchanges on a connection whose capture lacks a segment inside the second request: the
    problem says where the gap is and how many bytes of the message across it are unread, before and after it;
    the first and third exchanges are read (the stream goes on from the first whole frame after the gap), and the
    second response, whose request is lost, is said too. Exit 1."""
    import json

    import kfmt.protocol as P
    from kfmt.tools.cli import main

    def framed(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    reqs = [framed(P.write_request(18, 0, {}, correlation_id=i, client_id="client-" + "x" * 20)) for i in (1, 2, 3)]
    resps = [framed(P.write_response(18, 0, {"ErrorCode": 0, "ApiKeys": []}, correlation_id=i)) for i in (1, 2, 3)]
    n = len(reqs[0])
    up = [(True, 1, ACK | PSH, reqs[0]), (True, 1 + n, ACK | PSH, reqs[1][:10]),  # then 8 bytes the capture lacks
          (True, 1 + n + 18, ACK | PSH, reqs[1][18:]), (True, 1 + 2 * n, ACK | PSH, reqs[2])]  # fmt: skip
    path = tmp_path / "gap.pcap"
    _pcap(path, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), *up, (False, 1, ACK | PSH, b"".join(resps))])
    assert main(["dump", "--json", str(path)]) == 1
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["kind"], r["correlation_id"]) for r in rows] == [("request", 1), ("response", 1), ("request", 3),
                                                                  ("response", 3)]  # fmt: skip
    assert (
        f"the client's bytes lack 8 byte(s) from byte {n + 10} (a segment the capture lacks): the message across "
        f"the gap is unread (10 byte(s) of it before the gap, {n - 18} after it), read on from byte {2 * n}"
    ) in err
    assert "a response to correlation id 2, which no request of this connection carries" in err


def test_a_damaged_record_set_inside_a_captured_message_is_a_problem(tmp_path, capsys):
    """A Produce request whose batch has a byte flipped (its CRC no longer matches) reads as a message, and the
    damage is said as a problem at its field path in every mode of kfmt dump (text, --json, --records,
    --summary), exit 1: records hidden by damage are never called clean."""
    import kfmt.protocol as P
    from kfmt.tools.cli import main

    batch = bytearray(kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 20, timestamp=1)]))
    batch[-3] ^= 0xFF
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000,
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": bytes(batch).hex()}]}]}  # fmt: skip
    req = P.write_request(0, 9, body, correlation_id=1, client_id="c")
    path = tmp_path / "damaged.pcap"
    _pcap(
        path, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 1, ACK | PSH, len(req).to_bytes(4, "big") + req)]
    )
    for mode in ([], ["--json"], ["--records"], ["--summary"], ["--summary", "--deep"]):
        assert main(["dump", *mode, str(path)]) == 1, mode
        err = capsys.readouterr().err
        assert err.count("kfmt dump: problem: ") == 1, (mode, err)
        assert "Produce v9 request (correlation id 1): body.TopicData[0].PartitionData[0].Records at byte 0: " in err


def test_a_summary_checks_batches_by_their_crc_and_deep_opens_them(tmp_path, capsys):
    """--summary checks each v2 batch on the wire by its CRC-32C and says so: a gzip batch whose compressed bytes
    were damaged before its CRC was computed (as a faulty producer would send it) passes that check, and the
    summary says it was not decompressed; --summary --deep decompresses it and says the damage (exit 1), as the
    other outputs do."""
    import json
    import struct

    import kfmt.protocol as P
    from kfmt.runtime.checksums import crc32c
    from kfmt.tools.cli import main

    records = [kfmt.Record(key=b"k%d" % i, value=b"v" * 50, timestamp=1) for i in range(10)]
    good = kfmt.encode_batch(records, codec="gzip")
    bad = bytearray(good)
    bad[80] ^= 0xFF  # inside the gzip stream, then the CRC made to match
    bad[17:21] = struct.pack(">I", crc32c(bytes(bad[21:])))
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "t", "PartitionData": [
        {"Index": 0, "Records": good.hex()}, {"Index": 1, "Records": bytes(bad).hex()}]}]}  # fmt: skip
    req = P.write_request(0, 9, body, correlation_id=1, client_id="c")
    path = tmp_path / "sealed.pcap"
    _pcap(
        path, [(True, 0, SYN, b""), (False, 0, SYN | ACK, b""), (True, 1, ACK | PSH, len(req).to_bytes(4, "big") + req)]
    )
    assert main(["dump", "--summary", str(path)]) == 0
    said = capsys.readouterr()
    assert "batches on the wire: 2, 2 checked by their CRC-32C, not decompressed (--deep decompresses and reads " \
        "them)\n" in said.out and said.err == ""  # fmt: skip
    assert main(["dump", "--summary", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["batches"] == {"opened": 0, "crc_checked": 2}
    assert main(["dump", "--summary", "--deep", str(path)]) == 1
    said = capsys.readouterr()
    assert "batches on the wire: 1, each decompressed and its records read\n" in said.out  # (the other is damage)
    assert said.err.count("kfmt dump: problem: ") == 1
    assert "body.TopicData[0].PartitionData[1].Records at byte 0: " in said.err
    assert main(["dump", str(path)]) == 1  # (a message's line reads every batch)
    assert "PartitionData[1].Records at byte 0: " in capsys.readouterr().err
    assert main(["dump", "--deep", str(path)]) == 2  # (what it does is said: no option that does nothing)
    assert capsys.readouterr().err == (
        "kfmt dump: --deep goes with --summary of a capture (every other output decompresses every batch)\n"
    )


def _relinked(src, dst, how: str) -> None:
    """The packets of pcap/pcapng ``src`` written to pcap ``dst`` with another link layer (``how``): Ethernet with
    an 802.1Q VLAN tag, with two (802.1ad QinQ), Linux cooked v1 and v2, BSD loopback, raw IP, or each IPv4 packet
    as an IPv6 one (2001:db8::a.b.c.d, same TCP segment). Packet times kept."""
    import struct

    from kfmt.capture import PCAPNG, _ip, _pcapng
    from kfmt.capture import _pcap as pcap_records

    link = {"vlan": 1, "qinq": 1, "sll": 113, "sll2": 276, "null": 0, "raw": 101, "ipv6": 1}[how]
    with open(src, "rb") as f, open(dst, "wb") as out:
        magic = f.read(4)
        f.seek(0)
        packets = _pcapng(f, [0]) if magic == PCAPNG else pcap_records(f, src, magic, [0])
        w = dpkt.pcap.Writer(out, linktype=link, nano=True)
        for kind, ts, frame in packets:
            ip = _ip(kind, frame)
            if ip is None:
                continue
            if how == "ipv6":
                v6 = dpkt.ip6.IP6(src=b"\x20\x01\x0d\xb8" + bytes(8) + ip.src, dst=b"\x20\x01\x0d\xb8" + bytes(8) + ip.dst,
                                  nxt=dpkt.ip.IP_PROTO_TCP, hlim=64, data=ip.data)  # fmt: skip
                v6.plen = len(bytes(ip.data))
                body, ethertype = bytes(v6), 0x86DD
            else:
                body, ethertype = bytes(ip), 0x0800
            macs = bytes(range(1, 7)) + bytes(range(7, 13))
            wrapped = {
                "vlan": macs + struct.pack(">HHH", 0x8100, 5, ethertype),
                "qinq": macs + struct.pack(">HHHHH", 0x88A8, 100, 0x8100, 5, ethertype),
                "ipv6": macs + struct.pack(">H", ethertype),
                "sll": struct.pack(">HHH8sH", 0, 1, 6, bytes(8), ethertype),
                "sll2": struct.pack(">HHiHBB8s", ethertype, 0, 3, 1, 0, 6, bytes(8)),
                "null": struct.pack("<I", 2),
                "raw": b"",
            }[how]
            w.writepkt(wrapped + body, ts=ts)


@pytest.mark.parametrize("how", ["vlan", "qinq", "sll", "sll2", "null", "raw", "ipv6"])
def test_every_link_layer_and_ipv6_read_alike(tmp_path, capsys, how):
    """A capture's packets behind a VLAN tag or two, in Linux cooked captures (v1, and v2 as `tcpdump -i any`
    writes), on BSD loopback, as raw IP, and carried over IPv6: every message reads as from the original (same
    packet numbers, times, APIs and bodies), and tshark reads the same messages from the new file as from the
    original."""
    import json
    import subprocess

    from test_wire_clients import CAPTURES
    from wire import tools_missing

    from kfmt.tools.cli import main

    src = CAPTURES / "ntop+nDPI/kafka.pcapng"
    main(["dump", "--json", str(src)])
    want = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    dst = tmp_path / f"{how}.pcap"
    _relinked(src, dst, how)
    assert main(["dump", "--json", str(dst)]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(got) == len(want) == 25

    def same(row):  # the addresses of IPv6 differ; the numbering counts only IP packets (all of them here)
        return {k: v for k, v in row.items() if k not in ("client", "broker")}

    assert [same(r) for r in got] == [same(r) for r in want]
    if how == "ipv6":
        assert all(r["broker"].startswith("2001:db8::") and r["broker"].endswith(":9092") for r in got)
    else:
        assert [(r["client"], r["broker"]) for r in got] == [(r["client"], r["broker"]) for r in want]
    if not tools_missing():  # the file is what it claims to be: tshark reads the same Kafka messages from both

        def ids(path):
            return subprocess.run(["tshark", "-r", str(path), "-Y", "kafka", "-T", "fields", "-e", "frame.number", "-e",
                                   "kafka.correlation_id"], capture_output=True, text=True, check=True).stdout  # fmt: skip

        assert ids(dst) == ids(src) and len(ids(src).splitlines()) >= 25


def test_sides_of_a_connection_open_before_the_capture_whatever_comes_first(tmp_path, capsys):
    """A connection open before the capture: its response captured before its request (packets out of order) is
    still the broker's (a response with correlation id 2 reads as a Produce v2 request too: the side whose frames
    answer the other's by correlation id is the broker); a lone response, its request not captured, is not read as a
    request (id 1 as Produce v1): with one side silent, the side on the higher (ephemeral) port is the client. Found
    by make fuzz-capture."""
    import json

    from test_wire_clients import CAPTURES

    from fuzz.capture import packets, write
    from kfmt.tools.cli import main

    src = CAPTURES / "deepflowio+deepflow/18-api-versions-v3.pcap"
    main(["dump", "--json", str(src)])
    want = [(j["kind"], j["api"], j["correlation_id"]) for j in map(json.loads, capsys.readouterr().out.splitlines())]
    pk = packets(src)
    write(tmp_path / "swapped.pcap", [pk[1], pk[0], *pk[2:]])
    assert main(["dump", "--json", str(tmp_path / "swapped.pcap")]) == 0
    got = [(j["kind"], j["api"], j["correlation_id"]) for j in map(json.loads, capsys.readouterr().out.splitlines())]
    assert sorted(got) == sorted(want) == [("request", "ApiVersions", 2), ("response", "ApiVersions", 2)]
    lone = packets(CAPTURES / "deepflowio+deepflow/00-produce-v2.pcap")[1:]  # the response alone
    write(tmp_path / "lone.pcap", lone)
    assert main(["dump", "--json", str(tmp_path / "lone.pcap")]) == 0
    out, err = capsys.readouterr()
    # a note: its request went before the capture began (the broker's side is a whole frame: Kafka's traffic)
    assert out == "" and err == (
        "kfmt dump: note: 127.0.0.1:34128 -> 127.0.1.1:9092: server byte 4: a response to "
        "correlation id 1, which no request of this connection carries\n"
    )


def test_the_fast_path_reads_segments_as_dpkt_does(tmp_path):
    """Ethernet + IPv4 + TCP frames are read with struct (kfmt.capture._ethernet_ipv4_tcp) instead of dpkt's objects:
    on every packet of the public captures and of a capture made here with padded, optioned and cut frames, it
    gives what dpkt gives, or leaves the frame to dpkt."""
    import socket
    import struct

    from test_wire_clients import CAPTURES

    from fuzz.capture import packets, synthetic
    from kfmt.capture import _ethernet_ipv4_tcp, _ip

    frames = [p for path in sorted(CAPTURES.rglob("*.pcap*")) for p in packets(path)]
    frames += packets(synthetic(tmp_path / "s.pcap", 3))
    tcp = dpkt.tcp.TCP(sport=40000, dport=9092, seq=7, flags=0x18, data=b"abc")
    tcp.opts, tcp.off = b"\x01\x01\x08\x0a" + bytes(8), 8  # timestamps: a 32-byte TCP header
    ip = dpkt.ip.IP(src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=6, data=tcp, opts=b"\x01\x01\x01\x00", hl=6)
    ip.len = len(ip)
    eth = bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip))
    frames += [(1, 0.0, eth), (1, 0.0, eth + bytes(20)), (1, 0.0, eth[:-2])]  # IP options; padded; cut short
    frag = bytearray(eth)
    struct.pack_into(">H", frag, 20, 0x2000)  # more fragments follow: not a whole segment
    frames.append((1, 0.0, bytes(frag)))
    read = 0
    for link, _, frame in frames:
        seg = _ethernet_ipv4_tcp(link, frame)
        if seg is None:
            continue
        ip = _ip(link, frame)
        t = ip.data
        a, b = socket.inet_ntop(socket.AF_INET, ip.src), socket.inet_ntop(socket.AF_INET, ip.dst)
        assert seg == ((a, t.sport), (b, t.dport), t.seq, t.flags & 0xFF, bytes(t.data))
        read += 1
    assert read >= 150 and _ethernet_ipv4_tcp(1, eth)[4] == b"abc" == _ethernet_ipv4_tcp(1, eth + bytes(20))[4]
    assert _ethernet_ipv4_tcp(1, eth[:-2]) is None and _ethernet_ipv4_tcp(1, bytes(frag)) is None


def test_a_damaged_first_frame_of_a_kafka_connection_is_a_problem_not_another_protocol(tmp_path, capsys):
    """The first byte of a connection's first request flipped (its size now claims more than the client sent): the
    broker's side is still whole frames, so the connection is Kafka's and what does not read is said as problems
    (exit 1), not set aside as another protocol's (found by make fuzz-capture, seed 5)."""
    from fuzz.capture import _payload_at, packets, synthetic, write
    from kfmt.tools.cli import main

    pkts = packets(synthetic(tmp_path / "synthetic.pcap", 5))
    at, _ = _payload_at(pkts[2])
    frame = bytearray(pkts[2][2])
    frame[at] ^= 0x80
    write(tmp_path / "flipped.pcap", [*pkts[:2], (pkts[2][0], pkts[2][1], bytes(frame)), *pkts[3:]])
    assert main(["dump", "--json", str(tmp_path / "flipped.pcap")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "not Kafka traffic" not in err
    assert "problem: 10.0.0.1:40000 -> 10.0.0.2:9092: client byte 0: " in err
    assert err.count("which no request of this connection carries") == 24  # every answer, said
