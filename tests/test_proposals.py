"""Format proposals: vectors, both backends, explicit selection only, and a new format from one file."""

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

import kfmt
from conftest import backends, check_case, load_vectors
from kfmt.codec.formats import BACKENDS, format_ids, get_format

PROPOSALS = ["kip82_header_wrapper", "v2_no_record_attributes", "v3_no_record_attributes", "kip98_draft",
             "enriched_metadata_draft"]  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent


def test_all_proposals_are_generated_and_explicit():
    assert set(PROPOSALS) <= set(format_ids())
    for fid in PROPOSALS:
        assert not get_format(fid).AUTO_DETECT


@pytest.mark.parametrize("fid", ["v2_no_record_attributes", "v3_no_record_attributes"])
def test_kip931_spec_vectors(fid):
    for vec in load_vectors(fid):
        for _, mod in backends(fid):
            check_case(mod, vec["bytes"], vec["batch"], vec["records"])


def _records(fid, n=5):
    int_keys = fid == "kip82_header_wrapper"
    out = []
    for i in range(n):
        headers = (
            []
            if fid == "kip98_draft"
            else [((7 if int_keys else "trace"), b"x" * i), ((8 if int_keys else "t2"), None)][: i % 3]
        )
        out.append(kfmt.Record(key=None if i % 4 == 0 else b"key%d" % i, value=None if i == 3 else b"v" * (i * 30),
                               headers=headers, timestamp=1700000000000 + i))  # fmt: skip
    return out


def _codecs(fid):
    mod = get_format(fid)
    if fid == "kip82_header_wrapper":
        return ["none"]
    return ["none", "gzip", "snappy", "lz4"] + (["zstd"] if mod.MAGIC >= 2 and mod.ROLE == "batch" else [])


@pytest.mark.parametrize("fid", PROPOSALS)
def test_round_trip_both_backends(fid):
    recs = _records(fid)
    for codec in _codecs(fid):
        outs = {be: kfmt.encode_batch(recs, format=fid, codec=codec, base_offset=40, backend=be) for be in BACKENDS}
        assert len(set(outs.values())) == 1, (codec, outs)  # every backend writes the same bytes
        for be in BACKENDS:
            got = [r for b in kfmt.read_batches(outs[BACKENDS[0]], format=fid, backend=be) for r in b.records]
            assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in got] == [
                (40 + i, r.key, r.value, r.headers, r.timestamp) for i, r in enumerate(recs)
            ], (codec, be)


@pytest.mark.parametrize("fid", PROPOSALS)
def test_prefixes_truncated_and_garbage_rejected_cleanly(fid):
    data = kfmt.encode_batch(_records(fid, 3)[1:2], format=fid)  # one entry (message formats write one per record)
    for _, mod in backends(fid):
        for n in range(0, len(data), 3):
            with pytest.raises(kfmt.TruncatedError):
                mod.decode_from(data[:n], 0, n)
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0xFF
        with pytest.raises(kfmt.CodecError):
            mod.decode(bytes(bad))


def test_proposal_bytes_are_not_misread_as_kafka():
    data = kfmt.encode_batch([kfmt.Record(value=b"abc", timestamp=1)], format="kip82_header_wrapper")
    with pytest.raises(kfmt.CodecError):
        list(kfmt.read_batches(data))  # magic 2: read as a real v2 batch, which it is not
    assert [r.value for b in kfmt.read_batches(data, format="kip82_header_wrapper") for r in b.records] == [b"abc"]


def test_kip82_tombstone_keeps_headers():
    mod = get_format("kip82_header_wrapper")
    m = mod.Message(offset=5, key=b"k", value=b"", headers=[(1, b"x")], is_tombstone=True, timestamp=1)
    d = mod.decode(mod.encode(m))
    assert d.is_tombstone and d.headers == [(1, b"x")] and d.value == b""


NEW_FORMAT = """\
doc: A made-up format for this test - fixed header, records with a varint length and a CRC-32C each.
doc_ref: tests/test_proposals.py
magic: 9
imports: [common]
root: batch
structs:
  batch:
    role: batch
    fields:
      - {name: base_offset, type: int64, default: 0}
      - {name: size, type: int32, derive: {length_of: magic}}
      - {name: magic, type: int8, const: 9}
      - name: attributes
        type: int8
        bits: [{name: codec, mask: 7, enum: codec}]
      - {name: num_records, type: int16, derive: {count_of: records}}
      - {name: records, type: {array: record}, count: num_records, compressed_by: codec}
  record:
    role: record
    fields:
      - {name: length, type: uvarint, derive: {length_of: offset_delta}}
      - {name: offset_delta, type: uvarint, derive: {delta_of: offset, base: base_offset}}
      - {name: timestamp, type: int64}
      - {name: key, type: varbytes}
      - {name: value, type: varbytes}
      - {name: headers, type: {array: header}, count: uvarint}
      - {name: record_crc, type: uint32, derive: {crc32c: offset_delta}}
"""


def test_adding_a_format_is_adding_one_file(tmp_path, monkeypatch):
    from generator.driver import generate

    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "common.yaml").write_text((ROOT / "schemas" / "common.yaml").read_text())
    (schemas / "my_format.yaml").write_text(textwrap.dedent(NEW_FORMAT))
    out = tmp_path / "gen_pkg"
    generate(schemas, out)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("gen_pkg.my_format")
    con = importlib.import_module("gen_pkg.my_format.construct")
    recs = [kfmt.Record(key=b"k", value=b"v" * i, headers=[("h", b"1")], timestamp=1000 + i) for i in range(20)]
    for codec in ("none", "zstd"):
        b = mod.Batch(records=recs, codec=codec, base_offset=7)
        data = mod.encode(b)
        assert con.encode(b) == data
        d = mod.decode(data)
        assert d == con.decode(data)
        assert [(r.offset, r.key, r.value, r.headers) for r in d.records] == [
            (7 + i, r.key, r.value, r.headers) for i, r in enumerate(recs)
        ]
    from kfmt.tools.diff import workload_rows

    rows = workload_rows([mod, get_format("kafka_v2")], batch_sizes=[1, 10], key_size=10, value_size=100, headers=1)
    assert rows[0]["overhead"]["my_format"] > 0 and rows[1]["overhead"]["kafka_v2"] > 0
    sys.modules.pop("gen_pkg", None)
