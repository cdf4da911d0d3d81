"""Every KRaft metadata record, remote log metadata record, coordinator record and KRaft control record at every version, with values drawn by hypothesis (#34's
done-when): nulls where the version allows them, empty and longer arrays, tagged fields absent or set, and unknown
tags. The bytes come from an independent encoder, kafka-python's protocol types built from Kafka's own JSON specs
(the pinned copies under tests/fixtures/kafka); unknown tags are laid out by hand in the top-level tagged section
(count, then tag, size and bytes as unsigned varints, tags above every known one). Each backend decodes them to
kafka-python's values and writes them back byte for byte.

The top-level tagged section is then laid out as Kafka's readers take it though its writers never write it so
(item 7): tagged fields written explicitly at their default (bytes from kafka-python's field encoder; a struct
whose default is Kafka's new Type(): that struct with each field at its default), tags in any order, and a
named tag written twice (first at its default: the last one counts). Each backend reads the values and writes
the section back as read."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_kafka_payloads import (
    BACKENDS,
    COORDINATORS,
    METADATA,
    REMOTE,
    TREE,
    _i16,
    _pairs,
    _same,
    _spec,
    _struct,
    _uv,
    _versions,
)

from kfmt.payloads import _codec, decode_payload

SCALARS = {
    "int8": st.integers(-128, 127), "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1), "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1), "uint32": st.integers(0, 2**32 - 1),
    "float64": st.floats(allow_nan=False), "bool": st.booleans(), "string": st.text(max_size=6),
    "bytes": st.binary(max_size=6), "records": st.binary(max_size=6), "uuid": st.uuids(),
}  # fmt: skip


def _nullable(field, version: int) -> bool:
    from generator.frontends.kafka_spec import Versions

    v = Versions.parse(field._json.get("nullableVersions", "none"), "")
    return v.lo is not None and v.lo <= version and (v.hi is None or version <= v.hi)


def _new_type(field) -> bool:
    """A tagged struct whose default is Kafka's new Type(): kafka-python leaves a None out (Kafka writes null), so
    null is not drawn for it; its explicit null is tests/test_kafka_payloads.py's."""
    return field.tag is not None and field._json["type"][:1].isupper() and field._json.get("default") != "null"


def _value(draw, field, version: int, depth: int):
    if _nullable(field, version) and not _new_type(field) and draw(st.booleans()):
        return None
    if field.is_struct_array() or field.is_array():
        n = draw(st.integers(0, 2 if depth < 2 else 0))
        if field.is_struct_array():
            return [_draw_struct(draw, field, version, depth + 1) for _ in range(n)]
        return [draw(SCALARS[field._json["type"][2:]]) for _ in range(n)]
    if field.is_struct():
        return _draw_struct(draw, field, version, depth + 1)
    if field.name == "transaction_status":  # an id TransactionState.fromId knows
        return draw(st.integers(0, 7))
    return draw(SCALARS[field._json["type"]])


def _default(field):
    d = field._json.get("default")
    t = field._json["type"]
    if d is None or d == "null" or t.startswith("[]") or t[:1].isupper():
        return None if d == "null" or t.startswith("[]") else ()  # () never equals a drawn value
    if t == "bool":
        return str(d).lower() == "true"
    if t == "float64":
        return float(d)
    return int(str(d), 0) if t.startswith(("int", "uint")) else d


def _draw_struct(draw, struct, version: int, depth: int = 0) -> dict:
    fields = [f for f in struct.fields.values() if f.for_version_q(version)]
    fields.sort(key=lambda f: (f.tag is not None, int(f.tag) if f.tag is not None else 0))
    out = {}
    for f in fields:
        if f.tag is not None and draw(st.booleans()):
            continue  # absent: Kafka's default is read
        v = _value(draw, f, version, depth)
        if f.tag is not None and (
            v == _default(f)
            or (v is None and f._json.get("default") == "null")
            or (v == [] and not _nullable(f, version))
            or v in ("", b"", 0, False)
            or (isinstance(v, uuid.UUID) and v.int == 0)
            or (isinstance(v, float) and v == 0)
            or (isinstance(v, dict) and _new_type(f) and _all_default(v))
        ):
            continue  # at its default: not written here (_reshape writes some explicitly)
        out[f.name] = v
    return out


