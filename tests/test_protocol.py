"""Kafka's network protocol (kfmt.protocol): every request and response of every API and version, from Kafka's
JSON message specs (tests/fixtures/kafka: apache/kafka at the commit in its COMMIT file; tests/fixtures/kafka-4.1:
Kafka 4.1's specs as kafka-python 3.0.12 ships them; Apache License 2.0, see NOTICE).

The independent sources: the spec files themselves (a sample message of every API and version is built from
them, not from kfmt's schemas), kafka-python 3.0.12's protocol classes (they read every frame kfmt writes of the
APIs they cover and write it back to the same bytes), and Kafka's rules as its source states them."""

from __future__ import annotations

import array
import base64
import functools
import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest

import kfmt
import kfmt.protocol as P
from generator.frontends.kafka_protocol import FOLDER, Source, parts, protocol_files, protocol_schemas
from generator.frontends.kafka_spec import Versions, parse, to_yaml
from kfmt.codec.formats import available_backends
from kfmt.runtime.errors import CodecError

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "kafka"
NEWER = ROOT / "tests" / "fixtures" / "kafka-4.1"
COMMIT = (TREE / "COMMIT").read_text().strip()
BACKENDS = [b for b in ("python", "construct", "native") if b in available_backends()]
#: spec files of the newer folder that are not the protocol's (the consumer protocol's, which schemas/messages
#: lowers from the pinned tree)
NOT_PROTOCOL = {"ConsumerProtocolAssignment.json", "ConsumerProtocolSubscription.json"}


def _sources():
    base = Source(TREE / FOLDER, f"apache/kafka {COMMIT} {FOLDER}")
    newer = Source(NEWER, (NEWER / "SOURCE").read_text().splitlines()[0].strip())
    return base, newer


def test_the_protocol_schemas_are_kafkas_specs_lowered():
    """`make import-kafka-specs` reproduces schemas/protocol exactly, and every spec file of both folders is
    lowered (or is not a protocol message)."""
    lowered = protocol_schemas(*_sources())
    committed = {p.stem: p.read_text() for p in (ROOT / "schemas" / "protocol").glob("*.yaml")}
    assert set(lowered) == set(committed)
    for stem, (schema, source) in lowered.items():
        assert to_yaml(schema, source) == committed[stem], stem
    newer = {p.name for p in NEWER.glob("*.json")}
    assert newer - protocol_files(NEWER) == NOT_PROTOCOL
    pinned = {p.name for p in (TREE / FOLDER).glob("*Re*.json") if p.stem.endswith(("Request", "Response"))}
    assert pinned <= protocol_files(TREE / FOLDER) and len(pinned) == 176


@functools.lru_cache(maxsize=1)
def _spec_files():
    """Every protocol spec of both sources, by (apiKey, type): {"tree" and/or "newer": (spec, where)}, the tree's
    first."""
    out: dict = {}
    for source, folder in (("tree", TREE / FOLDER), ("newer", NEWER)):
        for name in sorted(protocol_files(folder)):
            spec = parse((folder / name).read_text(), name)
            if spec["type"] in ("request", "response"):
                out.setdefault((spec["apiKey"], spec["type"]), {})[source] = (spec, name)
    return out


def test_every_api_and_version_of_both_sources():
    """apis(): the 88 APIs of the pinned tree and Kafka 4.1 (ListConfigResources, 4.1's name for key 74), each
    from the oldest version either source has to the newest; Kafka's unstable versions marked."""
    specs = _spec_files()
    keys = {k for k, _ in specs}
    got = {a.key: a for a in P.apis()}
    assert set(got) == keys and len(got) == 88
    for key, a in got.items():
        for kind in ("request", "response"):
            ranges = [Versions.parse(s["validVersions"], w) for s, w in specs[(key, kind)].values()]
            assert a.versions == range(min(r.lo for r in ranges), max(r.hi for r in ranges) + 1), (a.name, kind)
        newest = list(specs[(key, "request")].values())[-1][0]
        assert a.name == newest["name"][: -len("Request")]
        if newest.get("latestVersionUnstable"):
            assert a.versions.stop - 1 in a.unstable
    assert got[0].versions == range(0, 14) and got[1].versions == range(0, 19)  # Produce 0-13, Fetch 0-18
    assert got[74].name == "ListConfigResources"
    assert not got[0].flexible(8) and got[0].flexible(9) and got[1].flexible_from == 12


def test_header_versions_are_kafkas():
    """ApiMessageType's rules: request header 2 when flexible else 1 (ControlledShutdown v0: 0); response header
    1 when flexible else 0, ApiVersions' always 0."""
    produce, cs, av = P.api(0), P.api(7), P.api(18)
    assert [produce.request_header_version(v) for v in (8, 9)] == [1, 2]
    assert [produce.response_header_version(v) for v in (8, 9)] == [0, 1]
    assert cs.request_header_version(0) == 0 and cs.request_header_version(1) == 1
    assert [av.response_header_version(v) for v in av.versions] == [0] * len(av.versions)
    assert av.request_header_version(3) == 2


# ------------------------------------------------------------------ sample messages, from the spec files
BATCH = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v", timestamp=1000, headers=[("h", b"x")])], magic=2)
SAMPLES = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6, "float64": 1.5, "bool": True,
           "string": "s", "bytes": "0102", "records": BATCH.hex(),
           "uuid": base64.urlsafe_b64encode(bytes(range(1, 17))).rstrip(b"=").decode()}  # fmt: skip


def _spec_for(key: int, kind: str, version: int):
    """The spec (and its common structs) that gives ``version``, as kfmt chose it (the newer source above the
    pinned one's versions)."""
    specs = _spec_files()[(key, kind)]
    for p in parts(specs.get("tree"), specs.get("newer"), ("tree", "newer")):
        if p.lo <= version <= p.hi:
            return p.spec
    raise AssertionError(f"{key} {kind} v{version}")


def _sample(fields: list, spec: dict, version: int) -> dict:
    """A body with every field ``version`` has set (tagged ones too, so they are written), from the spec."""
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    out = {}
    for f in fields:
        v = Versions.parse(f.get("versions"), f["name"])
        if v.lo is None or version < v.lo or (v.hi is not None and version > v.hi):
            continue
        out[f["name"]] = _value(f, spec, version, common)
    return out


