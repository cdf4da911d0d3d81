"""#25, the schema language's message-encoding features: arrays of values, switches (by a field read before,
one of an enclosing struct, or a schema parameter), and tagged-field sections. Every case decodes bytes
written with kafka-python's protocol codecs (an independent encoder of Kafka's types: Int32, compact
strings and arrays as unsigned varints holding N + 1, UUIDs as 16 bytes) in the Python and Construct
backends, and re-encodes them byte-exact. Tagged sections follow Kafka's RawTaggedFieldWriter and
MessageDataGenerator rules: an unsigned varint count, then per field its tag and size (unsigned varints) and
its bytes, in increasing tag order, a field written only when it is not its default."""

from __future__ import annotations

import uuid

import pytest

from conftest import generated_package, native_of, same_outcomes


def _backends(module, fmt: str):
    """(name, codec) for every backend of a generated format: python, construct, and native where a C
    compiler is here (its extension compiled for the test)."""
    import shutil

    out = [(b, module(f"{fmt}.{b}")) for b in ("python", "construct")]
    return out + ([("native", native_of(module, fmt))] if shutil.which("gcc") else [])


def _k():
    from kafka.protocol.schemas.fields.codecs.types import UUID, Int16, Int32, String, UnsignedVarInt32

    return Int16, Int32, String(), UUID, UnsignedVarInt32


def _uv(n: int) -> bytes:
    return _k()[4].encode(n)


ARRAYS = """
doc: arrays of values
root: rec
structs:
  rec:
    fields:
      - {name: replicas, type: {array: int32}, count: int32}
      - {name: names, type: {array: string}, count: compact, length: compact}
      - {name: dirs, type: {array: uuid}, count: compact, nullable: true}
"""


def test_arrays_of_values(tmp_path):
    Int16, Int32, S, U, _ = _k()
    ids = [uuid.uuid4(), uuid.uuid4()]
    want = Int32.encode(2) + Int32.encode(1) + Int32.encode(3)
    want += _uv(3) + S.encode("a", compact=True) + S.encode("bc", compact=True)
    want += _uv(3) + U.encode(ids[0]) + U.encode(ids[1])
    empty = Int32.encode(0) + _uv(1) + _uv(0)  # no replicas, no names, null dirs
    with generated_package(tmp_path, {"arr.yaml": ARRAYS}, "arr_gen") as module:
        for _, codec in _backends(module, "arr"):
            v = codec.decode(want)
            assert (v.replicas, v.names, v.dirs) == ([1, 3], ["a", "bc"], [i.bytes for i in ids])
            assert codec.encode(v) == want
            v = codec.decode(empty)
            assert (v.replicas, v.names, v.dirs) == ([], [], None)
            assert codec.encode(v) == empty


SWITCH = """
doc: a switch on a field, with a case reading its container's version
root: frame
structs:
  frame:
    fields:
      - {name: api_key, type: uvarint}
      - {name: version, type: uvarint}
      - name: record
        type: {switch: api_key, cases: {2: topic, 12: feature, 13: feature}}
  topic:
    fields:
      - {name: name, type: string, length: compact}
      - {name: extra, type: int32, if: {field: version, ge: 1}, default: -1}
  feature:
    fields:
      - {name: level, type: int16}
"""


def test_switch_on_a_field(tmp_path):
    Int16, Int32, S, _, _ = _k()
    topic_v1 = _uv(2) + _uv(1) + S.encode("t", compact=True) + Int32.encode(7)
    topic_v0 = _uv(2) + _uv(0) + S.encode("t", compact=True)
    feature = _uv(13) + _uv(0) + Int16.encode(5)
    with generated_package(tmp_path, {"sw.yaml": SWITCH}, "sw_gen") as module:
        model = module("sw.model")
        for _, codec in _backends(module, "sw"):
            v = codec.decode(topic_v1)
            assert type(v.record) is model.Topic and (v.record.name, v.record.extra) == ("t", 7)
            assert codec.decode(topic_v0).record.extra == -1  # absent below version 1: the default
            v = codec.decode(feature)
            assert type(v.record) is model.Feature and v.record.level == 5
            for raw in (topic_v1, topic_v0, feature):
                assert codec.encode(codec.decode(raw)) == raw
            with pytest.raises(Exception, match=r"no layout for api_key 3 \(known: 2, 12, 13\)"):
                codec.decode(_uv(3) + _uv(0) + Int16.encode(5))
            v.api_key = 2  # a Feature where api_key says Topic: refused, not written as whatever fits
            with pytest.raises(Exception, match="record must be a Topic when api_key is 2, not Feature"):
                codec.encode(v)


PARAMS = """
doc: a value whose layout its key chose (a schema parameter)
root: coordinator_value
params: {record_type: int16}
structs:
  coordinator_value:
    fields:
      - {name: version, type: int16}
      - name: value
        type: {switch: record_type, cases: {0: offset_value, 1: offset_value, 2: group_value}}
  offset_value:
    fields:
      - {name: offset, type: int64}
      - {name: leader_epoch, type: int32, if: {field: version, ge: 3}, default: -1}
  group_value:
    fields:
      - {name: protocol_type, type: string, length: int16}
"""


