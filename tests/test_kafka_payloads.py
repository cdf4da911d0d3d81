"""#25: Kafka's own payloads decoded by name, with the schemas under schemas/messages lowered from Kafka's JSON
message specs (tests/fixtures/kafka: the spec files of apache/kafka at the commit in its COMMIT file, Apache
License 2.0, see NOTICE).

Independent sources:
* records a real broker wrote (tests/vectors/kafka_internal_payloads.json, its origin stated there): every
  one decodes to its named type and version and re-encodes byte-exact, in every backend, and reads the same
  as kafka-python's own reader of Kafka's JSON specs (kafka.protocol.schemas: a separate implementation of
  the message encoding from the same spec files);
* payloads kafka-python writes from the specs, for every metadata record at every valid version and every
  coordinator record (its tagged fields ordered by tag, as Kafka's writer orders them: kafka-python writes
  them in the order given);
* the framing rules of the serdes: MetadataRecordSerde (AbstractApiMessageSerde: unsigned varints frame
  version 1, apiKey, version, then the message), CoordinatorRecordSerde (key: int16 version, the record type,
  then the key; value: int16 version, then the value, a null value is a tombstone)."""

from __future__ import annotations

import functools
import io
import json
import math
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import kfmt
from conftest import same_outcomes
from generator.frontends.kafka_spec import Versions
from kfmt.codec.formats import available_backends
from kfmt.payloads import _codec, decode_payload, kafka_json

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "kafka"
COMMIT = (TREE / "COMMIT").read_text().strip()
VECTORS = json.loads((ROOT / "tests" / "vectors" / "kafka_internal_payloads.json").read_text())
NATIVE = "native" in available_backends()  # built here: its C decoders are held to the same bytes
BACKENDS = ("python", "construct") + (("native",) if NATIVE else ())
METADATA = TREE / "metadata/src/main/resources/common/metadata"
GROUPS = TREE / "group-coordinator/src/main/resources/common/message"
TXNS = TREE / "transaction-coordinator/src/main/resources/common/message"


def _in_c(schema: str, data: bytes, **kw) -> None:
    """With the native backend: its C decoder itself reads ``data`` whole, and its C encoder writes the value
    back to the same bytes (no hand-over to python either way)."""
    if NATIVE:
        c = _codec(schema, "native")._c
        r = c.decode_from(data, 0, len(data), kfmt.DecodeOptions(), *kw.values())
        assert r is not None and r[1] == len(data), (schema, data.hex())
        assert c.encode(r[0], *kw.values()) == data, (schema, data.hex())


def _spec(path: Path) -> dict:
    from kafka.protocol.schemas.load_json import _resolve_common_structs

    from generator.frontends.kafka_spec import strip_comments

    d = json.loads(strip_comments(path.read_text()))
    _resolve_common_structs(d["fields"], {s["name"]: s["fields"] for s in d.get("commonStructs", [])})
    _int_tags(d["fields"])
    return d


def _int_tags(fields: list) -> None:
    """Kafka writes some tags as strings ("tag": "0") and leaves out a tagged field's "versions" (its
    "taggedVersions" then); kafka-python needs both spelled out (kfmt's frontend takes them as Kafka writes them)."""
    for f in fields:
        if isinstance(f.get("tag"), str):
            f["tag"] = int(f["tag"])
        if "versions" not in f and "taggedVersions" in f:
            f["versions"] = f["taggedVersions"]
        _int_tags(f.get("fields", []))


def _struct(path: Path):
    from kafka.protocol.schemas.fields.struct import StructField

    return StructField(_spec(path))


def _uv(n: int) -> bytes:
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

    return UnsignedVarInt32.encode(n)


def _i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


# ---------------------------------------------------------------- the committed schemas


def test_committed_schemas_are_what_the_pinned_specs_give():
    """`kfmt import-kafka-spec --kafka-tree` on the pinned spec files reproduces schemas/messages exactly."""
    from generator.frontends.kafka_spec import from_tree, to_yaml

    lowered = from_tree(TREE, COMMIT)
    committed = {p.stem: p.read_text() for p in (ROOT / "schemas" / "messages").glob("*.yaml")}
    assert set(lowered) == set(committed)
    for stem, (schema, source) in lowered.items():
        assert to_yaml(schema, source) == committed[stem], stem


def test_every_spec_file_is_imported_or_left_out_with_a_reason():
    """Each spec of the pinned tree (whole folders of apache/kafka at COMMIT) is lowered into a schema, or listed
    in LEFT_OUT with why: a spec a pattern misses (RemotePartitionDeleteMetadataRecord once) fails here."""
    from generator.frontends.kafka_protocol import FOLDER, protocol_files
    from generator.frontends.kafka_spec import LEFT_OUT, imported_specs

    files = {str(p.relative_to(TREE)) for p in TREE.rglob("*.json")}
    used = imported_specs(TREE)
    protocol = {f"{FOLDER}/{name}" for name in protocol_files(TREE / FOLDER)}  # tests/test_protocol.py's
    assert files - used - protocol - set(LEFT_OUT) == set()
    assert all(why.strip() for why in LEFT_OUT.values())
    committed = "".join(p.read_text() for p in (ROOT / "schemas" / "messages").glob("*.yaml"))
    for rel in used:  # each one's name is in a committed schema's doc_ref or header
        assert rel in committed or rel.rsplit("/", 1)[0] + "/*.json" in committed, rel


def test_remote_partition_delete_metadata_decodes():
    """api key 2 of __remote_log_metadata (RemotePartitionDeleteMetadataRecord v0, flexible), laid out from its
    spec: frame version 1, apiKey 2, version 0 (unsigned varints), TopicIdPartition {Name: compact string "t",
    Id: uuid, Partition: int32 3, tags: 0}, BrokerId int32 7, EventTimestampMs int64 9, RemotePartitionDeleteState
    int8 1, tags 0."""
    tid = bytes(range(1, 17))
    data = b"\x01\x02\x00" + b"\x02t" + tid + (3).to_bytes(4, "big") + b"\x00" + (7).to_bytes(4, "big")
    data += (9).to_bytes(8, "big") + b"\x01" + b"\x00"
    for backend in BACKENDS:
        p = decode_payload("__remote_log_metadata", None, data, backend=backend)
        assert p.value.type == "RemotePartitionDeleteMetadataRecord" and not p.problems
        d = p.value.data
        assert (d.topic_id_partition.name, d.topic_id_partition.id, d.topic_id_partition.partition) == ("t", tid, 3)
        assert (d.broker_id, d.event_timestamp_ms, d.remote_partition_delete_state) == (7, 9, 1)
        codec = _codec("remote_log_metadata", backend)
        assert codec.encode(codec.decode(data)) == data


