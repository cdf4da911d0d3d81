"""Real traffic, made here: confluent-kafka (librdkafka), kafka-python and aiokafka produce and consume against
librdkafka's mock cluster on 127.0.0.1, captured by Debian's dumpcap and cut into TCP streams by tshark
(tests/wire.py). Every frame they exchange is read by every backend and written back byte for byte; the records
each producer sent are found in its Produce requests and in the Fetch responses its consumer read; tshark's own
dissector gives the same API, version and correlation id for every request it knows."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import subprocess
import time
from pathlib import Path

import pytest
from wire import capture, mock_cluster, tcp_streams, tools_missing

from kfmt.protocol.conversation import read_conversation, split_frames

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(bool(tools_missing()), reason=str(tools_missing()))

N = 40
CLIENTS = {"ck": "lz4", "kp": "zstd", "aio": "snappy"}  # each producer's topic and the codec it compresses with


def _records(client: str) -> list[tuple[bytes, bytes]]:
    return [(f"{client}-key-{i}".encode(), f"{client} value {i} ".encode() * (1 + i % 7)) for i in range(N)]


def _confluent(addr: str, topic: str, codec: str) -> int:
    import confluent_kafka as ck

    p = ck.Producer({"bootstrap.servers": addr, "compression.type": codec, "enable.idempotence": True,
                     "linger.ms": 20, "log_level": 3})  # fmt: skip
    for k, v in _records(topic):
        p.produce(topic, key=k, value=v, headers=[("client", topic.encode()), ("n", None)])
    assert p.flush(30) == 0
    c = ck.Consumer({"bootstrap.servers": addr, "group.id": f"g-{topic}", "enable.auto.commit": False,
                     "log_level": 3})  # fmt: skip
    parts = c.list_topics(topic, timeout=10).topics[topic].partitions
    c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in parts])
    got, deadline = 0, time.time() + 30
    while got < N and time.time() < deadline:
        m = c.poll(0.5)
        got += m is not None and m.error() is None
    c.close()
    return got


def _kafka_python(addr: str, topic: str, codec: str) -> int:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    # (pinned: kafka-python 3 asks ApiVersions v3 or v4, which the mock lacks and answers in a form of its own)
    p = KafkaProducer(bootstrap_servers=addr, compression_type=codec, linger_ms=20, api_version=(2, 3))
    for k, v in _records(topic):
        p.send(topic, key=k, value=v, headers=[("client", topic.encode())])
    p.flush(30)
    p.close()
    c = KafkaConsumer(bootstrap_servers=addr, auto_offset_reset="earliest", enable_auto_commit=False, api_version=(2, 3),
                      consumer_timeout_ms=8000)  # fmt: skip
    c.assign([TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic) or ())])
    got = sum(1 for _, m in zip(range(N), c))
    c.close()
    return got


def _aiokafka(addr: str, topic: str, codec: str) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> int:
        p = AIOKafkaProducer(bootstrap_servers=addr, compression_type=codec, linger_ms=20)
        await p.start()
        try:
            sent = [
                await p.send(topic, key=k, value=v, headers=[("client", topic.encode())]) for k, v in _records(topic)
            ]
            await asyncio.gather(*sent)
            parts = sorted(await p.partitions_for(topic))
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=addr, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            c.assign([TopicPartition(topic, p) for p in parts])
            await c.seek_to_beginning()
            got = 0
            while got < N:
                batch = await c.getmany(timeout_ms=8000)
                if not batch:
                    break
                got += sum(len(v) for v in batch.values())
            return got
        finally:
            with contextlib.suppress(asyncio.CancelledError):  # aiokafka 0.14 without a group, on Python 3.11
                await c.stop()

    return asyncio.run(run())


DRIVERS = {"ck": _confluent, "kp": _kafka_python, "aio": _aiokafka}


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    """(the capture, the broker's port, what each consumer read)."""
    pytest.importorskip("aiokafka")
    pcap = tmp_path_factory.mktemp("wire") / "clients.pcapng"
    with mock_cluster() as (_, addr):
        port = int(addr.rsplit(":", 1)[1])
        with capture(port, pcap):
            consumed = {client: DRIVERS[client](addr, client, codec) for client, codec in CLIENTS.items()}
    return pcap, port, consumed


def _batches(node):
    """Every decoded batch under a message's JSON."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "_batches":
                yield from v
            else:
                yield from _batches(v)
    elif isinstance(node, list):
        for v in node:
            yield from _batches(v)


def _read_all(streams, backend, in_flight_ok=False):
    """Every connection read (kfmt.protocol.read_conversation), each message checked to write back its frame's
    bytes: (requests, responses, problems)."""
    requests, responses, problems = [], [], []
    for client, server in streams:
        conv = read_conversation(client, server, backend=backend)
        at = {side: {f.position: f.data for f in split_frames(data)[0]} for side, data in (("client", client),
                                                                                             ("server", server))}  # fmt: skip
        for x in conv.exchanges:
            assert x.request.encode() == at["client"][x.request_position], (x.request.api_name, backend)
            requests.append(x.request)
            if x.response is not None:
                assert x.response.encode() == at["server"][x.response_position], (x.response.api_name, backend)
                responses.append(x.response)
        assert not conv.tokens and not conv.tails["client"], conv.tails  # no SASL here; no request cut short
        # a broker answers a connection's requests in order: those without a response are the last ones, still in
        # flight when the client closed; every frame the broker sent is a response or a problem said
        answered = [x.response is not None for x in conv.exchanges]
        assert in_flight_ok or answered == sorted(answered, reverse=True), [x.request.api_name for x in conv.exchanges]
        assert sum(answered) + len(conv.problems) == len(split_frames(server)[0])
        problems += conv.problems
    return requests, responses, problems


def test_every_frame_real_clients_exchange_reads_and_writes_back_byte_for_byte(traffic):
    pcap, port, consumed = traffic
    assert consumed == {client: N for client in CLIENTS}, consumed
    streams = tcp_streams(pcap, port)
    assert len(streams) >= 4
    seen = None
    for backend in ("python", "native", "construct"):
        requests, responses, problems = _read_all(streams, backend)
        apis = collections.Counter(m.api_name for m in requests)
        assert {"ApiVersions", "Metadata", "Produce", "Fetch"} <= set(apis), apis
        for line in problems:  # only what Kafka's own client could not read either, each a located line
            assert "\n" not in line and line.startswith("server byte ") and "ApiVersions" in line, line
        said = (sorted(apis.items()), len(responses), problems)
        assert seen is None or said == seen, backend  # every backend reads the same
        seen = said


def test_each_producers_records_are_in_its_produce_requests_and_come_back_in_fetch_responses(traffic):
    pcap, port, _ = traffic
    requests, responses, _ = _read_all(tcp_streams(pcap, port), None)
    produced = [b for m in requests if m.api_name == "Produce" for b in _batches(m.to_json()["body"])]
    fetched = [b for m in responses if m.api_name == "Fetch" for b in _batches(m.to_json()["body"])]
    for client, codec in CLIENTS.items():
        want = {(k.decode(), v.decode()) for k, v in _records(client)}
        for where, batches in (("Produce requests", produced), ("Fetch responses", fetched)):
            mine = [(b, r) for b in batches for r in b["records"] if r["key"].startswith(f"{client}-key-")]
            assert {(r["key"], r["value"]) for _, r in mine} == want, (client, where)
            assert {b["codec"] for b, _ in mine} == {codec}, (client, where, {b["codec"] for b, _ in mine})
            assert all(r["headers"][0] == ["client", client] for _, r in mine)


def test_the_spark_capture_source_reads_real_clients_traffic_as_kfmt_dump_does(traffic, spark):
    """The kafka-capture source (decoded in the JVM) on the real clients' capture: the messages `kfmt dump --json`
    reads, and with rows=records each producer's records, compressed with its codec, in its Produce requests and
    back in the Fetch responses, as `kfmt dump --records --json` gives them."""
    from test_capture_spark import _dumped_records, _jar, _records_of, dump

    from kfmt.spark.jvm import as_jvm_reads

    pcap, _, _ = traffic
    want, said, noted, _ = dump(pcap)
    got = _jar().capture_check([str(pcap)])[str(pcap)]
    assert [as_jvm_reads(r) for r in want] == got["rows"]
    # (how many Fetch polls a client makes depends on timing: each client's APIs, not a count, say the capture is whole)
    apis = {(r["client_id"], r["api"]) for r in want if r["kind"] == "request"}
    assert len({c for c, _ in apis}) >= 3 and {"ApiVersions", "Metadata", "Produce", "Fetch"} <= {a for _, a in apis}
    assert (len(said), len(noted)) == (len(got["problem"]), len(got["note"]))
    df = spark.read.format("kafka-capture").option("rows", "records").option("on_corrupt", "skip").load(str(pcap))
    assert sorted(_records_of(df), key=repr) == _dumped_records([pcap])
    for client, codec in CLIENTS.items():
        for api in ("Produce", "Fetch"):
            # (a Fetch from v13 names its topics by id: the records are told apart by their keys)
            mine = df.where(f"cast(key as string) like '{client}-key-%' and api = '{api}' and not is_control").collect()
            assert {(r.key, r.value) for r in mine} == set(_records(client)), (client, api)
            assert {r.codec for r in mine} == {codec}, (client, api)


def test_tshark_reads_the_same_request_headers(traffic):
    """Wireshark's Kafka dissector (Debian's tshark, independent of kfmt): API key, version and correlation id of
    every request it dissects, per connection, as kfmt reads them."""
    pcap, port, _ = traffic
    out = subprocess.run(["tshark", "-r", str(pcap), "-d", f"tcp.port=={port},kafka", "-Y", "kafka.request_key",
                          "-T", "fields", "-E", "occurrence=a", "-e", "tcp.srcport", "-e", "kafka.request_key",
                          "-e", "kafka.request.version", "-e", "kafka.correlation_id"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    theirs: collections.Counter = collections.Counter()
    for line in out.splitlines():
        src, *fields = line.split("\t")
        if int(src) != port:  # a request (tshark also names a response's request key)
            theirs.update(zip(*(map(int, f.split(",")) for f in fields)))
    requests, _, _ = _read_all(tcp_streams(pcap, port), None)
    ours = collections.Counter((m.api_key, m.api_version, m.correlation_id) for m in requests)
    assert sum(theirs.values()) >= len(requests) // 2, (theirs, ours)
    assert not theirs - ours, theirs - ours


CAPTURES = ROOT.parent / "shared" / "fixtures" / "wire-captures"
#: per public capture: (requests read, responses read, problems): flows captured from their middle hold responses
#: to requests the capture does not have (the README there says which)
PUBLIC = {
    "40t+go-sniffer/kafka.pcap": (2, 2, 0), "arkime+arkime/kafka.pcap": (1, 0, 0),
    "deepflowio+deepflow/00-produce-v2.pcap": (1, 1, 0), "deepflowio+deepflow/00-produce-v7-sw8.pcap": (1, 1, 0),
    "deepflowio+deepflow/00-produce-v9.pcap": (1, 1, 0), "deepflowio+deepflow/01-fetch-v12-ok.pcap": (1, 1, 0),
    "deepflowio+deepflow/01-fetch-v12-perf.pcap": (1, 1, 0), "deepflowio+deepflow/01-fetch-v12-unknown.pcap": (1, 1, 0),
    "deepflowio+deepflow/11-join-group-v7.pcap": (1, 1, 0), "deepflowio+deepflow/13-leave-group-v4.pcap": (1, 1, 0),
    "deepflowio+deepflow/14-sync-group-v5.pcap": (1, 1, 0), "deepflowio+deepflow/18-api-versions-v3.pcap": (1, 1, 0),
    "deepflowio+deepflow/mixed-with-unsupported.pcap": (3, 3, 0),
    "deepflowio+deepflow/produce-v9.history-b3b9b608.pcap": (1, 0, 0), "ntop+nDPI/kafka.pcapng": (14, 11, 3),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_captures_read_and_write_back_byte_for_byte(name):
    """The public captures in ../shared/fixtures/wire-captures (real clients and brokers, licensed there), cut into
    connections by tshark: every message read by every backend and written back byte for byte; a response whose
    request the capture lacks is a problem said with its byte, never a misread."""
    path = CAPTURES / name
    streams = tcp_streams(path, {9092, 36333}, opened_only=False)
    for backend in ("python", "native", "construct"):
        requests, responses, problems = _read_all(streams, backend, in_flight_ok=True)
        assert (len(requests), len(responses), len(problems)) == PUBLIC[name], (backend, problems)
        assert all(re.fullmatch(r"server byte \d+: a response to correlation id \d+, which no request of this "
                                r"connection carries", p) for p in problems), problems  # fmt: skip


def test_connections_are_put_back_together_as_tshark_does(traffic):
    """kfmt.capture reads the captures itself (pcap, nanosecond pcap, Linux cooked, pcapng; dpkt for the packet
    headers) and puts each TCP connection back together: every connection's two directions byte for byte what
    tshark's "follow" gives, on the public captures and on the one made here; no hole, nothing repeated unsaid."""
    from kfmt.capture import connections

    pcap, port, _ = traffic
    for path, ports, opened_only in [(pcap, {port}, True)] + [(CAPTURES / n, {9092, 36333}, False) for n in PUBLIC]:
        conns = connections(path)
        if opened_only:
            conns = [c for c in conns if c.opened]
        ours = sorted((bytes(c.to_server.data), bytes(c.to_client.data)) for c in conns)
        assert ours == sorted(tcp_streams(path, ports, opened_only)), path
        assert all(c.to_server.hole_at is None and c.to_client.hole_at is None for c in conns), path
        assert all(c.server[1] in ports for c in conns if c.to_server.data or c.to_client.data), path