def _sample_body(key: int, kind: str, version: int) -> dict:
    """The sample body of an API's request or response at ``version``, from its spec file."""
    spec = _spec_for(key, kind, version)
    return _sample(spec["fields"], spec, version)


def _write(key: int, kind: str, version: int, body: dict) -> bytes:
    """``body`` as a frame of correlation id 42 (a request's client id "kfmt" where its header has one)."""
    if kind == "response":
        return P.write_response(key, version, body, correlation_id=42)
    extra = {"client_id": "kfmt"} if P.api(key).request_header_version(version) > 0 else {}
    return P.write_request(key, version, body, correlation_id=42, **extra)


def _read(frame: bytes, kind: str, key: int, version: int, backend: str):
    """A frame read as a request, or as the response to ``key`` at ``version``."""
    if kind == "request":
        return P.read_request(frame, backend=backend)
    return P.read_response(frame, key, version, backend=backend)


def _value(f: dict, spec: dict, version: int, common: dict):
    t = f["type"]
    elem = t[2:] if t.startswith("[]") else t
    if elem in SAMPLES:
        one = SAMPLES[elem]
    else:
        one = _sample(f.get("fields") or common[elem], spec, version)
    return [one] if t.startswith("[]") else one


def _kafka_python_classes() -> dict:
    import kafka.protocol as kp
    from kafka.protocol.api_message import ApiMessage

    for m in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        if not m.name.split(".")[-1].startswith(("old", "generate", "schemas")):
            try:
                importlib.import_module(m.name)
            except ImportError:
                pass
    out, todo = {}, list(ApiMessage.__subclasses__())
    while todo:
        c = todo.pop()
        todo += c.__subclasses__()
        if getattr(c, "_class_version", None) is None and getattr(c, "_json", None):
            out[(c._json["apiKey"], c._json["type"])] = c
    return out


def _cases():
    for a in P.apis():
        for v in a.versions:
            yield a.key, v


@pytest.mark.parametrize("kind", ["request", "response"])
def test_every_api_and_version_writes_what_kafka_python_reads_and_writes_back(kind):
    """A sample of every API x version x kind, built from the spec file: kfmt writes it; kafka-python 3.0.12
    reads the frame and writes the same bytes (every API and version it has); kfmt reads it in every backend
    to the same JSON and re-encodes it byte for byte."""
    kp = _kafka_python_classes()
    covered = 0
    for key, v in _cases():
        a = P.api(key)
        body = _sample_body(key, kind, v)
        if (key, kind) == (18, "response"):  # kafka-python reads an ApiVersions response with an error as v0
            body["ErrorCode"] = 0
        frame = _write(key, kind, v, body)
        for backend in BACKENDS:
            m = _read(frame, kind, key, v, backend)
            assert m.encode() == frame, (a.name, v, backend)
            got = m.to_json()["body"]
            assert _plain(got) == body, (a.name, v, backend)
        cls = kp.get((key, kind))
        if cls is None or not cls._valid_versions[0] <= v <= cls._valid_versions[1] or v < _min(cls):
            continue
        if kind == "request":
            theirs = cls.decode(frame, version=v, header=True)
            assert theirs.encode(version=v, header=True) == frame, (a.name, kind, v)
        else:  # kafka-python 3.0.12 reads a response's header only with its client state: the body alone
            body_at = 4 + (a.response_header_version(v) == 1)  # correlation id (and no tags)
            assert cls.decode(frame[body_at:], version=v).encode() == frame[body_at:], (a.name, kind, v)
        covered += 1
    assert covered >= 239  # kafka-python's 52 APIs at every version it reads (a test fails if that shrinks)


def _json_codes(node) -> list[int]:
    """The test's own reading of the error codes in a message's JSON: every ErrorCode other than 0, in order."""
    if isinstance(node, list):
        return [c for x in node for c in _json_codes(x)]
    if not isinstance(node, dict):
        return []
    here = [v for k, v in node.items() if k == "ErrorCode" and v]
    return here + [c for k, v in node.items() if not k.startswith("_") for c in _json_codes(v)]


@pytest.mark.parametrize("kind", ["request", "response"])
def test_error_codes_and_record_sets_read_without_the_json_are_the_jsons(kind):
    """What a summary reads of a message without its JSON (Message.error_codes: the error codes, each record set
    read by the hook at its path) is what its to_json() holds, for every API x version x kind and backend: the
    samples' codes (2 in every ErrorCode), a good record set counted, a damaged one (a byte flipped) said at the
    same path with the same words; and a record set whose CRC matches is checked by it alone ("crc")."""
    from kfmt.protocol.records import RecordSets

    bad = bytearray(BATCH)
    bad[-2] ^= 0xFF
    seen = 0
    for key, v in _cases():
        for records in (BATCH, bytes(bad)):
            body = json.loads(json.dumps(_sample_body(key, kind, v)).replace(BATCH.hex(), records.hex()))
            frame = _write(key, kind, v, body)
            for backend in BACKENDS:
                m = _read(frame, kind, key, v, backend)
                j = m.to_json(records=False)
                deep, shallow = RecordSets(backend, records=False), RecordSets(backend, records="crc")
                assert m.error_codes(deep) == _json_codes(j["body"]), (key, kind, v, backend)
                assert m.error_codes(shallow) == _json_codes(j["body"])
                damage = [n for n in j.get("notes", []) if n.startswith("body.")]
                assert deep.problems == damage and shallow.problems == damage, (key, kind, v, backend)
                batches = str(j["body"]).count("'record_count'")  # (the batches read whole)
                assert deep.opened == batches and deep.sealed == 0
                assert (shallow.sealed, shallow.opened) == ((batches, 0) if records == BATCH else (0, 0))
                seen += bool(batches) + bool(damage) + bool(_json_codes(j["body"]))
    assert seen >= (80 if kind == "request" else 400)  # (record sets, damage and error codes were there to find)


def _min(cls) -> int:
    return Versions.parse(cls._json["validVersions"], "kp").lo or 0


def _plain(j):
    """kfmt's JSON without what kfmt adds beside Kafka's (decoded record sets)."""
    if isinstance(j, dict):
        return {k: _plain(v) for k, v in j.items() if not k.startswith("_batches")}
    if isinstance(j, list):
        return [_plain(x) for x in j]
    return j


