"""Kafka's message-encoding scalars in the schema language (#25, first part): ``bool``, ``float64`` and
``uuid`` fields, compiled for every backend and held to kafka-python's codecs (an independent encoder:
``kafka.protocol.schemas.fields.codecs.types`` Boolean, Float64, UUID, Int16, Int32)."""

from __future__ import annotations

import importlib
import math
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import kfmt

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    from generator.driver import generate

    d = tmp_path_factory.mktemp("scalars")
    schemas = d / "schemas"
    schemas.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "kafka_scalars.yaml", schemas / "kafka_scalars.yaml")
    generate(schemas, d / "scalars_gen")
    sys.path.insert(0, str(d))
    try:
        yield (importlib.import_module("scalars_gen.kafka_scalars.python"),
               importlib.import_module("scalars_gen.kafka_scalars.construct"),
               importlib.import_module("scalars_gen.kafka_scalars.model"), d / "scalars_gen" / "kafka_scalars")  # fmt: skip
    finally:
        sys.path.remove(str(d))


def _kafka_python(version, topic_id: uuid.UUID, is_internal, ratio, partition, eligible=None) -> bytes:
    from kafka.protocol.schemas.fields.codecs.types import UUID, Boolean, Float64, Int16, Int32

    out = Int16.encode(version) + UUID.encode(topic_id) + Boolean.encode(is_internal) + Float64.encode(ratio)
    out += Int32.encode(partition)
    return out + (Boolean.encode(eligible) if version >= 1 else b"")


CASES = [
    (0, uuid.UUID("0f6b2c4e-8d3a-4c1e-9b7a-5e2d1c0b9a88"), True, 0.25, 7, None),
    (1, uuid.UUID(int=0), False, -1e300, -1, False),
    (3, uuid.UUID(int=2**128 - 1), True, math.inf, 2**31 - 1, True),
]


@pytest.mark.parametrize("case", CASES, ids=["v0", "v1-zero-uuid", "v3-edges"])
def test_bytes_match_kafka_python_both_ways(gen, case):
    py, con, model, _ = gen
    version, tid, internal, ratio, part, eligible = case
    want = _kafka_python(*case)
    kw = dict(version=version, topic_id=tid.bytes, is_internal=internal, ratio=ratio, partition=part)
    if eligible is not None:
        kw["eligible"] = eligible
    v = model.Value(**kw)
    assert py.encode(v) == want and con.encode(v) == want
    for backend in (py, con):
        d = backend.decode(want)
        assert (d.version, d.topic_id, d.is_internal, d.ratio, d.partition) == (
            version,
            tid.bytes,
            internal,
            ratio,
            part,
        )
        assert type(d.is_internal) is bool and type(d.ratio) is float and type(d.topic_id) is bytes
        assert d.eligible == (eligible if version >= 1 else True)  # absent: its default


def test_uuid_objects_and_defaults(gen):
    py, con, model, _ = gen
    tid = uuid.uuid4()
    assert py.encode(model.Value(topic_id=tid)) == _kafka_python(0, tid, False, 0.5, -1)
    v = model.Value()
    assert v.topic_id == bytes(16) and v.ratio == 0.5 and v.is_internal is False  # Kafka's defaults: ZERO_UUID
    assert py.decode(py.encode(v)).topic_id == bytes(16)


@pytest.mark.parametrize("bad", [b"short", b"x" * 17, "not bytes", None])
def test_a_uuid_of_the_wrong_size_is_refused_not_padded(gen, bad):
    py, con, model, _ = gen
    with pytest.raises(kfmt.InvalidValueError):
        py.encode(model.Value(topic_id=bad))


def test_a_non_zero_byte_reads_true_as_kafka_reads_it(gen):
    py, con, _, _ = gen
    data = bytearray(_kafka_python(0, uuid.UUID(int=5), True, 1.0, 1))
    data[18] = 2  # Kafka: readByte() != 0
    assert py.decode(bytes(data)).is_internal is True and con.decode(bytes(data)).is_internal is True
    with pytest.raises(kfmt.TruncatedError):
        py.decode(bytes(data[:-1]))


def test_native_says_it_does_not_lower_them_yet(gen):
    *_, folder = gen
    text = (folder / "native.py").read_text()
    assert "does not lower value.topic_id: uuid fields yet" in text and "raise ImportError" in text
    assert "| `topic_id` | uuid |" in (folder / "FIELDS.md").read_text()


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