def _all_default(v: dict) -> bool:
    """A drawn struct whose fields all hold their type's zero: new Type() (its fields have no other default)."""
    return all(x in (0, "", b"", False, None) or x == [] for x in v.values())


def _unknown_tags(draw, body: bytes, struct, version: int, data: dict) -> bytes:
    """``body`` with tags no spec names in its top-level tagged section, when no known tag is written there."""
    tagged = [f for f in struct.fields.values() if f.tag is not None and f.for_version_q(version)]
    if any(f.name in data for f in tagged) or not body.endswith(b"\x00"):
        return body
    n = draw(st.integers(0, 2))
    first = max([int(f.tag) for f in tagged], default=-1) + 10
    tags = [(first + 3 * i, draw(st.binary(max_size=4))) for i in range(n)]
    return body[:-1] + _uv(n) + b"".join(_uv(t) + _uv(len(b)) + b for t, b in tags)


def _entries(section: bytes) -> list:
    """(tag, bytes) pairs of a tagged section: a count, then per tag its tag, size and bytes (unsigned varints)."""

    def uv(pos: int) -> tuple[int, int]:
        v = shift = 0
        while True:
            b = section[pos]
            v |= (b & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if b < 0x80:
                return v, pos

    n, pos = uv(0)
    out = []
    for _ in range(n):
        tag, pos = uv(pos)
        size, pos = uv(pos)
        out.append((tag, section[pos : pos + size]))
        pos += size
    assert pos == len(section)
    return out


def _default_bytes(field, version: int) -> bytes:
    """A tagged field's value at its default, as kafka-python's field encoder writes it."""
    value = field.default
    if _new_type(field):  # Kafka's new Type(): the struct with each field at its default
        value = {f.name: f.default for f in field.fields.values() if f.for_version_q(version)}
    return field.encode(value, version=version, compact=True, tagged=None)


def _reshape(draw, body: bytes, struct, version: int, values: dict) -> bytes:
    """``body`` with its top-level tagged section as Kafka reads but does not write it: some tagged fields
    written at their default (a set one: first at its default, then its value), the tags in a drawn order (a
    tag written twice keeps its occurrences in order, so the last one still counts)."""
    tagged = [f for f in struct.fields.values() if f.tag is not None and f.for_version_q(version)]
    names = {f.name for f in tagged}
    plain = struct.encode(
        {k: v for k, v in values.items() if k not in names}, version=version, compact=True, tagged=True
    )
    prefix = plain[:-1]  # the same bytes with an empty top-level section (its count, 0, last)
    assert plain[-1:] == b"\x00" and body.startswith(prefix), body.hex()
    entries = _entries(body[len(prefix) :])
    for f in tagged:
        if draw(st.booleans()):
            entries.insert(0, (int(f.tag), _default_bytes(f, version)))
    order = draw(st.permutations(range(len(entries))))
    queues: dict[int, list] = {}
    for tag, b in entries:
        queues.setdefault(tag, []).append(b)
    shuffled = [entries[i][0] for i in order]
    section = _uv(len(shuffled)) + b"".join(_uv(t) + _uv(len(b)) + b for t in shuffled for b in [queues[t].pop(0)])
    return prefix + section


def _check(schema: str, topic: str, key, value: bytes, data: dict, key_data=None, **params) -> None:
    for backend in BACKENDS:
        p = decode_payload(topic, key, value, backend=backend)
        _same(p.value.data, data)
        codec = _codec(schema, backend)
        assert codec.encode(codec.decode(value, **params), **params) == value, (schema, backend, value.hex())
        if key_data is not None:  # a coordinator's key: its schema is the value's, named ..._key
            _same(p.key.data, key_data)
            keys = _codec(schema.replace("_value", "_key"), backend)
            assert keys.encode(keys.decode(key)) == key, (schema, backend, key.hex())


CLIENT_MESSAGES = TREE / "clients/src/main/resources/common/message"
METADATA_SPECS = sorted(p for p in METADATA.glob("*.json") if _spec(p)["fields"])
FIELDLESS = sorted(p for p in METADATA.glob("*.json") if not _spec(p)["fields"])  # kafka-python builds no struct
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


FRAMED = [("kraft_metadata", "__cluster_metadata", p) for p in METADATA_SPECS] + [
    ("remote_log_metadata", "__remote_log_metadata", p) for p in sorted(REMOTE.glob("Remote*.json"))
]  # KRaft's records and RemoteLogMetadataSerde's: MetadataRecordSerde's frame, then the flexible message


def framed_record(data, framed) -> tuple:
    """A record of a framed family drawn: (value bytes, the values kafka-python laid out)."""
    _, _, path = framed
    spec, struct = _spec(path), _struct(path)
    version = data.draw(st.sampled_from(list(_versions(spec))))
    values = _draw_struct(data.draw, struct, version)
    body = struct.encode(values, version=version, compact=True, tagged=True)
    body = _unknown_tags(data.draw, body, struct, version, values)
    body = _reshape(data.draw, body, struct, version, values)
    return _uv(1) + _uv(spec["apiKey"]) + _uv(version) + body, values


@pytest.mark.parametrize("framed", FRAMED, ids=lambda f: f[2].stem)
@SETTINGS
@given(st.data())
def test_framed_records_drawn(framed, data):
    schema, topic, _ = framed
    value, values = framed_record(data, framed)
    _check(schema, topic, None, value, values)


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: f"{p[0]}:{p[1].stem[:-3]}")
@SETTINGS
@given(st.data())
def test_coordinator_records_drawn(pair, data):
    topic = pair[0]
    key, value, values, key_data, record_type = coordinator_record(data, pair)
    _check(COORDINATORS[topic][0], topic, key, value, values, key_data, record_type=record_type)