# ------------------------------------------------------------------ frames as Kafka and its clients have them
def test_records_inside_a_produce_request_are_decoded_and_a_cut_batch_is_partial():
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000,
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": (BATCH * 2).hex()}]}]}  # fmt: skip
    frame = P.write_request(0, 9, body, correlation_id=1, client_id="c")
    m = P.read_request(frame)
    part = m.to_json()["body"]["TopicData"][0]["PartitionData"][0]
    assert [b["base_offset"] for b in part["_batches"]] == [0, 0]
    assert part["_batches"][0]["records"][0]["value"] == "v" and "_partial" not in part
    # a Fetch response's last batch cut at the partition's byte limit: partial, not damage
    resp = {"ThrottleTimeMs": 0, "ErrorCode": 0, "SessionId": 0, "Responses": [{"Topic": "t", "Partitions": [{
        "PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": 2, "LastStableOffset": 2, "LogStartOffset": 0,
        "AbortedTransactions": [], "PreferredReadReplica": -1, "Records": (BATCH + BATCH[:30]).hex()}]}]}  # fmt: skip
    r = P.read_response(P.write_response(1, 11, resp, correlation_id=5), 1, 11)
    p = r.to_json()["body"]["Responses"][0]["Partitions"][0]
    assert len(p["_batches"]) == 1 and p["_partial"] == {"position": len(BATCH), "bytes": 30}
    assert r.problems() == []
    # a damaged batch: located at its field path, the message around it kept
    bad = bytearray(BATCH)
    bad[-2] ^= 0xFF
    resp["Responses"][0]["Partitions"][0]["Records"] = bytes(bad).hex()
    r = P.read_response(P.write_response(1, 11, resp), 1, 11)
    assert r.problems() and r.problems()[0].startswith("body.Responses[0].Partitions[0].Records at byte 0: ")
    assert r.to_json()["body"]["Responses"][0]["Partitions"][0]["HighWatermark"] == 2


def test_unknown_tags_their_order_and_trailing_bytes_are_kept():
    """A flexible frame with a tag Kafka's spec does not name, tags out of order, and a byte after the body (as
    librdkafka's mock cluster sends after a Metadata v13 response): each re-encodes to its own bytes."""
    frame = P.write_request(3, 12, {"Topics": None, "AllowAutoTopicCreation": True,
                                    "IncludeTopicAuthorizedOperations": False}, client_id="c")  # fmt: skip
    assert frame.endswith(b"\x00")  # the body's empty tag section
    tagged = frame[:-1] + bytes([2, 9, 1, 0xAA, 3, 0])  # tags 9 then 3: unknown, and out of order
    for backend in BACKENDS:
        m = P.read_request(tagged + b"\x07", backend=backend)
        assert m.encode() == tagged + b"\x07"
        assert m.trailing == b"\x07" and "follow" in m.to_json()["notes"][0]
        assert m.to_json()["body"]["_unknownTaggedFields"] == [{"tag": 9, "data": "aa"}, {"tag": 3, "data": ""}]


def test_kafkas_refusals_are_one_located_line():
    with pytest.raises(CodecError, match=r"header.RequestApiKey at byte 0: api_key 999"):
        P.read_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00")
    with pytest.raises(CodecError, match=r"Produce v99: not a version"):
        P.read_request(b"\x00\x00\x00\x63\x00\x00\x00\x01\x00\x00")
    with pytest.raises(CodecError, match=r"^body"):
        P.read_request(P.write_request(3, 4, {"Topics": [{"Name": "t"}], "AllowAutoTopicCreation": True})[:-3])
    # a field a version lacks holds only its default: Kafka's writers refuse anything else
    with pytest.raises(CodecError, match=r"body.AllowAutoTopicCreation: False at version 3, which has no such field"):
        P.write_request(3, 3, {"Topics": [], "AllowAutoTopicCreation": False})
    P.write_request(3, 3, {"Topics": [], "AllowAutoTopicCreation": True})  # its default: taken
    with pytest.raises(CodecError, match=r"has no field 'Topix'"):
        P.write_request(3, 3, {"Topix": []})
    # a count of 2^31 elements in a short frame is an error at once, not an allocation
    huge = P.write_request(3, 4, {"Topics": [], "AllowAutoTopicCreation": True})
    at = len(huge) - 5
    with pytest.raises(CodecError):
        P.read_request(huge[:at] + b"\x7f\xff\xff\xff\x01")


def test_kip_511_apiversions_of_a_version_kafka_does_not_know():
    """A request of ApiVersions v9: its header read, its body not (as Kafka's broker); the broker's v0 answer
    with error 35 read at v0 as Kafka's client falls back."""
    head = P.write_request(18, 3, {"ClientSoftwareName": "x", "ClientSoftwareVersion": "1"}, correlation_id=3,
                           client_id="c")  # fmt: skip
    frame = b"\x00\x12\x00\x09" + head[4:]
    m = P.read_request(frame)
    assert m.body is None and m.api_version == 9 and m.correlation_id == 3 and "KIP-511" in m.notes[0]
    assert m.encode() == frame
    v0 = P.write_response(18, 0, {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]},
                          correlation_id=3)  # fmt: skip
    r = P.read_response(v0, 18, 3)
    assert r.api_version == 0 and r.body.error_code == 35 and "falls back" in r.notes[0]
    assert r.encode() == v0


def test_the_json_round_trips_and_names_fields_as_kafka_does():
    frame = P.write_request(3, 12, {"Topics": [{"TopicId": "AAAAAAAAAAAAAAAAAAAAAA", "Name": "t1"}],
                                    "AllowAutoTopicCreation": True, "IncludeTopicAuthorizedOperations": False},
                            correlation_id=7, client_id="me")  # fmt: skip
    j = P.read_request(frame).to_json()
    assert j["api"] == "Metadata" and j["version"] == 12 and j["header"]["ClientId"] == "me"
    assert P.write_request(3, 12, j["body"], correlation_id=7, client_id="me") == frame
    assert json.loads(json.dumps(j)) == j
    assert re.fullmatch(r"[0-9a-f]+", P.read_request(frame).encode().hex())


# ------------------------------------------------------------------ frames real brokers sent
RAW_FETCH = (
    ROOT.parent / "shared" / "fixtures" / "wire-captures" / "kafka-rust+kafka-rust" / "raw-fetch-responses-not-pcap"
)


@pytest.mark.parametrize("name", ["fetch1.mytopic.1p.nocompression.kafka.0821", "fetch1.mytopic.1p.gzip.kafka.0821",
                                  "fetch1.mytopic.1p.snappy.kafka.0821", "fetch1.mytopic.1p.snappy.kafka.0822",
                                  "fetch2.mytopic.nocompression.kafka.0900"])  # fmt: skip
