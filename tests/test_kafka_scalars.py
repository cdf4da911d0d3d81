"""Kafka's message encoding in the schema language (#25, first parts): ``bool``, ``float64`` and ``uuid``
fields and compact lengths and counts (N + 1, 0 for null), compiled for every backend and held to
kafka-python's codecs (an independent encoder: ``kafka.protocol.schemas.fields.codecs.types`` Boolean,
Float64, UUID, Int16, Int32, String and Bytes with ``compact=True``, UnsignedVarInt32)."""

from __future__ import annotations

import math
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import kfmt
from conftest import generated_package, native_of, same_outcomes

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    d = tmp_path_factory.mktemp("scalars")
    text = (ROOT / "tests" / "fixtures" / "kafka_scalars.yaml").read_text()
    with generated_package(d, {"kafka_scalars.yaml": text}, "scalars_gen") as module:
        yield (module("kafka_scalars.python"), module("kafka_scalars.construct"), module("kafka_scalars.model"),
               d / "scalars_gen" / "kafka_scalars")  # fmt: skip


TAGS = [("a", 0.5), ("ü" * 70, -2.0)]  # a key past 127 bytes: a two-byte compact length


def _kafka_python(version, topic_id: uuid.UUID, is_internal, ratio, partition, eligible=None, name="n", blob=b"",
                  tags=(), extras=None, legacy=None) -> bytes:  # fmt: skip
    from kafka.protocol.schemas.fields.codecs.types import UUID, Boolean, Bytes, Float64, Int16, Int32, String
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32 as UV

    out = Int16.encode(version) + UUID.encode(topic_id) + Boolean.encode(is_internal) + Float64.encode(ratio)
    out += Int32.encode(partition)
    out += Boolean.encode(eligible) if version >= 1 else b""

    def elems(items):
        return b"".join(String().encode(k, compact=True) + Float64.encode(w) for k, w in items)

    out += String().encode(name, compact=True) + Bytes.encode(blob, compact=True) + UV.encode(len(tags) + 1)
    out += elems(tags)
    out += UV.encode(0) if extras is None else UV.encode(len(extras) + 1) + elems(extras)  # compact: 0 is null
    return out + (Int32.encode(-1) if legacy is None else Int32.encode(len(legacy)) + elems(legacy))