def test_a_newer_tree_reports_what_changed(tmp_path):
    tree = tmp_path / "kafka"
    shutil.copytree(TREE, tree)
    topic = tree / "metadata/src/main/resources/common/metadata/TopicRecord.json"
    text = topic.read_text().replace('"validVersions": "0"', '"validVersions": "0-1"')
    text = text.replace(
        '"fields": [', '"fields": [\n    { "name": "BrandNewField", "type": "int32", "versions": "1+" },', 1
    )
    topic.write_text(text)
    cmd = [sys.executable, "-m", "kfmt", "import-kafka-spec", "--kafka-tree", str(tree), "--kafka-commit", COMMIT]
    same = subprocess.run([*cmd[:-2], "--kafka-commit", COMMIT, "--kafka-tree", str(TREE), "--check",
                           str(ROOT / "schemas" / "messages")], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
    r = subprocess.run([*cmd, "--check", str(ROOT / "schemas" / "messages")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert "kraft_metadata: changed" in r.stdout and "BrandNewField" in r.stdout
    assert "group_coordinator_key: unchanged" in r.stdout


# ---------------------------------------------------------------- a real broker's records


@functools.lru_cache(maxsize=None)
def _structs(folder: Path) -> dict:
    """kafka-python's spec and StructField (None for a struct of no fields, which it cannot build) of every spec
    in a folder of the pinned tree, by name and, for metadata records, by apiKey."""
    from kafka.protocol.schemas.fields.struct import StructField

    out: dict = {}
    for p in folder.glob("*.json"):
        spec = _spec(p)
        out[spec["name"]] = out[spec.get("apiKey", spec["name"])] = (
            spec,
            StructField(spec) if spec["fields"] else None,
        )
    return out


def _kafka_python_reads(topic: str, key: bytes | None, value: bytes | None):
    """kafka-python's reading of the value (and key): its StructField from the spec, after the serde's framing
    (MetadataRecordSerde: frame version 1, apiKey, version; CoordinatorRecordSerde: int16 key version = record
    type, int16 value version, a null value a tombstone)."""
    if topic in ("__cluster_metadata", "kraft-snapshot"):
        frame, api_key, version = value[0], value[1], value[2]  # one-byte varints in these records
        assert frame == 1
        field = _structs(METADATA)[api_key][1]
        if field is None:
            assert value[3:] == b"\x00"  # nothing but an empty tagged-field section
            return None, {}
        return None, field.decode(io.BytesIO(value[3:]), version=version, compact=True, tagged=True)
    structs = _structs(GROUPS if topic == "__consumer_offsets" else TXNS)
    record_type = int.from_bytes(key[:2], "big")
    kname = next(n for n, (sp, _) in structs.items() if isinstance(n, str) and n.endswith("Key") and
                 Versions.parse(sp["validVersions"], n).lo <= record_type <= Versions.parse(sp["validVersions"], n).hi)  # fmt: skip
    k = structs[kname][1].decode(io.BytesIO(key[2:]), version=record_type)
    if value is None:
        return k, None
    vspec, vfield = structs[kname[:-3] + "Value"]
    version = int.from_bytes(value[:2], "big")
    fv = vspec.get("flexibleVersions", "none")
    flexible = fv != "none" and int(fv.rstrip("+")) <= version
    return k, vfield.decode(io.BytesIO(value[2:]), version=version, compact=flexible, tagged=flexible)


def _same(ours, theirs) -> None:
    """Our decoded message equals kafka-python's dict (uuids as UUIDs, absent fields left out by it)."""
    for name, kafka, kind, _versions in type(ours)._kafka_fields:
        if kind == "tags":
            continue
        from kafka.protocol.schemas.fields.base import BaseField

        key = BaseField.underscore_name(kafka)
        if key not in theirs:
            continue  # kafka-python leaves out a field its version does not have
        mine, want = getattr(ours, name), theirs[key]
        if kind.startswith("enum:"):  # read as the name Kafka's class gives the id
            ids = vars(sys.modules[type(ours).__module__.rsplit(".", 1)[0] + ".python"])[f"_ENUM_IDS_{kind[5:]}"]
            assert ids[mine] == want, (kafka, mine, want)
        elif kind == "uuid":
            assert mine == want.bytes, (kafka, mine, want)
        elif kind == "uuid[]" and want is not None:
            assert mine == [u.bytes for u in want], kafka
        elif isinstance(want, dict):
            _same(mine, want)
        elif isinstance(want, list) and want and isinstance(want[0], dict):
            for a, b in zip(mine, want, strict=True):
                _same(a, b)
        else:
            assert mine == (bytes(want) if isinstance(want, (bytes, bytearray, memoryview)) else want), (kafka, mine)


@pytest.mark.parametrize("rec", VECTORS["records"], ids=lambda r: f"{r['topic']}@{r['offset']}")
def test_a_real_brokers_records(rec):
    key = bytes.fromhex(rec["key"]) if rec["key"] is not None else None
    value = bytes.fromhex(rec["value"])
    k_py, v_py = _kafka_python_reads(rec["topic"], key, value)
    from kfmt.payloads import BINDINGS

    b = BINDINGS[rec["topic"]]
    for backend in BACKENDS:
        p = decode_payload(rec["topic"], key, value, backend=backend)
        _same(p.value.data, v_py)
        if k_py is not None:
            _same(p.key.data, k_py)
            root = _codec(b.key, backend).decode(key)
            assert _codec(b.key, backend).encode(root) == key
        kw = {b.param: p.key.version} if b.param else {}
        _in_c(b.value, value, **kw)
        if b.key is not None:
            _in_c(b.key, key)
        codec = _codec(b.value, backend)
        assert codec.encode(codec.decode(value, **kw), **kw) == value  # byte-exact, unknown tags and all
    assert p.value.type.endswith(("Record", "Value")) and p.value.version >= 0


def test_real_records_as_kafka_names_them():
    by_offset = {(r["topic"], r["offset"]): r for r in VECTORS["records"]}
    part = next(r for (t, _), r in by_offset.items() if t == "__cluster_metadata" and r["value"].startswith("010301"))
    p = decode_payload("__cluster_metadata", None, bytes.fromhex(part["value"]))
    j = p.value.to_json()
    assert (j["type"], j["version"]) == ("PartitionRecord", 1)
    assert j["data"]["Replicas"] == [1] and j["data"]["Leader"] == 1
    assert len(j["data"]["TopicId"]) == 22  # Kafka's Uuid.toString(): URL-safe base64, no padding
    oc = next(r for (t, _), r in by_offset.items() if t == "__consumer_offsets" and r["key"].startswith("0001"))
    p = decode_payload("__consumer_offsets", bytes.fromhex(oc["key"]), bytes.fromhex(oc["value"]))
    assert (p.key.type, p.key.version, p.value.type, p.value.version) == ("OffsetCommitKey", 1, "OffsetCommitValue", 3)
    assert set(p.key.to_json()["data"]) == {"group", "topic", "partition"}  # the spec's own spelling


# ---------------------------------------------------------------- what kafka-python writes from the specs


def _sample(field, version: int, depth: int = 0):
    """A value for a kafka-python field at ``version`` (every kind; one element per array)."""
    if field.is_struct_array():
        return [_sample_struct(field, version, depth + 1)]
    if field.is_array():
        return [_scalar(field._json["type"][2:], depth + 1)]
    if field.is_struct():
        return _sample_struct(field, version, depth + 1)
    if field.name == "transaction_status":  # an id TransactionState.fromId knows (kfmt reads it as its name)
        return 4
    return _scalar(field._json["type"], depth)


def _scalar(t: str, salt: int):
    return {"int8": -3, "int16": 300 + salt, "int32": 70000 + salt, "int64": 2**40 + salt, "uint16": 65000,
            "uint32": 4_000_000_000, "float64": 0.5, "bool": True, "string": f"s{salt}", "bytes": b"\x01\x02",
            "records": b"\x03", "uuid": uuid.UUID(int=0x1234 + salt)}[t]  # fmt: skip


def _sample_struct(struct, version: int, depth: int = 0) -> dict:
    fields = [f for f in struct.fields.values() if f.for_version_q(version)]
    fields.sort(key=lambda f: (f.tag is not None, int(f.tag) if f.tag is not None else 0))  # tags in tag order
    return {f.name: _sample(f, version, depth) for f in fields}


def _versions(spec: dict) -> range:
    lo, _, hi = spec["validVersions"].partition("-")
    return range(int(lo), int(hi or lo) + 1)


@pytest.mark.parametrize("path", sorted(METADATA.glob("*.json")), ids=lambda p: p.stem)
def test_every_metadata_record_kafka_python_writes(path):
    spec = _spec(path)
    struct = _struct(path) if spec["fields"] else None  # kafka-python cannot build a struct of no fields
    for version in _versions(spec):
        data = _sample_struct(struct, version) if struct else {}
        body = struct.encode(data, version=version, compact=True, tagged=True) if struct else b"\x00"
        value = _uv(1) + _uv(spec["apiKey"]) + _uv(version) + body
        for backend in BACKENDS:
            p = decode_payload("__cluster_metadata", None, value, backend=backend)
            assert (p.value.type, p.value.version) == (spec["name"], version)
            _same(p.value.data, data)
            codec = _codec("kraft_metadata", backend)
            assert codec.encode(codec.decode(value)) == value, (spec["name"], version, backend)
        _in_c("kraft_metadata", value)


COORDINATORS = {
    "__consumer_offsets": ("group_coordinator_value", GROUPS),
    "__transaction_state": ("transaction_coordinator_value", TREE / "transaction-coordinator/src/main/resources/common/message"),
    "__share_group_state": ("share_coordinator_value", TREE / "share-coordinator/src/main/resources/common/message"),
}  # fmt: skip


def _pairs():
    out = []
    for topic, (_, folder) in COORDINATORS.items():
        specs = {_spec(p)["name"]: p for p in folder.glob("*.json")}
        out += [(topic, specs[n], specs[n[:-3] + "Value"]) for n in sorted(specs) if n.endswith("Key")]
    return out


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: f"{p[0]}:{p[1].stem[:-3]}")
def test_every_coordinator_record_kafka_python_writes(pair):
    """Every record of the group, transaction and share coordinators, every key record type and every value
    version (classic and flexible), as kafka-python writes them from the specs."""
    topic, kpath, vpath = pair
    kspec, vspec = _spec(kpath), _spec(vpath)
    flexible = int(vspec["flexibleVersions"].rstrip("+")) if vspec["flexibleVersions"] != "none" else 1 << 15
    for record_type in _versions(kspec):
        kdata = _sample_struct(_struct(kpath), record_type)
        key = _i16(record_type) + _struct(kpath).encode(kdata, version=record_type)
        for version in _versions(vspec):
            flex = version >= flexible
            vdata = _sample_struct(_struct(vpath), version)
            value = _i16(version) + _struct(vpath).encode(vdata, version=version, compact=flex, tagged=flex)
            for backend in BACKENDS:  # classic and flexible versions alike (OffsetCommitValue 0-3 and 4)
                p = decode_payload(topic, key, value, backend=backend)
                assert (p.key.type, p.key.version, p.value.type, p.value.version) == (
                    kspec["name"], record_type, vspec["name"], version)  # fmt: skip
                _same(p.key.data, kdata)
                _same(p.value.data, vdata)
                codec = _codec(COORDINATORS[topic][0], backend)
                assert codec.encode(codec.decode(value, record_type=record_type), record_type=record_type) == value
            _in_c(COORDINATORS[topic][0], value, record_type=record_type)


REMOTE = TREE / "storage/src/main/resources/message"


@pytest.mark.parametrize("path", sorted(REMOTE.glob("RemoteLog*.json")), ids=lambda p: p.stem)
def test_every_remote_log_metadata_record_kafka_python_writes(path):
    """__remote_log_metadata's records (RemoteLogMetadataSerde frames them as MetadataRecordSerde does)."""
    spec, struct = _spec(path), _struct(path)
    for version in _versions(spec):
        data = _sample_struct(struct, version)
        value = (
            _uv(1)
            + _uv(spec["apiKey"])
            + _uv(version)
            + struct.encode(data, version=version, compact=True, tagged=True)
        )
        for backend in BACKENDS:
            p = decode_payload("__remote_log_metadata", None, value, backend=backend)
            assert (p.value.type, p.value.version) == (spec["name"], version)
            _same(p.value.data, data)
            codec = _codec("remote_log_metadata", backend)
            assert codec.encode(codec.decode(value)) == value
        _in_c("remote_log_metadata", value)


# ---------------------------------------------------------------- what does not decode


@pytest.mark.skipif(not NATIVE, reason="the native backend is not built here")
def test_native_gives_the_python_backends_value_or_error_on_damaged_real_payloads():
    """A real PartitionRecord (tagged fields), RegisterBrokerRecord (nullable and compact fields) and a
    GroupMetadataValue with its members (ConsumerProtocol views on a string condition), every prefix and
    every byte flipped three ways: the native backend answers what the python backend answers."""
    from kfmt.payloads import BINDINGS, decode_key

    picked = [r for r in VECTORS["records"] if r["value"][:6] in ("010301", "010003")]
    picked += [r for r in VECTORS["records"] if r["key"] and r["key"].startswith("0002")][:1]
    assert len(picked) >= 3
    n = 0
    for r in picked:
        b = BINDINGS[r["topic"]]
        key = bytes.fromhex(r["key"]) if r["key"] else None
        kw = {b.param: decode_key(r["topic"], key).version} if b.param else {}
        n += same_outcomes(_codec(b.value, "native"), _codec(b.value, "python"), bytes.fromhex(r["value"]), **kw)
    assert n > 1000


def test_problems_are_reported_with_where():
    from kfmt.runtime.errors import CodecError

    value = bytes.fromhex(next(r["value"] for r in VECTORS["records"] if r["value"].startswith("010301")))
    for backend in ("python", "native") if NATIVE else ("python",):  # the checked decoder's words, exactly
        with pytest.raises(CodecError, match=r"^value\.partition_record\.directories at byte 48: count 1 needs"):
            decode_payload("__cluster_metadata", None, value[:-3], backend=backend)
    with pytest.raises(CodecError, match="no layout for api_key 99"):
        decode_payload("__cluster_metadata", None, _uv(1) + _uv(99) + _uv(0) + b"\x00")
    with pytest.raises(CodecError, match="frame version 2"):
        decode_payload("__cluster_metadata", None, b"\x02" + value[1:])
    key = _i16(1) + _struct(GROUPS / "OffsetCommitKey.json").encode(
        {"group": "g", "topic": "t", "partition": 0}, version=1
    )
    assert decode_payload("__consumer_offsets", key, None).value is None  # a tombstone
    with pytest.raises(CodecError, match="needs its key"):
        decode_payload("__consumer_offsets", None, _i16(3) + bytes(30))
    with pytest.raises(CodecError, match="no layout for record_type 99"):
        decode_payload("__consumer_offsets", _i16(99) + b"\x00\x01g", None)
    assert kafka_json(decode_payload("__consumer_offsets", key, None).key.data) == {"group": "g", "topic": "t",
                                                                                    "partition": 0}  # fmt: skip


# ---------------------------------------------------------------- where users see it: kfmt dump


def _offsets_log(tmp_path, damage: bool = False) -> Path:
    """A __consumer_offsets partition holding the real broker's records (and, with ``damage``, one cut short)."""
    import kfmt

    recs = [r for r in VECTORS["records"] if r["topic"] == "__consumer_offsets"]
    records = [
        kfmt.Record(key=bytes.fromhex(r["key"]), value=bytes.fromhex(r["value"]), timestamp=1769791662893) for r in recs
    ]
    if damage:
        records.append(kfmt.Record(key=records[-1].key, value=records[-1].value[:-4], timestamp=1769791662893))
    d = tmp_path / "__consumer_offsets-7"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(kfmt.encode_batch(records))
    return d


def _dump(*args):
    return subprocess.run([sys.executable, "-m", "kfmt", "dump", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)  # fmt: skip


def test_dump_decodes_internal_topics(tmp_path):
    log = _offsets_log(tmp_path)
    r = _dump(log, "--records", "--no-index")
    assert r.returncode == 0, r.stderr
    assert 'key OffsetCommitKey v1 {group: "DEVSmileCDR", topic: "batch2.work.notification.SHR_PROD.persistence", ' \
           "partition: 0} value OffsetCommitValue v3 {offset: 0, leaderEpoch: -1," in r.stdout  # fmt: skip
    assert 'key GroupMetadataKey v2 {group: "DEVSmileCDR"} value GroupMetadataValue v3 {protocolType: ' in r.stdout
    r = _dump(log, "--records", "--json", "--no-index")
    rows = [json.loads(x) for x in r.stdout.splitlines() if '"record"' in x]
    assert len(rows) == 2 and all(x["key"] and x["value"] for x in rows)  # raw key and value kept
    commit = next(x for x in rows if x["key_decoded"]["type"] == "OffsetCommitKey")
    assert commit["key_decoded"] == {"type": "OffsetCommitKey", "version": 1, "data": {
        "group": "DEVSmileCDR", "topic": "batch2.work.notification.SHR_PROD.persistence", "partition": 0}}  # fmt: skip
    assert commit["value_decoded"]["type"] == "OffsetCommitValue" and commit["value_decoded"]["version"] == 3
    r = _dump(log, "--records", "--json", "--no-index", "--payload", "raw")
    assert r.returncode == 0 and "key_decoded" not in r.stdout


def test_dump_reports_a_payload_that_does_not_decode(tmp_path):
    log = _offsets_log(tmp_path, damage=True)
    r = _dump(log, "--records", "--no-index")
    assert r.returncode == 1
    assert "offset 2: __consumer_offsets record does not decode: value" in r.stderr and "(shown raw)" in r.stderr
    assert "offset 2 " in r.stdout and "value 0x0003" in r.stdout  # the record is still shown, raw
    r = _dump(log, "--records", "--json", "--no-index")
    problems = [json.loads(x) for x in r.stdout.splitlines() if '"problem"' in x]
    assert r.returncode == 1 and problems[0]["kind"] == "payload" and problems[0]["offset"] == 2


def test_a_members_metadata_that_does_not_parse_is_kept_and_reported(tmp_path):
    """A consumer group member's subscription and assignment that do not parse as ConsumerProtocol stay bytes;
    the group still decodes, and kfmt dump (exit 1) and the decoded columns say what did not parse, where."""
    import kfmt

    member = {"member_id": "m-1", "group_instance_id": None, "client_id": "c", "client_host": "/h",
              "rebalance_timeout": 1, "session_timeout": 2, "subscription": b"\x00\x01\x00", "assignment": b""}  # fmt: skip
    data = {"protocol_type": "consumer", "generation": 4, "protocol": "range", "leader": "m-1",
            "current_state_timestamp": 5, "members": [member]}  # fmt: skip
    value = _i16(3) + _struct(GROUPS / "GroupMetadataValue.json").encode(data, version=3)
    key = _i16(2) + _struct(GROUPS / "GroupMetadataKey.json").encode({"group": "g"}, version=2)
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(key=key, value=value)]))
    r = _dump(d, "--records", "--no-index")
    assert r.returncode == 1, r.stderr
    assert "offset 0: __consumer_offsets record: value.GroupMetadataValue.members[0].subscription: " in r.stderr
    assert "value.GroupMetadataValue.members[0].assignment: " in r.stderr and "(kept as bytes)" in r.stderr
    assert "value GroupMetadataValue v3 {protocolType: " in r.stdout  # the rest decoded and shown
    row = kfmt.read_arrow(str(tmp_path), decode_payloads=True).to_pylist()[0]
    assert json.loads(row["value_decoded"])["data"]["members"][0]["subscription"] == "000100"
    assert row["payload_error"].startswith("value.GroupMetadataValue.members[0].subscription: ")