def test_fetch_responses_real_brokers_sent(name):
    """Fetch v0 responses from Kafka 0.8.2.1, 0.8.2.2 and 0.9.0 brokers (kafka-rust's test data, MIT): read in
    every backend, written back byte for byte, and their records (magic 0; plain, gzip and snappy wrappers) are
    the lines the producer sent (fetch1.txt, fetch2.txt)."""
    frame = (RAW_FETCH / name).read_bytes()
    sent = (RAW_FETCH / f"{name.split('.')[0]}.txt").read_text().splitlines()
    for backend in BACKENDS:
        m = P.read_response(frame, 1, 0, backend=backend)
        assert m.encode() == frame and m.correlation_id >= 0 and not m.notes
        (topic,) = m.to_json()["body"]["Responses"]
        (part,) = topic["Partitions"]
        assert topic["Topic"] == "my-topic" and "_partial" not in part and "_damage" not in part
        assert [r["value"] for b in part["_batches"] for r in b["records"]] == sent


def test_a_real_fetch_response_with_a_bad_crc_is_damage_at_its_field_path():
    frame = (RAW_FETCH / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900").read_bytes()
    m = P.read_response(frame, 1, 0)
    assert m.encode() == frame
    (line,) = m.problems()
    assert line.startswith("body.Responses[0].Partitions[0].Records at byte 0: stored crc32 0x58585858 != computed")
    assert m.to_json()["body"]["Responses"][0]["Partitions"][0]["HighWatermark"] == 1


def test_a_tag_a_version_cannot_carry_is_refused_as_kafka_refuses_it():
    """Kafka's generated readers throw "Tag 1 is not valid for version 12" for a known tag read at a version
    whose field is not there (Fetch's ReplicaState, tag 1, is in v15+); every backend refuses it, located."""
    body = {"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 1000, "IsolationLevel": 0, "SessionId": 0,
            "SessionEpoch": -1, "Topics": [], "ForgottenTopicsData": [], "RackId": ""}  # fmt: skip
    frame = P.write_request(1, 12, body, client_id="c")
    assert frame.endswith(b"\x00")
    state = bytes([0xFF] * 4 + [0xFF] * 8 + [0])  # a ReplicaState (id -1, epoch -1, no tags)
    bad = frame[:-1] + bytes([1, 1, len(state)]) + state
    for backend in BACKENDS:
        with pytest.raises(CodecError, match=r"^body\..*tag 1 \(replica_state\) is not valid at this version"):
            P.read_request(bad, backend=backend)
    at15 = P.write_request(1, 15, {k: v for k, v in body.items() if k != "ReplicaId"} | {"ReplicaState": {
        "ReplicaId": 5, "ReplicaEpoch": 7}})  # fmt: skip
    assert P.read_request(at15).to_json()["body"]["ReplicaState"] == {"ReplicaId": 5, "ReplicaEpoch": 7}


def test_a_null_where_kafka_allows_none_is_refused_both_ways():
    """Metadata v4's topic Name is not nullable: a length of -1 there is refused by every backend, and writing a
    null there is refused too, each at its field path in Kafka's names."""
    frame = P.write_request(3, 4, {"Topics": [{"Name": "t"}], "AllowAutoTopicCreation": True}, client_id="c")
    at = frame.index(b"\x00\x01t")
    bad = frame[:at] + b"\xff\xff" + frame[at + 3 :]
    for backend in BACKENDS:
        with pytest.raises(CodecError, match=r"^body\.Topics(\[0\])?\.Name( at byte 17)?: negative length -1"):
            P.read_request(bad, backend=backend)
    with pytest.raises(CodecError, match=r"^body\.Topics\[0\]\.Name: may not be null"):
        P.write_request(3, 4, {"Topics": [{"Name": None}], "AllowAutoTopicCreation": True})


def test_record_sets_are_views_of_the_frame_and_any_view_is_written():
    """A record set read (Kafka's ``records`` type) is a read-only view of the frame in the python and native
    backends, not a copy: it shares the frame's memory and keeps it alive; the Construct reference gives bytes.
    Every backend writes the message again from the view, and from a view of another buffer, to the same bytes."""
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000,
            "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": (BATCH * 3).hex()}]}]}  # fmt: skip
    frame = P.write_request(0, 9, body, correlation_id=1, client_id="c")
    at = frame.index(BATCH * 3)
    for backend in BACKENDS:
        m = P.read_request(bytes(frame), backend=backend)
        rec = m.body.topic_data[0].partition_data[0].records
        assert rec == BATCH * 3 and m.encode() == frame, backend
        if backend == "construct":
            assert type(rec) is bytes
            continue
        assert type(rec) is memoryview and rec.readonly and rec.obj is m.frame, backend
        assert rec.obj[at : at + len(rec)] == rec  # the frame's own bytes, at the field's place
        # a view of another buffer (a bytearray a proxy filled) is written as bytes would be
        other = bytearray(b"x" + BATCH * 3)
        m.body.topic_data[0].partition_data[0].records = memoryview(other)[1:]
        assert m.encode() == frame, backend
        wide = array.array("i")  # a view of int32s: its bytes are written, and its length in bytes
        wide.frombytes(BATCH * 4)
        m.body.topic_data[0].partition_data[0].records = memoryview(wide)
        assert P.read_request(m.encode(), backend=backend).body.topic_data[0].partition_data[0].records == BATCH * 4
        m.body.topic_data[0].partition_data[0].records = memoryview(other)[1:-1]  # changed: written as it is now
        assert P.read_request(m.encode(), backend=backend).body.topic_data[0].partition_data[0].records == (
            BATCH * 3)[:-1]  # fmt: skip


def _large_set(base: int, n: int) -> bytes:
    recs = [kfmt.Record(key=b"k%d" % i, value=bytes(100), timestamp=1000 + i) for i in range(n)]
    return kfmt.encode_batch(recs, base_offset=base)