def test_switch_on_a_parameter(tmp_path):
    Int16, Int32, S, _, _ = _k()
    from kafka.protocol.schemas.fields.codecs.types import Int64

    offset = Int16.encode(3) + Int64.encode(41) + Int32.encode(7)
    group = Int16.encode(0) + S.encode("consumer")
    with generated_package(tmp_path, {"pv.yaml": PARAMS}, "pv_gen") as module:
        for _, codec in _backends(module, "pv"):
            v = codec.decode(offset, record_type=1)
            assert (v.version, v.value.offset, v.value.leader_epoch) == (3, 41, 7)
            assert codec.encode(v, record_type=1) == offset
            assert codec.decode(group, record_type=2).value.protocol_type == "consumer"
            with pytest.raises(Exception, match="no layout for record_type 5"):
                codec.decode(offset, record_type=5)
            with pytest.raises(TypeError):
                codec.decode(offset)  # the parameter is required, never guessed


TAGGED = """
doc: a struct with a tagged-field section (PartitionChangeRecord's shape)
root: change
structs:
  change:
    fields:
      - {name: version, type: int8}
      - {name: partition_id, type: int32}
      - {name: isr, type: {array: int32}, count: compact, nullable: true, tag: 0}
      - {name: leader, type: int32, default: -2, tag: 1}
      - {name: rack, type: string, length: compact, tag: 3}
      - {name: dirs, type: {array: uuid}, count: compact, nullable: true, tag: 8, if: {field: version, ge: 1}}
      - {name: tagged_fields, type: tagged_fields}
"""


def _section(*tags: tuple[int, bytes]) -> bytes:
    return _uv(len(tags)) + b"".join(_uv(t) + _uv(len(d)) + d for t, d in tags)


def test_tagged_fields(tmp_path):
    Int16, Int32, S, U, _ = _k()
    d = uuid.uuid4()
    head = bytes([1]) + Int32.encode(0)
    isr = _uv(3) + Int32.encode(5) + Int32.encode(6)
    cases = {
        "leader only (a real PartitionChangeRecord)": head + _section((1, Int32.encode(-1))),
        "none": head + _section(),
        "every kind, an unknown tag between": head
        + _section(
            (0, isr),
            (1, Int32.encode(7)),
            (3, S.encode("r1", compact=True)),
            (5, b"\xab\xcd"),
            (8, _uv(2) + U.encode(d)),
        ),  # fmt: skip
    }
    # dirs is a v1+ tag: at v0 Kafka's generated reader throws "Tag 8 is not valid for version 0"
    v0_dirs = bytes([0]) + Int32.encode(0) + _section((8, _uv(2) + U.encode(d)))
    with generated_package(tmp_path, {"tg.yaml": TAGGED}, "tg_gen") as module:
        for b, codec in _backends(module, "tg"):
            for name, raw in cases.items():
                assert codec.encode(codec.decode(raw)) == raw, (b, name)
            v = codec.decode(cases["every kind, an unknown tag between"])
            assert (v.isr, v.leader, v.rack, v.dirs, v.tagged_fields) == (
                [5, 6],
                7,
                "r1",
                [d.bytes],
                [(5, b"\xab\xcd")],
            )
            v = codec.decode(cases["none"])
            assert (v.isr, v.leader, v.rack, v.dirs, v.tagged_fields) == (None, -2, "", None, [])
            with pytest.raises(Exception, match="tag 8 .dirs. is not valid at this version"):
                codec.decode(v0_dirs)
            v = codec.decode(cases["none"])
            v.leader, v.isr = 3, [1]  # set by the user: written, in tag order
            assert codec.encode(v) == head + _section((0, _uv(2) + Int32.encode(1)), (1, Int32.encode(3)))
            v2 = codec.decode(head + _section((1, Int32.encode(7)), (0, isr)))  # any order, as Kafka reads
            assert (v2.isr, v2.leader) == ([5, 6], 7)
            with pytest.raises(Exception, match=r"tag 1 \(leader\) holds 5 bytes, its value 4"):
                codec.decode(head + _section((1, Int32.encode(7) + b"\x00")))
            v.tagged_fields = [(1, b"xx")]
            with pytest.raises(Exception, match="tag 1 is written twice"):
                codec.encode(v)