def coordinator_record(data, pair) -> tuple:
    """A coordinator's record drawn: (key bytes, value bytes, the value's values, the key's, its record type)."""
    topic, kpath, vpath = pair
    kspec, vspec = _spec(kpath), _spec(vpath)
    flexible = int(vspec["flexibleVersions"].rstrip("+")) if vspec["flexibleVersions"] != "none" else 1 << 15
    record_type = data.draw(st.sampled_from(list(_versions(kspec))))
    kstruct, vstruct = _struct(kpath), _struct(vpath)
    key_data = _draw_struct(data.draw, kstruct, record_type)
    key = _i16(record_type) + kstruct.encode(key_data, version=record_type)
    version = data.draw(st.sampled_from(list(_versions(vspec))))
    values = _draw_struct(data.draw, vstruct, version)
    flex = version >= flexible
    body = vstruct.encode(values, version=version, compact=flex, tagged=flex)
    if flex:
        body = _unknown_tags(data.draw, body, vstruct, version, values)
        body = _reshape(data.draw, body, vstruct, version, values)
    return key, _i16(version) + body, values, key_data, record_type


CONTROLS = {2: "LeaderChangeMessage", 3: "SnapshotHeaderRecord", 4: "SnapshotFooterRecord", 5: "KRaftVersionRecord",
            6: "VotersRecord"}  # fmt: skip  # ControlRecordType's ids; ControlRecordUtils reads each at version 0