def test_encode_parts_hands_record_sets_out_by_reference_and_a_gather_write_sends_the_frame():
    """``Message.encode_parts()``: the frame as a list of buffers for a gather write, as Kafka's network layer sends
    record sets: each record set of 4 KiB or more is the value's own object (a view of the frame read), not a
    copy; a smaller one is copied into the pieces around it. Joined, the parts are ``encode()`` and the frame in
    every backend; python and native cut them alike; ``socket.sendmsg`` of them delivers the frame; a record set
    replaced is written as it is now."""
    import socket

    sets = [_large_set(0, 60), BATCH, _large_set(60, 45)]  # 7 KB, 90 bytes, 5 KB
    assert len(sets[0]) >= 4096 and len(sets[1]) < 4096 and len(sets[2]) >= 4096
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [
        {"Name": "t", "PartitionData": [{"Index": i, "Records": r.hex()} for i, r in enumerate(sets)]}]}  # fmt: skip
    frame = P.write_request(0, 9, body, correlation_id=1, client_id="c")
    cuts = {}
    for backend in BACKENDS:
        m = P.read_request(frame, backend=backend)
        parts = m.encode_parts()
        assert b"".join(parts) == m.encode() == frame, backend
        held = [p.records for p in m.body.topic_data[0].partition_data]
        by_ref = [any(part is r for part in parts) for r in held]
        assert by_ref == ([False] * 3 if backend == "construct" else [True, False, True]), backend
        cuts[backend] = [bytes(p) for p in parts]
        a, b = socket.socketpair()
        with a, b:
            assert a.sendmsg(parts) == len(frame)
            got = b""
            while len(got) < len(frame):
                got += b.recv(1 << 16)
        assert got == frame, backend
        new = _large_set(500, 50)
        m.body.topic_data[0].partition_data[2].records = new
        parts = m.encode_parts()
        assert any(part is new for part in parts) != (backend == "construct"), backend
        again = P.read_request(b"".join(parts), backend=backend)
        assert again.body.topic_data[0].partition_data[2].records == new, backend
    if "native" in cuts:
        assert cuts["native"] == cuts["python"]


def test_an_empty_tagged_struct_is_left_out_without_encoding_it_as_if_encoded():
    """A struct-valued tagged field (Fetch's DivergingEpoch, CurrentLeader, SnapshotId) is left out when it holds
    the empty struct Kafka reads an absent tag as; the python backend tells so from the fields (each integer at
    its default, no tags: generator.ir.empty.py_empty_test) without encoding it, and must say what encoding and
    comparing the bytes says: every backend writes the same bytes for values at, near and off the default."""
    model = importlib.import_module("generated.protocol.fetch_response.model")
    cases = [model.EpochEndOffset(), model.EpochEndOffset(-1, -1, []), model.EpochEndOffset(0, -1),
             model.EpochEndOffset(-1, 7), model.EpochEndOffset(True, -1), model.EpochEndOffset(-1, -1, [(9, b"x")])]  # fmt: skip
    body = _sample_body(1, "response", 12)
    frame = _write(1, "response", 12, body)
    for case in cases:
        written = {}
        for backend in BACKENDS:
            m = P.read_response(frame, 1, 12, backend=backend)
            m.body.responses[0].partitions[0].diverging_epoch = case
            written[backend] = m.encode()
        assert len(set(written.values())) == 1, (case, written)
        got = P.read_response(written["python"], 1, 12).to_json()["body"]["Responses"][0]["Partitions"][0]
        at_default = case.epoch == -1 and case.end_offset == -1 and not case.tagged_fields
        assert ("DivergingEpoch" in got) != at_default, case


def test_an_empty_tagged_struct_built_without_bytes_is_the_one_its_absent_bytes_decode_to():
    """The python backend builds an absent struct-valued tagged field from its defaults where it can
    (generator.ir.empty.py_empty_value) instead of decoding generator.ir.empty.absent_bytes: for every such field
    of every schema, the value built is the one the bytes decode to (class and every field)."""
    from generator.backends.python.lowered import _camel
    from generator.ir import build
    from generator.ir.empty import absent_bytes, py_empty_value
    from generator.ir.nodes import EmptyStruct, Tagged
    from generator.loader import load
    from kfmt.runtime.options import DEFAULT_OPTIONS

    root = Path(__file__).resolve().parent.parent / "schemas"
    checked = 0
    for p in sorted(root.glob("protocol*/*.yaml")) + sorted(root.glob("messages/*.yaml")):
        ir = build(load(p, p.parent))
        tags = [t for s in ir.structs for f in s.fields if isinstance(f.wire, Tagged) for t in f.wire.fields]
        for t in (t for t in tags if isinstance(t.absent, EmptyStruct)):
            expr = py_empty_value(ir, t, _camel(ir.struct(t.struct).fields[0].wire.name))
            if expr is None:
                continue
            pkg = "generated." + ".".join(p.relative_to(root).with_suffix("").parts)
            model, py = importlib.import_module(pkg + ".model"), importlib.import_module(pkg + ".python")
            raw = absent_bytes(ir, t)
            decoded = getattr(py, "_fdecode_" + t.struct)(raw, 0, len(raw), DEFAULT_OPTIONS)[0]
            built = eval(expr, vars(model))
            assert type(built) is type(decoded) and repr(built) == repr(decoded), (p.name, t.name)
            checked += 1
    assert checked >= 11


def test_matches_in_c_and_in_python_agree():
    """The check ``encode_parts`` makes (are these parts the frame read?) is one rule in two languages: the native
    backend's C ``matches`` (which skips comparing a part that is the frame's own memory at its place) and
    kfmt.runtime.scalars.matches answer alike."""
    from kfmt.runtime.scalars import matches

    native = pytest.importorskip("generated.protocol.produce_request.native")
    if "native" not in BACKENDS:
        pytest.skip("the native backend is not built here")
    frame = bytes(range(256)) * 40
    v = memoryview(frame)
    cases = [
        [frame], [frame[:5000], v[5000:9000], frame[9000:]], [v[:10], v[10:]], [frame[:-1]], [frame, b"x"],
        [frame[:100], v[200:300], frame[200:]],  # the same length, other bytes
        [frame[:256], memoryview(bytes(range(256)) * 39)],  # equal bytes from another buffer
        [frame[:10] + b"\x00" + frame[11:]], [], [b"", frame, b""],
    ]  # fmt: skip
    for pieces in cases:
        assert native.matches(frame, pieces) == matches(frame, pieces) == (b"".join(pieces) == frame), pieces[:1]


