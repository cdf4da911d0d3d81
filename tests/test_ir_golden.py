"""Golden IR tests: the typed IR (generator/ir) of one small fixture schema per language feature, printed
after each pass, and of every format in schemas/ after the last. A generator change shows up here as a
diff naming the first pass whose output changed. After a deliberate change, regenerate the goldens with
``KFMT_UPDATE_GOLDEN=1 pytest tests/test_ir_golden.py`` and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator import ir
from generator.ir.printer import show
from generator.loader import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "ir" / "fixtures"
GOLDEN = ROOT / "tests" / "ir" / "golden"
SCHEMAS = ROOT / "schemas"
UPDATE = os.environ.get("KFMT_UPDATE_GOLDEN") == "1"


def _by_pass(path: Path, schema_dir: Path) -> str:
    schema = load(path, schema_dir)
    return "".join(f"## after {name}\n{show(ir.build(schema, until=name))}" for name, _ in ir.PASSES)


def _check(name: str, text: str) -> None:
    golden = GOLDEN / f"{name}.ir"
    if UPDATE:
        golden.write_text(text)
    want = golden.read_text()
    if text == want:
        return
    sections = lambda t: dict(s.split("\n", 1) for s in t.split("## ")[1:])  # noqa: E731
    got, exp = sections(text), sections(want)
    first = next((k for k in exp if got.get(k) != exp[k]), "the set of passes")
    pytest.fail(f"{golden.relative_to(ROOT)}: the IR differs, first {first}\n--- want\n{want}\n--- got\n{text}")


FIXTURE_FILES = sorted(p.stem for p in FIXTURES.glob("*.yaml"))


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_ir_after_each_pass(name):
    _check(name, _by_pass(FIXTURES / f"{name}.yaml", FIXTURES))


@pytest.mark.parametrize("name", sorted(p.stem for p in SCHEMAS.glob("*.yaml") if p.stem != "common"))
def test_format_ir(name):
    schema = load(SCHEMAS / f"{name}.yaml", SCHEMAS)
    _check(f"format-{name}", f"## after {ir.PASSES[-1][0]}\n{show(ir.build(schema))}")


def test_every_feature_has_a_fixture_and_every_golden_a_source():
    """One fixture per language feature (each node kind appears in some fixture's IR); no stale goldens."""
    text = "".join(_by_pass(FIXTURES / f"{f}.yaml", FIXTURES) for f in FIXTURE_FILES)
    for marker in ("int8", "uint32", "zigzag varint32", "zigzag varint64", " varint32", "blob(text", "rest-4",
                   "max 64", "count from", "count rest", "size int32", "enum ", ": flag const 1", "null marker",
                   "if (", "if extra?", "crc32c over", "(trailing)", "last(", "first(", "max(", "delta of",
                   " ? ", "numbered by index", "compressed by", "nested headers", "accounted by", "wrapper ",
                   "view ", "logical ", "params "):  # fmt: skip
        assert marker in text, f"no fixture exercises {marker!r}"
    expected = {f"{f}.ir" for f in FIXTURE_FILES} | {
        f"format-{p.stem}.ir" for p in SCHEMAS.glob("*.yaml") if p.stem != "common"
    }
    assert {p.name for p in GOLDEN.glob("*.ir")} == expected


def test_ir_nodes_are_frozen_and_hold_no_target_text():
    """Nodes cannot be changed after a pass made them, and no string in the IR is code: every string is a
    schema name, an enum name, a doc, a file name or a fixed keyword."""
    import dataclasses

    schema = load(SCHEMAS / "kafka_v2.yaml", SCHEMAS)
    f = ir.build(schema)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.structs[0].name = "x"  # type: ignore[misc]
    strings: list[str] = []

    def walk(x):
        if isinstance(x, str):
            strings.append(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for fl in dataclasses.fields(x):
                if fl.name not in ("doc", "doc_ref", "file", "fingerprint", "orig_name"):
                    walk(getattr(x, fl.name))
        elif isinstance(x, tuple):
            for i in x:
                walk(i)

    walk(f)
    assert strings and all(s.replace("_", "").isalnum() for s in strings), [s for s in strings if not s.isidentifier()]


def test_show_ir_prints_the_golden_ir(capsys):
    from kfmt.tools.cli import main

    assert main(["generate", "--show-ir", "kafka_v2"]) == 0
    want = (GOLDEN / "format-kafka_v2.ir").read_text().split("\n", 1)[1]
    assert capsys.readouterr().out == want
    assert main(["generate", "--show-ir", "kafka_v2", "--until", "resolve"]) == 0
    assert "budget" not in capsys.readouterr().out  # before the budget pass, no array has one


def test_field_tables_give_kafkas_offsets():
    """``FIELDS`` (generated from the IR's layout pass) against the offsets Kafka's source declares:
    DefaultRecordBatch (BASE_OFFSET_OFFSET 0 ... RECORDS_COUNT_OFFSET 57, RECORDS_OFFSET 61) and
    LegacyRecord after the 12-byte log overhead (CRC 12, MAGIC 16, ATTRIBUTES 17, v1 TIMESTAMP 18, key
    size at 18 in v0 and 26 in v1)."""
    import kfmt.codec.formats as f

    v2 = {x.name: x.offset for x in f.get_format("kafka_v2").FIELDS["batch"]}
    assert v2 == {"base_offset": 0, "batch_length": 8, "partition_leader_epoch": 12, "magic": 16, "crc": 17,
                  "attributes": 21, "last_offset_delta": 23, "base_timestamp": 27, "max_timestamp": 35,
                  "producer_id": 43, "producer_epoch": 51, "base_sequence": 53, "num_records": 57,
                  "records": 61}  # fmt: skip
    v1 = {x.name: x.offset for x in f.get_format("kafka_v1").FIELDS["message"]}
    v0 = {x.name: x.offset for x in f.get_format("kafka_v0").FIELDS["message"]}
    assert (v1["crc"], v1["magic"], v1["attributes"], v1["timestamp"], v1["key"]) == (12, 16, 17, 18, 26)
    assert (v0["crc"], v0["magic"], v0["attributes"], v0["key"]) == (12, 16, 17, 18)
    assert f.get_format("kafka_v2").LEVELS == {"batch": "batch", "record": "record", "header": "header"}
    assert f.get_format("kafka_v1").LEVELS == {"batch": None, "record": "message", "header": None}
    widths = {x.name: x.width for x in f.get_format("kafka_v2").FIELDS["record"]}
    assert widths["attributes"] == 1 and widths["key"] is None  # a varint-prefixed blob has no fixed width


def test_carries_says_what_each_format_can_hold():
    """``CARRIES`` (made by the generator from the roles' contract) drives what encode_batch refuses: v0
    has no timestamps (KIP-32 came with v1), only v2 carries headers, transaction markers and producer
    state, and only the legacy formats have compressed wrappers."""
    import kfmt.codec.formats as f

    assert f.get_format("kafka_v0").CARRIES == {"wrappers"}
    assert f.get_format("kafka_v1").CARRIES == {"timestamp", "timestamp_type", "wrappers"}
    assert f.get_format("kafka_v2").CARRIES == {"timestamp", "timestamp_type", "headers", "control", "producer_state"}
