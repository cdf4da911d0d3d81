"""`kfmt import-kafka-spec` (#25, first slices): Kafka's JSON message specs lowered into the schema language,
compiled by the generator, and held to bytes written by hand from the Java serde rules with kafka-python's
codecs (``CoordinatorRecordSerde`` writes a record's value as ``short version`` then the message's fields
in spec order, each present in its ``versions``; classic strings are int16-prefixed, bytes int32-prefixed,
arrays int32-counted).

The specs under tests/fixtures/kafka are Apache Kafka's, laid out as in its source tree (commit in
tests/fixtures/kafka/COMMIT), Apache License 2.0 (see NOTICE)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import generated_package
from kfmt.runtime.errors import CodecError

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "kafka"


def _imported(tmp_path, *names):
    out = tmp_path / "schemas"
    r = subprocess.run([sys.executable, "-m", "kfmt", "import-kafka-spec", *[str(next(TREE.rglob(f"{n}.json"))) for n in names],
                        "--out", str(out)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {p.name: p.read_text() for p in out.glob("*.yaml")}


def _codecs():
    from kafka.protocol.schemas.fields.codecs.types import Bytes, Int16, Int32, Int64, String

    return Bytes, Int16, Int32, Int64, String()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_offset_commit_value_every_classic_version(tmp_path, version):
    Bytes, Int16, Int32, Int64, S = _codecs()
    want = Int16.encode(version) + Int64.encode(41)
    want += Int32.encode(7) if version >= 3 else b""  # leaderEpoch: "3+"
    want += S.encode("meta") + Int64.encode(1700000000000)
    want += Int64.encode(1700000600000) if version == 1 else b""  # expireTimestamp: "1"
    with generated_package(tmp_path, _imported(tmp_path, "OffsetCommitValue"), "ocv_gen") as module:
        model = module("offset_commit_value.model")
        for backend in ("python", "construct"):
            b = module(f"offset_commit_value.{backend}")
            v = b.decode(want)
            assert (v.version, v.offset, v.metadata, v.commit_timestamp) == (version, 41, "meta", 1700000000000)
            assert v.leader_epoch == (7 if version >= 3 else -1)  # absent: the spec's default
            assert v.expire_timestamp == (1700000600000 if version == 1 else -1)
            assert b.encode(v) == want  # byte-exact round trip
        assert model.OffsetCommitValue.__doc__ is not None


def test_group_metadata_value_v3_with_members(tmp_path):
    Bytes, Int16, Int32, Int64, S = _codecs()
    members = [("m-1", None, "c-1", "/10.0.0.1"), ("m-2", "i-2", "c-2", "/10.0.0.2")]
    want = Int16.encode(3) + S.encode("consumer") + Int32.encode(5) + S.encode("range") + S.encode("m-1")
    want += Int64.encode(1700000000000) + Int32.encode(len(members))
    for mid, inst, client, host in members:
        want += S.encode(mid) + S.encode(inst) + S.encode(client) + S.encode(host)
        want += Int32.encode(300000) + Int32.encode(45000) + Bytes.encode(b"\x00\x01sub") + Bytes.encode(b"\x00\x01as")
    with generated_package(tmp_path, _imported(tmp_path, "GroupMetadataValue"), "gmv_spec_gen") as module:
        for backend in ("python", "construct"):
            b = module(f"group_metadata_value.{backend}")
            v = b.decode(want)
            assert (v.protocol_type, v.generation, v.protocol, v.leader, v.current_state_timestamp) == (
                "consumer", 5, "range", "m-1", 1700000000000)  # fmt: skip
            assert [(m.member_id, m.group_instance_id, m.rebalance_timeout) for m in v.members] == [
                ("m-1", None, 300000), ("m-2", "i-2", 300000)]  # fmt: skip
            assert b.encode(v) == want


def test_keys_and_names_as_kafka_spells_them(tmp_path):
    files = _imported(tmp_path, "OffsetCommitKey", "GroupMetadataKey")
    text = files["offset_commit_key.yaml"]
    assert "commit 1eb7644" not in text and "Apache License 2.0" in text  # the header names the source file
    assert "orig_name: group" in text and "orig_name: partition" in text
    Bytes, Int16, Int32, Int64, S = _codecs()
    key = Int16.encode(1) + S.encode("g") + S.encode("orders") + Int32.encode(3)
    with generated_package(tmp_path, files, "keys_gen") as module:
        k = module("offset_commit_key.python").decode(key)
        assert (k.version, k.group, k.topic, k.partition) == (1, "g", "orders", 3)
        assert module("group_metadata_key.python").decode(Int16.encode(2) + S.encode("g")).group == "g"


def test_quirks_and_refusals(tmp_path):
    """`//` comments (also after a value, and `//` inside a string kept), camelCase names, a spec whose every
    version is flexible refused with one line, missing files a usage error."""
    from generator.frontends.kafka_spec import SpecError, lower

    spec = """// header
    { "type": "data", "name": "TinyRecord", // trailing comment
      "validVersions": "0-2", "flexibleVersions": "none",
      "fields": [ { "name": "brokerURL", "type": "string", "versions": "1-2", "about": "a // b" },
                  { "name": "isFenced", "type": "bool", "versions": "0+", "default": "true" } ] }"""
    s = lower(spec, "tiny.json")
    f = s["structs"]["tiny_record"]["fields"]
    assert [x["name"] for x in f] == ["version", "broker_url", "is_fenced"]
    assert f[1]["if"] == {"field": "version", "ge": 1} and f[1]["doc"] == "a // b" and f[2]["default"] is True
    ints = spec.replace('"type": "bool", "versions": "0+", "default": "true"', '"type": "[]int32", "versions": "0+"')
    ints = lower(ints, "tiny.json")["structs"]["tiny_record"]
    assert ints["fields"][2]["type"] == {"array": "int32"} and ints["fields"][2]["count"] == "int32"
    tagged = spec.replace('"default": "true"', '"default": "true", "tag": 0, "taggedVersions": "0+"')
    with pytest.raises(SpecError, match="a tagged field in a classic version"):
        lower(tagged, "tiny.json")
    (tmp_path / "tagged.json").write_text(tagged)
    r = subprocess.run([sys.executable, "-m", "kfmt", "import-kafka-spec", str(tmp_path / "tagged.json")],
                       capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "TinyRecord.isFenced" in r.stderr
    r = subprocess.run([sys.executable, "-m", "kfmt", "import-kafka-spec", str(tmp_path / "nope.json")],
                       capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert r.returncode == 2 and "no such file" in r.stderr


def _uv(n: int) -> bytes:
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

    return UnsignedVarInt32.encode(n)


@pytest.mark.parametrize("tagged", [b"", b"\x05\x03abc"], ids=["no-tags", "an-unknown-tag"])
def test_kraft_records_flexible_with_their_frame(tmp_path, tagged):
    """KRaft metadata records (every version flexible), as MetadataRecordSerde writes them: frame version (1),
    apiKey and version as unsigned varints, then the data with compact strings and a tagged-field section
    (a count, then tag, size, bytes each). Kept raw, an unknown tag still round-trips byte-exact."""
    import uuid

    from kafka.protocol.schemas.fields.codecs.types import UUID, Int16, String

    section = _uv(1 if tagged else 0) + tagged
    tid = uuid.UUID("7d8c2b9a-1c2e-4f3a-9b8c-0d1e2f3a4b5c")
    topic = _uv(1) + _uv(2) + _uv(0) + String().encode("orders", compact=True) + UUID.encode(tid) + section
    feature = _uv(1) + _uv(12) + _uv(0) + String().encode("metadata.version", compact=True) + Int16.encode(20)
    feature += section
    files = _imported(tmp_path, "TopicRecord", "FeatureLevelRecord")
    assert "TopicRecord v0 (flexible versions)" in files["topic_record.yaml"]
    with generated_package(tmp_path, files, "kraft_gen") as module:
        for backend in ("python", "construct"):
            t = module(f"topic_record.{backend}").decode(topic)
            assert (t.api_key, t.version, t.name, t.topic_id) == (2, 0, "orders", tid.bytes)
            assert t.tagged_fields == ([(5, b"abc")] if tagged else [])
            assert module(f"topic_record.{backend}").encode(t) == topic
            f = module(f"feature_level_record.{backend}").decode(feature)
            assert (f.api_key, f.name, f.feature_level) == (12, "metadata.version", 20)
            assert module(f"feature_level_record.{backend}").encode(f) == feature


def _spec_text(name="Probe", versions="0-1", fields=None, **top) -> str:
    import json

    spec = {"type": "data", "name": name, "validVersions": versions, "flexibleVersions": "none",
            "fields": fields if fields is not None else [{"name": "A", "type": "int32", "versions": "0+"}], **top}  # fmt: skip
    return json.dumps(spec)


MALFORMED = [
    ("a name that is a path", _spec_text(name="../../../escaped"), "is not a plain identifier"),
    ("a name Python reserves", _spec_text(name="None"), "is not a plain identifier"),
    ("a field without name", _spec_text(fields=[{"type": "int32", "versions": "0+"}]), "field name None"),
    ("validVersions a number", _spec_text(versions=5), "is not N, N+, N-M or none"),
    ("validVersions high to low", _spec_text(versions="5-2"), "low to high"),
    ("digits that are not ASCII", _spec_text(versions="\u0665"), "is not N, N+, N-M or none"),
    ("an apiKey of 2^40", _spec_text(apiKey=2**40), "apiKey"),
    ("a struct holding itself", _spec_text(fields=[{"name": "S", "type": "S", "versions": "0+",
                                                     "fields": [{"name": "T", "type": "S", "versions": "0+"}]}]),
     "holds itself"),  # fmt: skip
    ("a list as a default", _spec_text(fields=[{"name": "A", "type": "int32", "versions": "0+", "default": [1]}]),
     "is not a single value"),
    ("a bool default maybe", _spec_text(fields=[{"name": "A", "type": "bool", "versions": "0+", "default": "maybe"}]),
     "is not a bool value"),
    ("a uuid default zzz", _spec_text(fields=[{"name": "A", "type": "uuid", "versions": "0+", "default": "zzz"}]),
     "is not a uuid value"),
    ("a NaN float default", _spec_text(fields=[{"name": "A", "type": "float64", "versions": "0+", "default": "NaN"}]),
     "is not a float64 value"),
]  # fmt: skip


@pytest.mark.parametrize("what,text,error", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_specs_are_one_located_line(tmp_path, what, text, error):
    """#34: each malformed spec is one line naming the file, exit 2; nothing is written, inside --out or
    outside it."""
    spec = tmp_path / "in" / "Probe.json"
    spec.parent.mkdir()
    spec.write_text(text)
    out = tmp_path / "a" / "b" / "out"
    r = subprocess.run([sys.executable, "-m", "kfmt", "import-kafka-spec", str(spec), "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, (what, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(spec) in lines[0] and error in lines[0], (what, r.stderr)
    assert not list(tmp_path.rglob("*.yaml"))


def test_a_message_imported_alone_refuses_versions_it_was_not_lowered_for(tmp_path):
    """#34 item 10: OffsetCommitValue imported on its own is lowered for its classic versions 0-3; version 4 (its
    flexible version) or 7 (none) was read with the 0-3 layout. Now the record's version is checked once read,
    in decoding and encoding, by every backend: a located error, as Kafka's reader refuses an unsupported version."""
    Bytes, Int16, Int32, Int64, S = _codecs()
    body = Int64.encode(41) + Int32.encode(7) + S.encode("meta") + Int64.encode(1700000000000)
    with generated_package(tmp_path, _imported(tmp_path, "OffsetCommitValue"), "ocv_guard") as module:
        for backend in ("python", "construct"):
            b = module(f"offset_commit_value.{backend}")
            assert b.decode(Int16.encode(3) + body).version == 3
            for version in (4, 7):
                with pytest.raises(CodecError, match=f"OffsetCommitValue is not defined for version {version} "
                                                     r"\(this schema has it for \(version <= 3\)\)"):  # fmt: skip
                    b.decode(Int16.encode(version) + body)
            v = b.decode(Int16.encode(3) + body)
            v.version = 9
            with pytest.raises(CodecError, match="not defined for version 9"):
                b.encode(v)
    # a KRaft record alone: MetadataRecordSerde's frame (frame version 1, apiKey 3, version: unsigned varints)
    with generated_package(tmp_path / "pr", _imported(tmp_path / "pr", "PartitionRecord"), "pr_guard") as module:
        for backend in ("python", "construct"):
            with pytest.raises(CodecError, match=r"PartitionRecord is not defined for version 9 \(this schema has it"):
                module(f"partition_record.{backend}").decode(b"\x01\x03\x09" + bytes(40))