@pytest.mark.parametrize("version", [4, 12, 17])
def test_null_records_stay_null_in_every_backend(version):
    """A Fetch response partition whose Records is null (found by `make fuzz-protocol`: the value classes read a
    null `records` as [], the list kfmt.Batch promises, and could not write it back): null in every backend,
    as kafka-python reads it, and the frame written again byte for byte."""
    body = _sample_body(1, "response", version)
    body["Responses"][0]["Partitions"][0]["Records"] = None
    frame = _write(1, "response", version, body)
    for backend in BACKENDS:
        m = P.read_response(frame, 1, version, backend=backend)
        assert m.body.responses[0].partitions[0].records is None, backend
        assert m.encode() == frame and m.to_json()["body"]["Responses"][0]["Partitions"][0]["Records"] is None
    cls = _kafka_python_classes()[(1, "response")]
    body = frame[4 + (version >= 12) :]
    assert cls.decode(body, version=version).responses[0].partitions[0].records is None


FUZZ_FOUND = Path(__file__).parent / "fixtures" / "protocol-fuzz"  # frames `make fuzz-protocol` found, with why


@pytest.mark.parametrize("path", sorted(FUZZ_FOUND.glob("*.bin")), ids=lambda p: p.stem)
def test_frames_kafka_reads_but_would_not_write_re_encode_as_read(path):
    """Frames `make fuzz-protocol` found re-encoded to other bytes: a bool byte other than 0/1 (Kafka reads true),
    a negative length other than -1 (Kafka reads null). Every backend writes them back as read while the values are
    unchanged, and in Kafka's own form once one changes; what the frame means is what kafka-python reads it as (its
    canonical bytes are ours)."""
    _, key, kind, v = path.stem.split("-")[:4]
    key, v, frame = int(key), int(v[1:]), path.read_bytes()
    canonical = None
    for backend in BACKENDS:
        m = _read(frame, kind, key, v, backend)
        assert m.encode() == frame, backend
        body, cid = m.to_json()["body"], m.correlation_id
        mine = (P.write_request(key, v, body, correlation_id=cid, client_id=m.client_id) if kind == "request"
                else P.write_response(key, v, body, correlation_id=cid)) + m.trailing  # fmt: skip
        assert mine != frame and (canonical is None or mine == canonical), backend
        canonical = mine
        cid = m.header.correlation_id ^ 1
        m.correlation_id = m.header.correlation_id = cid  # a value changed: Kafka's own form
        at = 4 if kind == "request" else 0
        assert m.encode() == canonical[:at] + cid.to_bytes(4, "big", signed=True) + canonical[at + 4 :], backend
    cls = _kafka_python_classes().get((key, kind))
    if "bool byte" not in path.with_suffix(".txt").read_text():
        return  # kafka-python 3.0.12 reads a null array as [] (and writes it so): its gap, not an independent check
    body_at = 4 + (kind == "response" and P.api(key).response_header_version(v) == 1) if kind == "response" else 0
    if cls is not None and _min(cls) <= v <= cls._valid_versions[1]:
        theirs = cls.decode(frame[body_at:], version=v, **({"header": True} if kind == "request" else {}))
        assert (theirs.encode(version=v, header=True) if kind == "request" else theirs.encode()) in canonical


def test_a_varint_longer_than_it_needs_is_kept_until_a_value_changes():
    """Kafka's varint reader takes a length written in more bytes than it needs (ByteUtils.readUnsignedVarint):
    the frame is read, kept as it was, and written in Kafka's own form once a value changes."""
    body = {"ClientSoftwareName": "a", "ClientSoftwareVersion": "1"}
    frame = P.write_request(18, 3, body, correlation_id=5, client_id="c")
    at = frame.rindex(b"\x02a")
    long = frame[:at] + b"\x82\x80\x00a" + frame[at + 2 :]  # 2 in three bytes
    for backend in BACKENDS:
        m = P.read_request(long, backend=backend)
        assert m.to_json()["body"] == body and m.encode() == long, backend
        m.body.client_software_version = "2"
        assert m.encode() == frame[:-3] + b"\x022\x00", backend


def _sized(*frames: bytes) -> bytes:
    return b"".join(len(f).to_bytes(4, "big") + f for f in frames)


def test_sasl_tokens_after_a_handshake_v0_are_recognised_not_misread():
    """SaslHandshake v0 (Kafka before KIP-152) is followed by raw SASL tokens with a 4-byte size and no header, in
    both directions, until the mechanism is done: read_conversation names them tokens, pairs every request with its
    response around them, and accounts for every byte (a frame cut at the end is said, with its byte)."""
    from kfmt.protocol.conversation import read_conversation

    hs = P.write_request(17, 0, {"Mechanism": "PLAIN"}, correlation_id=1, client_id="old")
    hs_r = P.write_response(17, 0, {"ErrorCode": 0, "Mechanisms": ["PLAIN"]}, correlation_id=1)
    md = P.write_request(3, 1, {"Topics": None}, correlation_id=2, client_id="old")
    md_r = P.write_response(3, 1, {"Brokers": [], "ControllerId": 1, "Topics": []}, correlation_id=2)
    token = b"\x00alice\x00secret"
    client, server = _sized(hs, token, md) + b"\x00\x00", _sized(hs_r, b"", md_r)
    for backend in BACKENDS:
        conv = read_conversation(client, server, backend=backend)
        assert [(x.request.api_name, x.response.api_name) for x in conv.exchanges] == [("SaslHandshake",) * 2,
                                                                                      ("Metadata",) * 2]  # fmt: skip
        assert conv.tokens == [("client", 4 + len(hs), token), ("server", 4 + len(hs_r), b"")]
        assert conv.tails == {"client": b"\x00\x00", "server": b""}
        assert conv.problems == [f"client byte {len(client) - 2}: 2 byte(s) after the last whole frame (the "
                                 "connection ends mid-frame)"]  # fmt: skip
    # without the handshake, the same token is a frame that does not read: said, located, the rest still read
    conv = read_conversation(_sized(token, md), _sized(md_r))
    assert [x.request.api_name for x in conv.exchanges] == ["Metadata"] and conv.exchanges[0].response is not None
    assert len(conv.problems) == 1 and conv.problems[0].startswith("client byte 4: ") and not conv.tokens