def test_bytes_after_a_message_as_kafkas_readers_treat_them(tmp_path):
    """CoordinatorRecordSerde and ControlRecordUtils read a message and ignore what follows it; MetadataRecordSerde
    refuses it ("Found N byte(s) of garbage after ..."). So kfmt: a coordinator or control record with bytes
    after its message decodes, the bytes kept and reported; a metadata record with them does not decode."""
    import kfmt
    from kfmt.payloads import decode_control
    from kfmt.runtime.errors import CodecError

    rec = next(r for r in VECTORS["records"] if r["key"] and r["key"].startswith("0001"))  # an offset commit
    key, value = bytes.fromhex(rec["key"]), bytes.fromhex(rec["value"])
    for backend in BACKENDS:
        assert _codec("group_coordinator_value", backend).TRAILING == "ignore"
        assert _codec("kraft_metadata", backend).TRAILING == "exact"
        p = decode_payload("__consumer_offsets", key, value + b"\x01\x02\x03", backend=backend)
        assert p.value.type == "OffsetCommitValue" and p.value.trailing == b"\x01\x02\x03"
        assert p.problems == ["value.OffsetCommitValue: 3 byte(s) follow it (Kafka's reader ignores them; kept)"]
        assert p.value.to_json()["trailing"] == "010203" and "trailing" not in decode_payload(
            "__consumer_offsets", key, value, backend=backend).value.to_json()  # fmt: skip
        ctl = next(r for r in VECTORS["controls"])
        d = decode_control(int(ctl["key"][4:8], 16), bytes.fromhex(ctl["value"]) + b"\x00", backend=backend)
        assert d.trailing == b"\x00" and d.problems()
        meta = bytes.fromhex(next(r["value"] for r in VECTORS["records"] if r["value"].startswith("010301")))
        with pytest.raises(CodecError, match="1 bytes follow"):
            decode_payload("__cluster_metadata", None, meta + b"\x00", backend=backend)
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(key=key, value=value + b"\x07")]))
    r = _dump(d, "--records", "--no-index")
    assert r.returncode == 1 and "offset 0: __consumer_offsets record: value.OffsetCommitValue: 1 byte(s) follow" \
        in r.stderr and "value OffsetCommitValue v3 {offset: " in r.stdout  # fmt: skip