@pytest.mark.parametrize("control_type", sorted(CONTROLS), ids=CONTROLS.get)
@SETTINGS
@given(st.data())
def test_control_records_drawn(control_type, data):
    """KRaft's control records (raft_control): the value is the message at version 0 with no version before
    it (ControlRecordUtils), laid out by kafka-python from the clients' specs; tagged sections reshaped too."""
    from kfmt.payloads import decode_control

    path = CLIENT_MESSAGES / f"{CONTROLS[control_type]}.json"
    struct = _struct(path)
    values = _draw_struct(data.draw, struct, 0)
    body = struct.encode(values, version=0, compact=True, tagged=True)
    body = _reshape(data.draw, _unknown_tags(data.draw, body, struct, 0, values), struct, 0, values)
    for backend in BACKENDS:
        d = decode_control(control_type, body, backend=backend)
        assert (d.type, d.version) == (CONTROLS[control_type], 0)
        _same(d.data, values)
        codec = _codec("raft_control", backend)
        assert codec.encode(codec.decode(body, control_type=control_type), control_type=control_type) == body, backend


@SETTINGS
@given(st.data())
def test_producer_snapshots_drawn(data):
    """A producer-state snapshot file (ProducerStateManager): int16 version 1, then ProducerSnapshot v1 laid out
    by kafka-python from storage's spec (its Crc a uint32, which kafka-python lacks: the entries are laid out from
    the spec without it, and the CRC-32C of them, by the crc32c package, put before them as 4 bytes big-endian)."""
    import crc32c
    from kafka.protocol.schemas.fields.struct import StructField

    spec = _spec(TREE / "storage/src/main/resources/message/ProducerSnapshot.json")
    assert [f["name"] for f in spec["fields"]] == ["Crc", "ProducerEntries"] and spec["fields"][0]["type"] == "uint32"
    struct = StructField({**spec, "fields": spec["fields"][1:]})
    values = _draw_struct(data.draw, struct, 1)
    entries = struct.encode(values, version=1)
    crc = crc32c.crc32c(entries)
    snapshot = _i16(1) + crc.to_bytes(4, "big") + entries
    for backend in BACKENDS:
        codec = _codec("producer_snapshot", backend)
        decoded = codec.decode(snapshot)
        _same(decoded, values)
        assert decoded.crc == crc and codec.encode(decoded) == snapshot, backend


def test_every_shipped_message_schema_is_drawn():
    """The tests above cover every message schema kfmt ships (generated/messages), and every spec of the framed
    families: each apiKey the pinned tree has is drawn."""
    from pathlib import Path

    shipped = {p.name for p in (Path(__file__).parent.parent / "generated" / "messages").iterdir() if p.is_dir()}
    drawn = {schema for schema, _, _ in FRAMED} | {"raft_control", "producer_snapshot"}
    drawn |= {
        s for topic in COORDINATORS for s in (COORDINATORS[topic][0], COORDINATORS[topic][0].replace("_value", "_key"))
    }
    assert shipped - {"__pycache__", "jvm"} == drawn  # (jvm: the payload decoders' index, Payloads.java)
    for folder, glob in ((METADATA, "*Record.json"), (REMOTE, "Remote*.json")):
        keys = {_spec(p).get("apiKey") for p in folder.glob(glob)} - {None}
        framed = {_spec(p).get("apiKey") for _, _, p in FRAMED if p.parent == folder}
        assert keys == (framed | {_spec(p)["apiKey"] for p in FIELDLESS if p.parent == folder}) - {None}, folder


@pytest.mark.parametrize("path", FIELDLESS, ids=lambda p: p.stem)
@SETTINGS
@given(st.data())
def test_fieldless_records_drawn(path, data):
    """A KRaft record whose spec has no fields (NoOpRecord, EndTransactionRecord): the frame, then only a tagged
    section, laid out by hand: unknown tags in a drawn order, a tag possibly twice."""
    spec = _spec(path)
    version = data.draw(st.sampled_from(list(_versions(spec))))
    tags = data.draw(st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=3)), max_size=4))
    body = _uv(len(tags)) + b"".join(_uv(t) + _uv(len(b)) + b for t, b in tags)
    value = _uv(1) + _uv(spec["apiKey"]) + _uv(version) + body
    for backend in BACKENDS:
        d = decode_payload("__cluster_metadata", None, value, backend=backend).value.data
        assert d.tagged_fields == tags, backend
        codec = _codec("kraft_metadata", backend)
        assert codec.encode(codec.decode(value)) == value, backend