def _expected_layout(fields: list, spec: dict, version: int, flexible: bool, depth: int = 1) -> list[str]:
    """The names `kfmt explain --api` should list for ``fields`` at ``version``, from Kafka's spec file: the fields
    in order, then (flexible versions) the tagged section: the spec's tagged fields by tag, then any other tag."""
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    normal, tagged = [], []
    for f in fields:
        v = Versions.parse(f.get("versions"), f["name"])
        if v.lo is None or version < v.lo or (v.hi is not None and version > v.hi):
            continue
        t = Versions.parse(f.get("taggedVersions"), f["name"]) if "taggedVersions" in f else None
        is_tagged = t is not None and t.lo is not None and version >= t.lo and (t.hi is None or version <= t.hi)
        elem = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        inner = f.get("fields") or common.get(elem)
        sub = _expected_layout(inner, spec, version, flexible, depth + (2 if is_tagged else 1)) if inner else []
        if is_tagged:
            tagged.append((f["tag"], ["  " * (depth + 1) + f"tag {f['tag']}: {f['name']}", *sub]))
        else:
            normal += ["  " * depth + f["name"], *sub]
    if flexible:
        normal.append("  " * depth + "(tagged fields)")
        for _, lines in sorted(tagged):
            normal += lines
        normal.append("  " * (depth + 1) + "_unknownTaggedFields")
    return normal


def test_explain_draws_every_message_as_kafkas_spec_has_it():
    """`kfmt explain --api`: for every API, kind and version, the fields in wire order (nested under their arrays
    and structs, tagged ones by tag), as Kafka's spec file lists them at that version."""
    from kfmt.tools.explain_protocol import layout

    checked = 0
    for key, v in _cases():
        a = P.api(key)
        for kind in ("request", "response"):
            spec = _spec_for(key, kind, v)
            got = [ln[: ln.index("  ", len(ln) - len(ln.lstrip()))].rstrip() if "  " in ln.strip() else ln.rstrip()
                   for ln in layout(a, kind, v)[1:]]  # fmt: skip
            assert got == _expected_layout(spec["fields"], spec, v, a.flexible(v)), (a.name, kind, v)
            checked += 1
    assert checked >= 686  # 88 APIs, every version, both kinds