def test_a_transactions_state_reads_as_kafka_names_it():
    """TransactionLogValue's TransactionStatus is an int8 TransactionState.fromId names (an enum-typed whole
    field): read as the name, written as the id, an id it does not know refused as fromId refuses it."""
    from kfmt.runtime.errors import CodecError

    path = TREE / "transaction-coordinator/src/main/resources/common/message/TransactionLogValue.json"
    kpath = TREE / "transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json"
    key = _i16(0) + _struct(kpath).encode({"transactional_id": "tx"}, version=0)
    data = _sample_struct(_struct(path), 0) | {"transaction_status": 5}
    value = _i16(0) + _struct(path).encode(data, version=0)
    at = value.index(b"\x05", 2)  # the status byte (the sample's other fields hold no 5)
    for backend in BACKENDS:
        p = decode_payload("__transaction_state", key, value, backend=backend)
        assert p.value.data.transaction_status == "CompleteAbort"
        assert p.value.to_json()["data"]["TransactionStatus"] == 5  # the int8, as Kafka's converter writes it
        codec = _codec("transaction_coordinator_value", backend)
        v = codec.decode(value, record_type=0)
        v.value.transaction_status = "PrepareEpochFence"
        assert codec.encode(v, record_type=0)[at] == 7
        bad = bytearray(value)
        bad[at] = 9
        with pytest.raises(CodecError, match="unknown transaction_status id 9"):
            decode_payload("__transaction_state", key, bytes(bad), backend=backend)
    fields = (ROOT / "generated/messages/transaction_coordinator_value/FIELDS.md").read_text()
    assert "bits 0xff: transaction_status (transaction_state)" in fields and "7 = PrepareEpochFence" in fields