CASES = [
    (0, uuid.UUID("0f6b2c4e-8d3a-4c1e-9b7a-5e2d1c0b9a88"), True, 0.25, 7, None, "orders", b"\x00\x01", TAGS, (), TAGS),
    (1, uuid.UUID(int=0), False, -1e300, -1, False, None, b"", (), None, None),
    (
        3,
        uuid.UUID(int=2**128 - 1),
        True,
        math.inf,
        2**31 - 1,
        True,
        "x" * 200,
        bytes(range(256)) * 70,
        TAGS * 80,
        TAGS,
        (),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=["v0", "v1-zero-uuid-null-name", "v3-edges-long"])
def test_bytes_match_kafka_python_both_ways(gen, case):
    py, con, model, _ = gen
    version, tid, internal, ratio, part, eligible, name, blob, tags, extras, legacy = case
    want = _kafka_python(*case)

    def objs(items):
        return None if items is None else [model.Tag(key=k, weight=w) for k, w in items]

    kw = dict(version=version, topic_id=tid.bytes, is_internal=internal, ratio=ratio, partition=part, name=name,
              blob=blob, tags=objs(tags), extras=objs(extras), legacy=objs(legacy))  # fmt: skip
    if eligible is not None:
        kw["eligible"] = eligible
    v = model.Value(**kw)
    assert py.encode(v) == want and con.encode(v) == want
    for backend in (py, con):
        d = backend.decode(want)
        got = (d.version, d.topic_id, d.is_internal, d.ratio, d.partition)
        assert got == (version, tid.bytes, internal, ratio, part)
        assert type(d.is_internal) is bool and type(d.ratio) is float and type(d.topic_id) is bytes
        assert d.eligible == (eligible if version >= 1 else True)  # absent: its default
        assert (d.name, bytes(d.blob), [(t.key, t.weight) for t in d.tags]) == (name, blob, list(tags))
        for got, sent in ((d.extras, extras), (d.legacy, legacy)):  # null arrays stay null, empty ones empty
            assert (None if got is None else [(t.key, t.weight) for t in got]) == (None if sent is None else list(sent))


def test_uuid_objects_and_defaults(gen):
    py, con, model, _ = gen
    tid = uuid.uuid4()
    assert py.encode(model.Value(topic_id=tid, name="n", blob=b"", tags=[])) == _kafka_python(0, tid, False, 0.5, -1)
    v = model.Value(name=None, blob=b"", tags=[])  # extras and legacy: None, null arrays
    assert v.topic_id == bytes(16) and v.ratio == 0.5 and v.is_internal is False  # Kafka's defaults: ZERO_UUID
    assert py.decode(py.encode(v)).topic_id == bytes(16)


@pytest.mark.parametrize("bad", [b"short", b"x" * 17, "not bytes", None])
def test_a_uuid_of_the_wrong_size_is_refused_not_padded(gen, bad):
    py, con, model, _ = gen
    with pytest.raises(kfmt.InvalidValueError):
        py.encode(model.Value(topic_id=bad, name="n", blob=b"", tags=[]))


def test_a_non_zero_byte_reads_true_as_kafka_reads_it(gen):
    py, con, _, _ = gen
    data = bytearray(_kafka_python(0, uuid.UUID(int=5), True, 1.0, 1))
    data[18] = 2  # Kafka: readByte() != 0
    assert py.decode(bytes(data)).is_internal is True and con.decode(bytes(data)).is_internal is True
    with pytest.raises(kfmt.TruncatedError):
        py.decode(bytes(data[:-1]))


@pytest.mark.named_backends
def test_native_decodes_and_encodes_them_in_c(tmp_path_factory):
    """The C decoder reads bool, float64, uuid and compact lengths itself (no hand-over to the python backend),
    to the python backend's values, and every damaged variant to its exact error; the C encoder writes
    kafka-python's bytes, and hands what it does not take as is (an int for a float, a uuid.UUID) to python."""
    d = tmp_path_factory.mktemp("scalars_native")
    text = (ROOT / "tests" / "fixtures" / "kafka_scalars.yaml").read_text()
    with generated_package(d, {"kafka_scalars.yaml": text}, "scalars_nat") as module:
        nat, py = native_of(module, "kafka_scalars"), module("kafka_scalars.python")
        model = module("kafka_scalars.model")
        for case in CASES:
            want = _kafka_python(*case)
            c = nat._c.decode_from(want, 0, len(want), kfmt.DecodeOptions())
            assert c is not None and c[1] == len(want)  # decoded in C
            assert c[0].as_dict() == py.decode(want).as_dict()
            assert type(c[0].is_internal) is bool and type(c[0].ratio) is float and type(c[0].topic_id) is bytes
            assert nat._c.encode(c[0]) == want  # encoded in C
        assert same_outcomes(nat, py, _kafka_python(*CASES[0])) > 500
        v = nat.decode(_kafka_python(*CASES[1]))
        assert v.name is None  # compact 0: null
        v.ratio, v.topic_id = 1, uuid.UUID(int=7)  # an int for a float64, a uuid.UUID: python's to convert
        assert nat._c.encode(v) is None and nat.encode(v) == py.encode(v)
        assert model.Value is type(c[0])
    assert "| `topic_id` | uuid |" in (d / "scalars_nat/kafka_scalars/FIELDS.md").read_text()


@pytest.mark.parametrize(
    "field,message",
    [
        ("{name: f, type: bool, default: 1}", "'default' of a bool field must be true or false"),
        ("{name: f, type: float64, default: x}", "'default' of a float64 field must be a number"),
        ("{name: f, type: uuid, default: 0}", "'default' of a uuid field must be left out"),
        ("{name: f, type: bool, bits: [{name: b, mask: 1}]}", "a bool field cannot have bits, derive or const"),
        ("{name: f, type: bytes, length: uuid}", "uuid"),
    ],
)
def test_misuse_is_a_located_schema_error(tmp_path, field, message):
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "x.yaml").write_text(f"doc: x\nroot: s\nstructs:\n  s:\n    fields:\n      - {field}\n")
    r = subprocess.run([sys.executable, "-m", "kfmt", "generate", "--schemas", str(schemas), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "x.yaml:" in r.stderr and message in r.stderr, r.stderr


def test_a_null_or_short_compact_length(gen):
    """0 is null (a nullable string reads None; a non-nullable bytes field refuses it); a length past the end
    is truncation."""
    py, con, model, _ = gen
    head = _kafka_python(0, uuid.UUID(int=1), False, 0.0, 0)[: 2 + 16 + 1 + 8 + 4]
    nulls = b"\x00" + b"\xff\xff\xff\xff"  # extras (compact) and legacy (int32) null
    d = py.decode(head + b"\x00" + b"\x01" + b"\x01" + nulls)
    assert d.name is None and bytes(d.blob) == b"" and d.tags == [] and d.extras is None and d.legacy is None
    assert con.decode(head + b"\x00" + b"\x01" + b"\x01" + nulls).name is None
    for backend in (py, con):
        with pytest.raises(kfmt.CodecError):
            backend.decode(head + b"\x02n" + b"\x00" + b"\x01" + nulls)  # bytes may not be null
        with pytest.raises(kfmt.CodecError):
            backend.decode(head + b"\x02n" + b"\x01" + b"\x00" + nulls)  # tags may not be null
        with pytest.raises(kfmt.TruncatedError):
            backend.decode(head + b"\x80\x01abc")


NESTED = """doc: GroupMetadataValue's member layout (Kafka's group-coordinator GroupMetadataValue.json, v0-v3)
root: group_metadata_value
structs:
  group_metadata_value:
    fields:
      - {name: version, type: int16, default: 3}
      - {name: protocol_type, type: string, length: int16}
      - {name: members, type: {array: member_metadata}, count: int32}
  member_metadata:
    fields:
      - {name: member_id, type: string, length: int16}
      - {name: group_instance_id, type: string, length: int16, nullable: true, if: {field: version, ge: 3}}
      - {name: rebalance_timeout, type: int32, if: {field: version, ge: 1}, default: 0}
      - {name: session_timeout, type: int32}
      - {name: subscription, type: bytes, length: int32}
"""


@pytest.mark.parametrize("version", [0, 1, 3])
def test_nested_structs_see_their_containers_version(tmp_path, version):
    """An array element's fields present by the enclosing value's version (GroupMetadataValue's members:
    groupInstanceId from v3, rebalanceTimeout from v1), in the python and Construct backends, against bytes
    built with kafka-python's Int16/Int32/String/Bytes codecs in the spec's field order."""
    from kafka.protocol.schemas.fields.codecs.types import Bytes, Int16, Int32, String

    with generated_package(tmp_path, {"gmv.yaml": NESTED}, "gmv_gen") as module:
        model = module("gmv.model")
        backends = [module(f"gmv.{b}") for b in ("python", "construct")]
    want = Int16.encode(version) + String().encode("consumer") + Int32.encode(2)
    for mid, inst in (("m-1", None), ("m-2", "i-2")):
        want += String().encode(mid) + (String().encode(inst) if version >= 3 else b"")
        want += (Int32.encode(60000) if version >= 1 else b"") + Int32.encode(45000) + Bytes.encode(b"\x00\x01")
    members = [model.MemberMetadata(member_id=m, group_instance_id=i, rebalance_timeout=60000, session_timeout=45000,
                                    subscription=b"\x00\x01") for m, i in (("m-1", None), ("m-2", "i-2"))]  # fmt: skip
    value = model.GroupMetadataValue(version=version, protocol_type="consumer", members=members)
    for b in backends:
        assert b.encode(value) == want, b.__name__
        got = b.decode(want)
        assert [(m.member_id, m.group_instance_id, m.rebalance_timeout) for m in got.members] == [
            (m, i if version >= 3 else None, 60000 if version >= 1 else 0) for m, i in (("m-1", None), ("m-2", "i-2"))
        ]


RANGED = """doc: a field present in versions 1 to 2 only, as Kafka's versions 1-2
root: r
structs:
  r:
    fields:
      - {name: version, type: int16}
      - {name: middle, type: int32, if: {field: version, ge: 1, le: 2}, default: -1}
      - {name: last, type: int8}
"""


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_version_range_is_both_bounds(tmp_path, version):
    from kafka.protocol.schemas.fields.codecs.types import Int8, Int16, Int32

    want = Int16.encode(version) + (Int32.encode(77) if 1 <= version <= 2 else b"") + Int8.encode(5)
    with generated_package(tmp_path, {"ranged.yaml": RANGED}, "ranged_gen") as module:
        model = module("ranged.model")
        for b in (module("ranged.python"), module("ranged.construct")):
            assert b.encode(model.R(version=version, middle=77, last=5)) == want, b.__name__
            assert b.decode(want).middle == (77 if 1 <= version <= 2 else -1)
        c_code = (tmp_path / "ranged_gen" / "ranged" / "_native.c").read_text()
        assert "&&" in c_code  # the native decoder tests both bounds too


def test_a_condition_with_two_lower_bounds_is_refused(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "x.yaml").write_text(RANGED.replace("ge: 1, le: 2", "ge: 1, gt: 2"))
    r = subprocess.run([sys.executable, "-m", "kfmt", "generate", "--schemas", str(tmp_path / "schemas"), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "a range (ge or gt with le or lt)" in r.stderr and "x.yaml:" in r.stderr, r.stderr