def test_explain_annotates_a_frame_byte_by_byte(tmp_path, capsys):
    """`kfmt explain --api NAME --version V --bytes FRAME`: every byte of a real frame with its field (header, body,
    and what Kafka's parser leaves unread); a frame that does not read is exit 1, an unknown API exit 2."""
    from kfmt.tools.cli import main

    body = {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": 1, "Host": "h", "Port": 9092, "Rack": None}],
            "ClusterId": "c", "ControllerId": 1, "Topics": []}  # fmt: skip
    frame = P.write_response(3, 12, body, correlation_id=7) + b"\x00"
    path = tmp_path / "frame"
    path.write_bytes(len(frame).to_bytes(4, "big") + frame)
    assert main(["explain", "--api", "Metadata", "--version", "12", "--response", "--bytes", str(path)]) == 0
    rows = capsys.readouterr().out.splitlines()
    covered = b"".join(bytes.fromhex(r[10:57].replace(" ", "")) for r in rows)
    assert covered == frame and not any(r[59:].startswith("?") for r in rows)
    assert rows[0].endswith("header.correlation_id                    7") and "body.brokers.port" in rows[7]
    assert rows[-1].endswith("(after the body: 1 byte(s) Kafka's parser leaves unread)")
    path.write_bytes(frame[:20])
    assert main(["explain", "--api", "Metadata", "--version", "12", "--response", "--bytes", str(path)]) == 1
    assert main(["explain", "--api", "NoSuchApi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "'NoSuchApi': Kafka has no such API" in err


def test_diff_writes_one_message_at_each_version_bytes_by_field(tmp_path, capsys):
    """`kfmt diff Metadata@8 Metadata@12 --message BODY.json`: the body written at each version, its bytes by field
    adding up to the message's size, which is the size kafka-python's classes write for the same body; a field a
    version lacks, holding a value, is said (that version cannot carry it) and the exit is 1."""
    import json as _json

    from kfmt.tools.cli import main
    from kfmt.tools.diff_protocol import fit, measure

    body = {"Topics": [{"TopicId": "AAAAAAAAAAAAAAAAAAAAAA", "Name": "orders"}], "AllowAutoTopicCreation": False,
            "IncludeClusterAuthorizedOperations": True, "IncludeTopicAuthorizedOperations": False}  # fmt: skip
    res = {v: r for v, r in zip((8, 12), measure([(P.api(3), 8), (P.api(3), 12)], "request", body).values())}
    cls = _kafka_python_classes()[(3, "request")]
    for v in (8, 12):
        assert sum(res[v]["fields"].values()) == res[v]["bytes"]
        model = importlib.import_module("generated.protocol.metadata_request.model")
        frame = P.write_request(3, v, fit(getattr(model, P.api(3).classes["request"][v]), body, v, "body", []))
        theirs = cls.decode(frame, version=v, header=True)
        assert len(theirs.encode(version=v, header=False)) == res[v]["bytes"], v
    assert res[8]["cannot_carry"] == [] and res[12]["cannot_carry"] == ["body.IncludeClusterAuthorizedOperations"]
    assert res[8]["fields"]["message.topics.topic_id"] == 0 and res[12]["fields"]["message.topics.topic_id"] == 16
    path = tmp_path / "body.json"
    path.write_text(_json.dumps(body))
    assert main(["diff", "Metadata@8", "Metadata@12", "--message", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "Metadata v12 cannot carry body.IncludeClusterAuthorizedOperations" in out and err.count("\n") == 1
    assert re.search(rf"^\(total\) +{res[8]['bytes']} +{res[12]['bytes']}$", out, re.M), out
    assert main(["diff", "Metadata@8", "Metadata@99", "--message", str(path)]) == 2


def test_docs_explain_and_diff_block(tmp_path):
    """docs/protocol.md's explain and diff commands, run as written (its files made here): each line's exit and
    what it prints."""
    import subprocess
    import sys

    from test_readme import _block, _commands

    frame = P.write_response(3, 12, {"ThrottleTimeMs": 0, "Brokers": [], "ClusterId": "c", "ControllerId": 1,
                                     "Topics": []}, correlation_id=3)  # fmt: skip
    (tmp_path / "metadata-response.bin").write_bytes(len(frame).to_bytes(4, "big") + frame)
    (tmp_path / "body.json").write_text(json.dumps({"Topics": [{"Name": "orders", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}],
                                                    "AllowAutoTopicCreation": False,
                                                    "IncludeClusterAuthorizedOperations": False,
                                                    "IncludeTopicAuthorizedOperations": False}))  # fmt: skip
    cmds = _commands(_block("bash", "kfmt explain --api Metadata"))
    assert len(cmds) == 3
    kfmt_exe = str(Path(sys.executable).parent / "kfmt")
    outs = [subprocess.run([kfmt_exe, *c.split()[1:]], cwd=tmp_path, capture_output=True, text=True) for c in cmds]
    assert [o.returncode for o in outs] == [0, 0, 0], [o.stderr for o in outs]
    assert outs[0].stdout.startswith("Metadata request v12 (key 3; flexible; request header v2)")
    assert "body.controller_id" in outs[1].stdout and outs[2].stdout.splitlines()[-1].startswith("(total)")


def test_a_protocol_proposal_is_one_schema_file_drawn_and_measured(tmp_path, capsys):
    """schemas/protocol_proposals/metadata_request_by_topic_id.yaml (an example, not a KIP) extends Kafka's Metadata
    request with a v14: it is drawn by kfmt explain and measured by kfmt diff beside Kafka's versions, its v0-13 are
    Kafka's own, and it never reads Kafka's frames (key 3 is still Kafka's Metadata, v14 refused)."""
    import json as _json

    from kfmt.protocol.apis import proposals
    from kfmt.tools.cli import main
    from kfmt.tools.diff_protocol import measure
    from kfmt.tools.explain_protocol import find_api, layout

    (p,) = [a for a in proposals() if a.name == "MetadataByTopicId"]
    assert p.proposal and p.versions == range(0, 15) and P.api(3).name == "Metadata" and p not in P.apis()
    assert find_api("MetadataByTopicId") is p and find_api("3") is P.api(3)
    assert layout(p, "request", 13)[1:] == layout(P.api(3), "request", 13)[1:]  # Kafka's v13, inherited
    drawn = [ln.split()[0] for ln in layout(p, "request", 14)[1:]]
    assert drawn[:2] == ["Topics", "TopicId"] and "Name" not in drawn
    frame = P.write_request(
        3, 13, {"Topics": [], "AllowAutoTopicCreation": True, "IncludeTopicAuthorizedOperations": False}
    )
    with pytest.raises(CodecError, match="not a version of the Metadata request"):
        P.read_request(frame[:2] + b"\x00\x0e" + frame[4:])
    body = {"Topics": [{"TopicId": "AAAAAAAAAAAAAAAAAAAAAA", "Name": "orders"}], "AllowAutoTopicCreation": False,
            "IncludeTopicAuthorizedOperations": False}  # fmt: skip
    res = measure([(P.api(3), 13), (p, 14)], "request", body)
    v13, v14 = res["Metadata v13"], res["MetadataByTopicId v14"]
    assert v13["bytes"] - v14["bytes"] == 1 + len("orders") and v14["cannot_carry"] == ["body.Topics[0].Name"]
    path = tmp_path / "body.json"
    path.write_text(_json.dumps(body))
    assert main(["diff", "Metadata@13", "MetadataByTopicId@14", "--message", str(path)]) == 1
    assert "MetadataByTopicId v14 cannot carry body.Topics[0].Name" in capsys.readouterr().out
    assert main(["explain", "--api", "MetadataByTopicId", "--version", "14"]) == 0
    assert "[a proposal, not Kafka's: " in capsys.readouterr().out


# ------------------------------------------------------------------ the jvm backend's decoders
def test_the_jvm_backend_decodes_every_api_and_version_as_kfmt_protocol_does():
    """The jvm backend's protocol decoders (kfmt.jvm.gen.Protocol, for the capture source): the header and body of
    a sample of every API x version x kind, of every frame of the public captures and of the protocol fuzz's
    findings that read, each read in the JVM to the JSON kfmt.protocol's to_json() gives (record sets as their hex)
    and to the same end (headers at their header version; bodies at their API version, fields of other versions
    left out as Kafka's JSON leaves them)."""
    from kfmt.spark import jvm

    if jvm.jar() is None:
        pytest.skip("the JVM engine is not built here")
    frames = []  # (kind, api key, version, frame)
    for key, v in _cases():
        for kind in ("request", "response"):
            frames.append((kind, key, v, _write(key, kind, v, _sample_body(key, kind, v))))
    from test_wire_clients import CAPTURES, PUBLIC

    from kfmt.capture import connections
    from kfmt.protocol.conversation import read_conversation

    for name in PUBLIC:
        for c in connections(CAPTURES / name):
            for x in read_conversation(c.to_server.data, c.to_client.data, mid_stream=not c.opened).exchanges:
                r = x.request
                frames.append(("request", r.api_key, r.api_version, r.frame))
                if x.response is not None:
                    frames.append(("response", r.api_key, x.response.api_version, x.response.frame))
    for p in sorted((Path(__file__).parent / "fixtures" / "protocol-fuzz").glob("*.bin")):
        _, key, kind, v = p.stem.split("-")[:4]
        frames.append((kind, int(key), int(v[1:]), p.read_bytes()))
    parts, expected = [], []
    for kind, key, v, frame in frames:
        a = P.api(key)
        try:
            m = _read(frame, kind, key, v, BACKENDS[-1])
        except CodecError:
            continue  # (the fuzz's findings kfmt.protocol refuses: the JVM's refusals are not compared yet)
        j = m.to_json()
        header_end = len(m.encode_header()) if m.frame == m._written() else None
        parts.append((f"{kind}_header", m.header_version, frame, 0))
        expected.append(("header", j["header"]))
        if m.body is not None and header_end is not None:
            parts.append((a.request if kind == "request" else a.response, m.api_version, frame, header_end))
            expected.append(("body", (len(frame) - len(m.trailing), jvm.without_kfmts(j["body"]))))
    got = jvm.protocol_check(parts)
    differ = []
    for (schema, v, frame, _start), (what, want), (end, text) in zip(parts, expected, got):
        if what == "header":
            same = end is not None and json.loads(text) == want
        else:
            same = end == want[0] and json.loads(text) == want[1]
        if not same:
            differ.append((schema, v, frame.hex()[:80], what, want, end, text[:300]))
    assert len(got) == len(parts) and not differ, (len(differ), differ[:3])
    assert sum(w == "body" for w, _ in expected) >= 700 and sum(w == "header" for w, _ in expected) >= 700