def test_read_arrow_decoded_columns(tmp_path):
    """read_arrow(..., decode_payloads=True): key_decoded/value_decoded as JSON text, NULL for other topics;
    a payload that does not decode keeps its row, with payload_error saying why."""
    import kfmt

    log = _offsets_log(tmp_path, damage=True)
    other = tmp_path / "orders-0"
    other.mkdir()
    (other / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v")]))
    t = kfmt.read_arrow(str(tmp_path), decode_payloads=True)
    assert t.schema.names[-3:] == ["key_decoded", "value_decoded", "payload_error"]
    rows = {(r["topic"], r["offset"]): r for r in t.to_pylist()}
    assert json.loads(rows["__consumer_offsets", 1]["value_decoded"])["type"] == "OffsetCommitValue"
    assert rows["__consumer_offsets", 2]["value_decoded"] is None and rows["__consumer_offsets", 2]["value"]
    assert rows["__consumer_offsets", 2]["payload_error"].startswith("value")
    assert rows["orders", 0]["key_decoded"] is None and rows["orders", 0]["payload_error"] is None
    only = kfmt.read_arrow(str(log), columns=["offset", "value_decoded"])  # projecting a decoded column decodes
    assert only.schema.names == ["offset", "value_decoded"] and only.column(1)[0].as_py().startswith('{"type": "Group')
    data = (log / "00000000000000000000.log").read_bytes()
    t = kfmt.read_arrow(data, topic="__consumer_offsets", columns=["offset", "key_decoded"])
    assert json.loads(t.column(1)[1].as_py())["type"] == "OffsetCommitKey"
    assert "key_decoded" not in kfmt.read_arrow(str(log)).schema.names  # only when asked for


def test_member_subscriptions_read_as_consumer_protocol():
    """A consumer group's member subscription and assignment are ConsumerProtocol messages (their own int16
    version first; a newer version is read with the newest known, what follows ignored, as ConsumerProtocol
    does); another protocol type's bytes stay bytes."""
    from kafka.protocol.schemas.fields.codecs.types import Int16

    from kfmt.runtime.errors import CodecError

    sub_spec = TREE / "clients/src/main/resources/common/message/ConsumerProtocolSubscription.json"
    asg_spec = TREE / "clients/src/main/resources/common/message/ConsumerProtocolAssignment.json"
    sub = Int16.encode(1) + _struct(sub_spec).encode({"topics": ["orders", "clicks"], "user_data": None,
                                                      "owned_partitions": [{"topic": "orders", "partitions": [0, 2]}]},
                                                     version=1)  # fmt: skip
    asg = Int16.encode(0) + _struct(asg_spec).encode({"assigned_partitions": [{"topic": "orders", "partitions": [1]}],
                                                      "user_data": b"u"}, version=0)  # fmt: skip

    def group(protocol_type: str, subscription: bytes) -> bytes:
        member = {"member_id": "m-1", "group_instance_id": None, "client_id": "c", "client_host": "/h",
                  "rebalance_timeout": 1, "session_timeout": 2, "subscription": subscription, "assignment": asg}  # fmt: skip
        data = {"protocol_type": protocol_type, "generation": 4, "protocol": "range", "leader": "m-1",
                "current_state_timestamp": 5, "members": [member]}  # fmt: skip
        return _i16(3) + _struct(GROUPS / "GroupMetadataValue.json").encode(data, version=3)

    key = _i16(2) + _struct(GROUPS / "GroupMetadataKey.json").encode({"group": "g"}, version=2)
    for backend in BACKENDS:
        m = decode_payload("__consumer_offsets", key, group("consumer", sub), backend=backend).value
        j = m.to_json()["data"]["members"][0]
        assert j["subscription"] == {"version": 1, "Topics": ["orders", "clicks"], "UserData": None,
                                     "OwnedPartitions": [{"Topic": "orders", "Partitions": [0, 2]}]}  # v1's fields only  # fmt: skip
        assert j["assignment"] == {"version": 0, "AssignedPartitions": [{"Topic": "orders", "Partitions": [1]}],
                                   "UserData": "75"}  # fmt: skip
        v3 = _struct(sub_spec).encode({"topics": ["orders", "clicks"], "user_data": None, "owned_partitions": [],
                                       "generation_id": 7, "rack_id": "r"}, version=3)  # fmt: skip
        newer = Int16.encode(9) + v3 + b"\x00\x00\x00\x07"  # a newer version: read as the newest known
        m = decode_payload("__consumer_offsets", key, group("consumer", newer), backend=backend).value
        assert m.data.members[0].subscription_decoded.topics == ["orders", "clicks"]
        m = decode_payload("__consumer_offsets", key, group("connect", b"\x01\x02"), backend=backend).value
        assert (
            m.data.members[0].subscription_decoded is None
            and m.to_json()["data"]["members"][0]["subscription"] == "0102"
        )
        # a member's subscription that does not parse stays bytes, the rest of the group decodes, and it is said
        p = decode_payload("__consumer_offsets", key, group("consumer", sub[:5]), backend=backend)
        m = p.value.data.members[0]
        assert m.subscription == sub[:5] and m.subscription_decoded is None and m.assignment_decoded is not None
        assert "consumer_protocol_subscription" in m.subscription_decoded_error and m.assignment_decoded_error is None
        assert p.problems == [
            f"value.GroupMetadataValue.members[0].subscription: {m.subscription_decoded_error} (kept as bytes)"
        ]
        assert p.value.to_json()["data"]["members"][0]["subscription"] == sub[:5].hex()
        codec, raw = _codec("group_coordinator_value", backend), group("consumer", sub[:5])
        assert codec.encode(codec.decode(raw, record_type=2), record_type=2) == raw  # the bytes kept, written back
    with pytest.raises(CodecError, match="members"):  # a member that does not decode: the record does not
        decode_payload("__consumer_offsets", key, group("consumer", sub)[:-3])


@pytest.mark.parametrize("rec", VECTORS["controls"], ids=lambda r: f"{r['topic']}@{r['offset']}")
def test_a_real_brokers_control_records(rec):
    """KRaft's control records (ControlRecordUtils: the value is the message at version 0, no version before
    it; the key an int16 version and the int16 control type), as kafka-python reads them from the specs."""
    from kfmt.payloads import decode_control

    key, value = bytes.fromhex(rec["key"]), bytes.fromhex(rec["value"])
    control_type = int.from_bytes(key[2:4], "big")
    names = {2: "LeaderChangeMessage", 3: "SnapshotHeaderRecord", 4: "SnapshotFooterRecord"}
    spec = TREE / f"clients/src/main/resources/common/message/{names[control_type]}.json"
    theirs = _struct(spec).decode(io.BytesIO(value), version=0, compact=True, tagged=True)
    for backend in BACKENDS:
        d = decode_control(control_type, value, backend=backend)
        assert (d.type, d.version) == (names[control_type], 0)
        _same(d.data, theirs)
        codec = _codec("raft_control", backend)
        assert codec.encode(codec.decode(value, control_type=control_type), control_type=control_type) == value
    assert decode_control(1, b"\x00\x00\x00\x00\x00\x05") is None  # a COMMIT marker: kfmt.log.txn's


def test_versions_past_the_spec_are_refused_by_name():
    """A value version the pinned specs do not have is an error naming it, never read with another layout."""
    from kfmt.runtime.errors import CodecError

    key = _i16(1) + _struct(GROUPS / "OffsetCommitKey.json").encode(
        {"group": "g", "topic": "t", "partition": 0}, version=1
    )
    for backend in BACKENDS:
        with pytest.raises(CodecError, match=r"no layout for version 5 \(known: 0, 1, 2, 3, 4\)"):
            decode_payload("__consumer_offsets", key, _i16(5) + bytes(30), backend=backend)


def test_kafka_json_builds_the_message_again():
    """from_kafka_json(kafka_json(x)) is x: every real record, ConsumerProtocol subscriptions included."""
    from kfmt.payloads import from_kafka_json

    for rec in VECTORS["records"]:
        key = bytes.fromhex(rec["key"]) if rec["key"] is not None else None
        p = decode_payload(rec["topic"], key, bytes.fromhex(rec["value"]))
        data = json.loads(json.dumps(p.value.to_json()["data"]))
        again = from_kafka_json(type(p.value.data), data)
        assert kafka_json(again, p.value.version) == data


def test_diff_of_message_versions_on_a_corpus(tmp_path):
    """kfmt diff SCHEMA@3 SCHEMA@4: the real __consumer_offsets records re-encoded at each version (v4 is
    flexible: compact strings and arrays, tagged sections: the group metadata value is smaller)."""
    from kfmt.tools.diff_messages import measure

    log = _offsets_log(tmp_path)
    r = subprocess.run([sys.executable, "-m", "kfmt", "diff", "group_coordinator_value@3", "group_coordinator_value@4",
                        "--corpus", str(log)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("| GroupMetadataValue"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "1" and int(cells[4].replace(",", "")) < int(cells[3].replace(",", ""))  # v4 is smaller
    res = measure("group_coordinator_value", [3, 4], [str(log)])
    assert res["messages"]["OffsetCommitValue"]["at"][4] > 0 and not res["messages"]["GroupMetadataValue"]["cannot"]
    bad = subprocess.run([sys.executable, "-m", "kfmt", "diff", "group_coordinator_value@3", "kafka_v2@1", "--corpus",
                          str(log)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert bad.returncode == 2 and "one message schema" in bad.stderr


def test_a_tagged_array_absent_is_the_empty_array_kafka_reads():
    """#34: LogDirs of BrokerRegistrationChangeRecord v2 (tag 2, "[]uuid", not nullable, no default): absent,
    Kafka's generated reader sets its default, the empty array (FieldSpec.fieldDefault), and its writer leaves
    an empty one out. Bytes laid out from the spec: frame 1, apiKey 17, version 2 (unsigned varints), BrokerId
    int32 1, BrokerEpoch int64 5, no tagged field."""
    data = b"\x01\x11\x02" + (1).to_bytes(4, "big") + (5).to_bytes(8, "big") + b"\x00"
    for backend in BACKENDS:
        p = decode_payload("__cluster_metadata", None, data, backend=backend)
        assert p.value.data.log_dirs == [], backend
        assert "LogDirs" not in p.value.to_json()["data"]  # at its default: Kafka's converter leaves it out
        codec = _codec("kraft_metadata", backend)
        assert codec.encode(codec.decode(data)) == data
    a, b = (decode_payload("__cluster_metadata", None, data, backend="python").value.data for _ in range(2))
    a.log_dirs.append(bytes(16))
    assert b.log_dirs == []  # each value its own list


def test_a_tag_not_valid_at_the_version_is_refused_as_kafka_does():
    """#34: Kafka's generated reader throws "Tag 8 is not valid for version 0" for a known tag outside its
    tagged versions (Directories of PartitionChangeRecord is tag 8 from version 1); kfmt refused nothing and
    kept it as an unknown tag. Bytes: frame 1, apiKey 5, version 0, PartitionId int32 0, TopicId 16 bytes,
    one tagged field: tag 8, size 1, an empty compact array (0x01). At version 1 the same tag is Directories."""
    body = (0).to_bytes(4, "big") + bytes(range(16)) + b"\x01\x08\x01\x01"
    for backend in BACKENDS:
        with pytest.raises(kfmt.CodecError, match="tag 8 .*not valid at this version"):
            decode_payload("__cluster_metadata", None, b"\x01\x05\x00" + body, backend=backend)
        p = decode_payload("__cluster_metadata", None, b"\x01\x05\x01" + body, backend=backend)
        assert p.value.data.directories == []


def test_an_unknown_backend_is_the_same_one_line_error_everywhere():
    """#34: decode_payload names the backends as read_batches does (one rule, kfmt.codec.formats), not a raw
    ModuleNotFoundError."""
    with pytest.raises(kfmt.UnsupportedCodecError) as ours:
        decode_payload("__consumer_offsets", b"\x00\x01", None, backend="nope")
    with pytest.raises(kfmt.UnsupportedCodecError) as theirs:
        list(kfmt.read_batches(b"", backend="nope"))
    assert "unknown backend 'nope'; use one of" in str(ours.value)
    assert str(ours.value).split("unknown backend", 1)[1] == str(theirs.value).split("unknown backend", 1)[1]


def _metadata_log(tmp_path) -> Path:
    """A __cluster_metadata partition of two records laid out by hand from Kafka's serde rules (MetadataRecordSerde:
    frame version 1, apiKey and version as unsigned varints, then the flexible message): a TopicRecord (apiKey 2,
    v0: compact string Name, uuid TopicId, no tags) whose name holds ``ED A0 80`` (not UTF-8), and a ClientQuotaRecord
    (apiKey 14, v0: a compact array of EntityData {compact EntityType, compact nullable EntityName, no tags},
    compact string Key, float64 Value, bool Remove, no tags) of each float64 JSON has no number for."""
    import struct as st

    import kfmt

    def text(b: bytes) -> bytes:
        return _uv(len(b) + 1) + b

    name = b"t\xed\xa0\x80x"
    values = [_uv(1) + _uv(2) + _uv(0) + text(name) + bytes(range(16)) + _uv(0)]
    for v in (math.nan, math.inf, -math.inf):
        entity = _uv(2) + text(b"user") + text(b"alice") + _uv(0)
        values.append(_uv(1) + _uv(14) + _uv(0) + entity + text(b"producer_byte_rate") + st.pack(">d", v) + b"\0"
                      + _uv(0))  # fmt: skip
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(value=v, timestamp=1) for v in values]))
    return d


def test_output_is_what_it_says_it_is(tmp_path):
    """#34 item 11: dump --records (text) is UTF-8 whatever a payload's strings hold, and --json and the decoded
    columns are JSON: a string that is not UTF-8 is {"hex", "kafka"} (its bytes, and the text Kafka's Java reader
    makes of them), a float64 NaN or infinity is "NaN"/"Infinity"/"-Infinity" as Jackson (Kafka's converters)
    writes it. The JSON builds the same message again."""
    import kfmt
    from kfmt.payloads import decode_payload, from_kafka_json

    log = _metadata_log(tmp_path)
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--records", "--no-index", str(log)], capture_output=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")  # raises on bytes that are not UTF-8
    assert '{hex: "74eda08078", kafka: "t\ufffdx"}' in out and '"NaN"' in out and '"-Infinity"' in out

    def strict(x):
        raise ValueError(f"not JSON: {x}")

    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--records", "--json", "--no-index", str(log)],
                       capture_output=True)  # fmt: skip
    rows = [json.loads(x, parse_constant=strict) for x in r.stdout.decode("utf-8").splitlines() if '"record"' in x]
    assert rows[0]["value_decoded"]["data"]["Name"] == {"hex": "74eda08078", "kafka": "t\ufffdx"}
    assert [x["value_decoded"]["data"]["Value"] for x in rows[1:]] == ["NaN", "Infinity", "-Infinity"]
    t = kfmt.read_arrow(str(log), columns=["value_decoded"])
    decoded = [json.loads(v, parse_constant=strict) for v in t.column(0).to_pylist()]
    assert decoded == [x["value_decoded"] for x in rows]
    for x, rec in zip(rows, kfmt.read_batches(str(log / "00000000000000000000.log")).__next__().records, strict=True):
        p = decode_payload("__cluster_metadata", None, rec.value)
        again = from_kafka_json(type(p.value.data), x["value_decoded"]["data"])
        assert kafka_json_equal(again, p.value.data)


def kafka_json_equal(a, b) -> bool:
    from kfmt.payloads import kafka_json

    return json.dumps(kafka_json(a)) == json.dumps(kafka_json(b))


def test_a_struct_defaulting_to_new_type_reads_and_writes_as_kafka():
    """#34 item 5: ConsumerGroupMemberMetadataValue's ClassicMemberMetadata (tag 0, nullable, spec default JSON
    null: FieldSpec.fieldDefault gives ``new ClassicMemberMetadata()``). Kafka writes null explicitly (tag 0, size
    1, uvarint 0: its reader's ``readUnsignedVarint() <= 0``) for every consumer-protocol member, and leaves the tag
    out when the value is the empty struct, which an absent tag reads as. Bytes laid out from the spec: key
    version 5 (GroupId, MemberId as int16-length strings, classic: the key has no flexible versions); value
    version 0 then InstanceId null, RackId null, ClientId "c", ClientHost "/h" (compact strings), SubscribedTopicNames
    ["t"] (compact array), SubscribedTopicRegex null, RebalanceTimeoutMs int32 300000, ServerAssignor "uniform",
    then the tagged fields."""
    key = _i16(5) + _i16(1) + b"g" + _i16(1) + b"m"
    head = _i16(0) + b"\x00\x00" + b"\x02c" + b"\x03/h" + b"\x02\x02t" + b"\x00" + (300000).to_bytes(4, "big")
    head += b"\x08uniform"
    explicit_null = head + b"\x01" + b"\x00\x01\x00"  # one tag: 0, size 1, uvarint 0 (null)
    absent = head + b"\x00"
    classic = (
        head
        + b"\x01"
        + b"\x00\x11"
        + b"\x01"
        + (45000).to_bytes(4, "big")
        + b"\x02"
        + b"\x06range\x03\x01\x02\x00"
        + b"\x00"
    )
    for backend in BACKENDS:
        codec = _codec("group_coordinator_value", backend)
        v = decode_payload("__consumer_offsets", key, explicit_null, backend=backend).value
        assert v.data.classic_member_metadata is None, backend  # a consumer-protocol member
        assert codec.encode(codec.decode(explicit_null, record_type=5), record_type=5) == explicit_null, backend
        v = decode_payload("__consumer_offsets", key, absent, backend=backend).value
        empty = v.data.classic_member_metadata
        assert (empty.session_timeout_ms, empty.supported_protocols) == (0, []), backend  # new ClassicMemberMetadata()
        assert "ClassicMemberMetadata" not in v.to_json()["data"]  # at its default: Kafka's converter leaves it out
        nulled = decode_payload("__consumer_offsets", key, explicit_null, backend=backend).value.to_json()
        assert nulled["data"]["ClassicMemberMetadata"] is None
        assert codec.encode(codec.decode(absent, record_type=5), record_type=5) == absent, backend
        v = decode_payload("__consumer_offsets", key, classic, backend=backend).value
        m = v.data.classic_member_metadata
        assert m.session_timeout_ms == 45000 and [(p.name, p.metadata) for p in m.supported_protocols] == [
            ("range", b"\x01\x02")
        ]
        assert codec.encode(codec.decode(classic, record_type=5), record_type=5) == classic, backend


def test_tags_in_any_order_as_kafkas_reader_takes_them():
    """#34 item 7: Kafka's generated reader takes tagged fields in any order (a known tag read twice keeps the
    last value; an unknown tag read twice is kept twice). PartitionChangeRecord v0 laid out by hand: frame 1,
    apiKey 5, version 0 (unsigned varints), PartitionId int32 3, TopicId (16 bytes), then 4 tags: Leader (tag 1)
    7, Isr (tag 0, compact array) [1, 2], tag 40 (unknown) 0xAA, Leader again 9. Written back as read while the
    values are unchanged (a byte-exact round trip); once a value changes, in tag order, as Kafka writes."""
    head = b"\x01\x05\x00" + (3).to_bytes(4, "big") + bytes(range(16))
    isr = b"\x00\x09\x03" + (1).to_bytes(4, "big") + (2).to_bytes(4, "big")
    leader = lambda v: b"\x01\x04" + v.to_bytes(4, "big")  # noqa: E731
    data = head + b"\x04" + leader(7) + isr + b"\x28\x01\xaa" + leader(9)
    canonical = head + b"\x03" + isr + leader(9) + b"\x28\x01\xaa"
    changed = head + b"\x03" + isr + leader(5) + b"\x28\x01\xaa"
    for backend in BACKENDS:
        v = decode_payload("__cluster_metadata", None, data, backend=backend).value.data
        assert (v.leader, v.isr, v.tagged_fields) == (9, [1, 2], [(40, b"\xaa")]), backend
        codec = _codec("kraft_metadata", backend)
        assert codec.encode(codec.decode(data)) == data, backend
        assert codec.encode(codec.decode(canonical)) == canonical, backend
        record = codec.decode(data)
        record.record.leader = 5
        assert codec.encode(record) == changed, backend
        record = codec.decode(data)
        record.record.tagged_fields.append((41, b""))
        assert codec.encode(record) == head + b"\x04" + isr + leader(9) + b"\x28\x01\xaa\x29\x00", backend


def test_a_tag_at_its_default_is_kept_as_read():
    """#34 item 7: a tagged field written explicitly at its default (Kafka's writers leave it out; its readers take
    it) is written back as read. PartitionChangeRecord v0 (laid out as above) with Leader (tag 1) -2, its default,
    and v2 with EligibleLeaderReplicas (tag 6, nullable, default null) written as null (compact array, uvarint 0);
    ConsumerGroupMemberMetadataValue with ClassicMemberMetadata written as new ClassicMemberMetadata() (tag 0,
    size 7: present 1, SessionTimeoutMs 0, SupportedProtocols [], no tags), which its absent tag reads as too.
    Re-encoded at a version where the tag is not valid, the tag at its default is left out."""
    head = lambda version: b"\x01\x05" + bytes([version]) + (3).to_bytes(4, "big") + bytes(range(16))  # noqa: E731
    at_default = head(0) + b"\x01\x01\x04" + (-2).to_bytes(4, "big", signed=True)
    null_elr = head(2) + b"\x01\x06\x01\x00"
    key = _i16(5) + _i16(1) + b"g" + _i16(1) + b"m"
    group = _i16(0) + b"\x00\x00" + b"\x02c" + b"\x03/h" + b"\x02\x02t" + b"\x00" + (300000).to_bytes(4, "big")
    group += b"\x08uniform" + b"\x01\x00\x07\x01" + bytes(4) + b"\x01\x00"
    for backend in BACKENDS:
        codec = _codec("kraft_metadata", backend)
        v = codec.decode(at_default)
        assert v.record.leader == -2 and codec.encode(v) == at_default, backend
        v = codec.decode(null_elr)
        assert v.record.eligible_leader_replicas is None and codec.encode(v) == null_elr, backend
        v.version = 0
        assert codec.encode(v) == head(0) + b"\x00", backend  # tag 6 is not valid at v0: left out
        groups = _codec("group_coordinator_value", backend)
        m = decode_payload("__consumer_offsets", key, group, backend=backend).value.data.classic_member_metadata
        assert (m.session_timeout_ms, m.supported_protocols) == (0, []), backend
        assert groups.encode(groups.decode(group, record_type=5), record_type=5) == group, backend