@pytest.mark.named_backends
def test_native_decodes_them_in_c_with_the_python_backends_errors(tmp_path):
    """Arrays of values, switches (on a field, on a parameter), string parameters and tagged sections are
    decoded and encoded by the C code itself (decode_from and encode answer a value, not None: no hand-over),
    to the python backend's values and bytes; every prefix and flipped byte gives the python backend's exact
    value or error."""
    import shutil

    from kafka.protocol.schemas.fields.codecs.types import Int64

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    Int16, Int32, S, U, _ = _k()
    d = uuid.uuid4()
    isr = _uv(3) + Int32.encode(5) + Int32.encode(6)
    tags = _section(
        (0, isr), (1, Int32.encode(7)), (3, S.encode("r1", compact=True)), (5, b"\xab"), (8, _uv(2) + U.encode(d))
    )
    cases = [
        ("arr", ARRAYS, Int32.encode(2) + Int32.encode(1) + Int32.encode(3) + _uv(2) + S.encode("bc", compact=True)
         + _uv(2) + U.encode(d), {}),
        ("sw", SWITCH, _uv(2) + _uv(1) + S.encode("t", compact=True) + Int32.encode(7), {}),
        ("pv", PARAMS, Int16.encode(3) + Int64.encode(41) + Int32.encode(7), {"record_type": 1}),
        ("pv", PARAMS, Int16.encode(0) + S.encode("consumer"), {"record_type": 2}),
        ("tg", TAGGED, bytes([1]) + Int32.encode(0) + tags, {}),
    ]  # fmt: skip
    import kfmt

    for i, (fmt, schema, raw, kw) in enumerate(cases):
        with generated_package(tmp_path / str(i), {f"{fmt}.yaml": schema}, f"nat{i}_gen") as module:
            nat, py = native_of(module, fmt), module(f"{fmt}.python")
            c = nat._c.decode_from(raw, 0, len(raw), kfmt.DecodeOptions(), *kw.values())
            assert c is not None and c[1] == len(raw), fmt  # decoded in C
            assert c[0].as_dict() == py.decode(raw, **kw).as_dict()
            assert nat.encode(c[0], **kw) == raw and nat._c.encode(c[0], *kw.values()) == raw  # encoded in C
            assert same_outcomes(nat, py, raw, **kw) == 4 * len(raw)


@pytest.mark.parametrize(
    "body, message",
    [
        ("  s:\n    fields:\n      - {name: a, type: string, length: int16}\n"
         "      - {name: b, type: {switch: a, cases: {1: t}}}\n", "'a' is not an integer field"),
        ("  s:\n    fields:\n      - {name: b, type: {switch: a, cases: {1: t}}}\n"
         "      - {name: a, type: int8}\n", "comes after the switch"),
        ("  s:\n    fields:\n      - {name: a, type: int8}\n      - {name: b, type: {switch: a, cases: {1: u}}}\n"
         "  u:\n    repr: tuple\n    fields:\n      - {name: x, type: int8}\n", "must have repr 'object'"),
        ("  s:\n    fields:\n      - {name: a, type: int8, tag: 1}\n", "needs a field of type tagged_fields"),
        ("  s:\n    fields:\n      - {name: a, type: int8, tag: 1}\n      - {name: b, type: int8, tag: 1}\n"
         "      - {name: tf, type: tagged_fields}\n", "share tag 1"),
        ("  s:\n    repr: value\n    fields:\n      - {name: a, type: int8}\n      - {name: b, type: int8}\n",
         "repr 'value' is for a struct of one field"),
        ("  s:\n    fields:\n      - {name: a, type: bytes, length: int16}\n    views:\n"
         "      v: {parse: a, as: t, on_error: skip}\n", "'on_error' must be fail or raw, not 'skip'"),
        ("  s:\n    fields:\n      - {name: a, type: bytes, length: int16}\n      - {name: v_error, type: int8}\n"
         "    views:\n      v: {parse: a, as: t, on_error: raw}\n", "keeps the error in v_error, which is a field"),
        ("  s:\n    fields:\n      - {name: a, type: int64, enum: e}\n",
         "'enum' is for an integer field of at most 32 bits, not int64"),
        ("  s:\n    fields:\n      - {name: a, type: int8, enum: e, default: 1}\n", "an enum field cannot have"),
    ],
)  # fmt: skip
def test_located_errors(tmp_path, body, message):
    from generator.driver import generate
    from generator.loader.spec import SchemaError

    text = "doc: bad\nroot: s\nstructs:\n" + body + "  t:\n    fields:\n      - {name: x, type: int8}\n"
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "bad.yaml").write_text(text)
    with pytest.raises(SchemaError, match=message) as e:
        generate(tmp_path / "s", tmp_path / "out")
    assert "bad.yaml:" in str(e.value)


def test_trailing_must_be_exact_or_ignore(tmp_path):
    from generator.driver import generate
    from generator.loader.spec import SchemaError

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "bad.yaml").write_text("doc: bad\nroot: s\ntrailing: skip\nstructs:\n  s:\n    fields:\n"
                                             "      - {name: x, type: int8}\n")  # fmt: skip
    with pytest.raises(SchemaError, match=r"bad.yaml:3 trailing: 'trailing' must be exact or ignore, not 'skip'"):
        generate(tmp_path / "s", tmp_path / "out")
