"""`kfmt diff` and `kfmt explain`: sizes by encoding, the seed's Space Comparison table, structure, byte maps."""

import json

import kfmt
from kfmt.codec.formats import get_format
from kfmt.log.measure import attribute, byte_labels
from kfmt.tools.cli import main
from kfmt.tools.diff import structure, workload_rows


def test_seed_space_comparison_table_exactly():
    """Seed 000 (KIP-98 draft): 1 KB messages, 100-byte keys -> old 34*n, new 45 + 17*n, by encoding."""
    rows = workload_rows(["kafka_v1", "kip98_draft"], batch_sizes=[1, 3, 10, 50, 100], key_size=100, value_size=1000)
    got = {r["batch_size"]: (r["overhead"]["kafka_v1"], r["overhead"]["kip98_draft"]) for r in rows}
    assert got == {1: (34, 62), 3: (102, 96), 10: (340, 215), 50: (1700, 895), 100: (3400, 1745)}


def test_spec_section7_totals():
    """Spec section 7: null key, equal timestamps; v0/v1/v2 totals measured by encoding."""
    expect = {(10, 1): (36, 44, 78), (10, 10): (360, 440, 231), (10, 100): (3600, 4400, 1797),
              (100, 1): (126, 134, 170), (100, 10): (1260, 1340, 1151), (1000, 1): (1026, 1034, 1070)}  # fmt: skip
    for (v, n), sizes in expect.items():
        rows = workload_rows(["kafka_v0", "kafka_v1", "kafka_v2"], batch_sizes=[n], key_size=-1, value_size=v)
        o = rows[0]["overhead"]
        assert tuple(o[f] + n * v for f in ("kafka_v0", "kafka_v1", "kafka_v2")) == sizes, (v, n)


def test_kip931_saves_a_byte_per_record():
    rows = workload_rows(["kafka_v2", "v2_no_record_attributes"], batch_sizes=[1, 100], key_size=10, value_size=40)
    for r in rows:
        assert r["overhead"]["kafka_v2"] - r["overhead"]["v2_no_record_attributes"] == r["batch_size"]


def test_diff_json_cli(capsys):
    assert main(["diff", "kafka_v2", "kip98_draft", "--workload", "--json", "--batch-sizes", "1,3", "--key-size", "100",
                 "--value-size", "1000"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0] == {"batch_size": 1, "key_size": 100, "value_size": 1000,
                              "overhead": {"kafka_v2": 71, "kip98_draft": 62}}  # fmt: skip


def test_structure_statuses():
    rows = {(r.level, r.field): r for r in structure(["kafka_v2", "v2_no_record_attributes"])}
    assert rows["record", "attributes"].status == ["", "removed"]
    assert rows["batch", "attributes"].status == ["", "retyped"]  # bit 7 added
    assert rows["record", "key"].status == ["", ""]
    v1 = {(r.level, r.field): r for r in structure(["kafka_v1", "kafka_v2"])}
    assert v1["record", "headers"].status[1] == "added" and v1["record", "crc"].status[1] == "removed"


def test_diff_markdown_and_plot(tmp_path, capsys):
    stem = tmp_path / "overhead"
    assert main(["diff", "kafka_v1", "kafka_v2", "kip82_header_wrapper", "--markdown", "--headers", "1",
                 "--plot", str(stem)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "### record level" in out and "| batch size |" in out
    assert (tmp_path / "overhead.png").stat().st_size > 1000 and (tmp_path / "overhead.svg").exists()


def test_diff_corpus(tmp_path, capsys):
    d = tmp_path / "t-0"
    d.mkdir()
    recs = [kfmt.Record(key=b"k%d" % i, value=b"value %d" % i, headers=[("h", b"x")], timestamp=i) for i in range(20)]
    (d / f"{0:020d}.log").write_bytes(kfmt.encode_batch(recs, codec="gzip"))
    assert main(["diff", "kafka_v2", "kafka_v1", "kip82_header_wrapper", "--corpus", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "bytes by schema field" in out and "records.headers" in out


def test_byte_labels_cover_every_byte_and_sum():
    m = get_format("kafka_v2")
    data = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"abc", headers=[("h", b"x")], timestamp=5)] * 3)
    labels = byte_labels(m, data)
    assert None not in labels
    assert labels[0] == "base_offset" and labels[17] == "crc" and labels[61] == "records.length"
    assert sum(attribute(m, data).values()) == len(data)
    gz = kfmt.encode_batch([kfmt.Record(value=b"abc" * 50, timestamp=5)] * 3, codec="gzip")
    assert "records (compressed)" in attribute(m, gz)


def test_explain_cli(tmp_path, capsys):
    assert main(["explain", "kip98_draft", "--out", str(tmp_path / "k")]) == 0
    assert (tmp_path / "k.svg").exists() and (tmp_path / "k.png").exists()
    f = tmp_path / "x.log"
    f.write_bytes(kfmt.encode_batch([kfmt.Record(value=b"abc", timestamp=1)], magic=1))
    assert main(["explain", "--bytes", str(f)]) == 0
    out = capsys.readouterr().out
    assert "crc" in out and "value [payload]" in out


def test_field_counts_are_the_byte_labels_counted():
    """kfmt.log.measure.label_counts (the totals of diff, explain's corpus figures and the Spark comparison)
    counts each field's bytes over claimed intervals; it equals byte_labels' per-byte labels, counted, on entries
    of every format (records with keys, values, headers and nulls; compressed and not)."""
    from collections import Counter

    import kfmt
    from kfmt.log.measure import _fit, byte_labels, label_counts
    from kfmt.log.scanner import iter_entries

    recs = [kfmt.Record(key=b"k%d" % i if i % 3 else None, value=b"v" * (i * 7), headers=[("h", b"x")] * (i % 2),
                        timestamp=1000 + i) for i in range(6)]  # fmt: skip
    n = 0
    for fid in kfmt.format_ids():
        mod = kfmt.get_format(fid)
        for codec in ("none", "gzip"):
            try:
                blob = kfmt.encode_batch(_fit(mod, recs), format=fid, codec=codec)
            except kfmt.CodecError:
                continue
            for pos, end, _ in iter_entries(blob):
                entry = blob[pos:end]
                assert label_counts(mod, entry) == Counter(x or "(unattributed)" for x in byte_labels(mod, entry)), fid
                n += 1
    assert n > 20
