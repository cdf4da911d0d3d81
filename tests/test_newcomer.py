"""A newcomer's first hour (issue 46): what is odd said as Kafka would say it, stdin named, output that saves the
reader time. Each test here failed on the code before that issue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kfmt

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "real-broker"
KRAFT = FIXTURES / "kraft-3.7-cp-ksql-txn-ItumelengMogase"


def _kfmt(*args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "kfmt", *map(str, args)], capture_output=True, text=True, input=stdin,
                          cwd=cwd or ROOT)  # fmt: skip


def _segment(n=3, **kw):
    return kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=1) for i in range(n)], **kw)


@pytest.mark.skipif(not KRAFT.is_dir(), reason="needs ../shared/fixtures")
def test_an_orphaned_index_is_noted_as_kafkas_log_loader_would_delete_it():
    """The KRaft fixture's __cluster_metadata-0 has a 1,081-entry .index and no .log: Kafka's log loader deletes
    such an orphan at start-up ("Found an orphaned index file"). A note, not a problem: a real broker left it."""
    r = _kfmt("dump", "--summary", KRAFT / "__cluster_metadata-0")
    assert r.returncode == 0, r.stderr
    assert "00000000000000000000.index: note: an orphaned index: no 00000000000000000000.log" in r.stderr


def test_two_topics_with_one_topic_id_are_a_problem(tmp_path):
    for name in ("a-0", "b-0"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(_segment())
        (tmp_path / name / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    r = _kfmt("dump", "--summary", tmp_path)
    assert r.returncode == 1 and "topic id AAAAAAAAAAAAAAAAAAAAAA is the id of 2 topics (a, b)" in r.stderr, r.stderr


def test_a_tar_archive_is_named_as_one_by_every_reader(tmp_path):
    import tarfile

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(_segment())
    for name in ("logs.tar.gz", "logs.bin"):  # by its name, and by its bytes (ustar) under another name
        with tarfile.open(tmp_path / name, "w:gz") as t:
            t.add(part.parent, arcname="logs")
        r = _kfmt("dump", tmp_path / name)
        assert r.returncode == 2 and "a tar archive, not a Kafka log file" in r.stderr, r.stderr
        with pytest.raises(ValueError, match="a tar archive, not a Kafka log file"):
            kfmt.read_arrow(str(tmp_path / name))


def test_stdin_can_be_named_its_topic_partition():
    seg = next(FIXTURES.glob("zk-2.8.0-snappy-seanorth/__consumer_offsets-16/00000000000000000000.log"), None)
    if seg is None:
        pytest.skip("needs ../shared/fixtures")
    data = seg.read_bytes().decode("latin-1")
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--records", "--stdin-as", "__consumer_offsets-16",
                        "--topic", "__consumer_offsets", "-"], input=seg.read_bytes(), capture_output=True)  # fmt: skip
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert "(topic __consumer_offsets, partition 16)" in out and "key GroupMetadataKey v2" in out  # decoded by name
    assert data  # the bytes went in whole
    bad = _kfmt("dump", "--stdin-as", "../x-1", "-", stdin="")
    assert bad.returncode == 2 and "not a Kafka topic name" in bad.stderr


def test_dump_summary_ends_with_totals_and_a_verdict(tmp_path):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(_segment(5))
    r = _kfmt("dump", "--summary", tmp_path)
    last = r.stdout.rstrip().splitlines()[-1]
    assert (
        r.returncode == 0
        and last.startswith("total: 1 log(s), 1 segment(s), 1 batches, 5 records, ")
        and (last.endswith("CRCs checked, 0 index file(s) checked; no problems"))
    ), last
    data = bytearray(_segment(5))
    data[-1] ^= 1
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(bytes(data))
    r = _kfmt("dump", "--summary", tmp_path)
    assert r.returncode == 1 and r.stdout.rstrip().endswith("1 problem(s), each reported on stderr"), r.stdout
    r = _kfmt("dump", "--summary", "--json", tmp_path)
    assert json.loads(r.stdout.splitlines()[-1])["total"]["problems"] == 1


def test_a_misspelt_option_is_one_short_line_naming_the_closest():
    from kfmt.table.options import READ_OPTIONS, check_options

    with pytest.raises(ValueError) as e:
        check_options({"on_corupt": "skip"}, READ_OPTIONS, "read")
    line = str(e.value)
    assert "did you mean on_corrupt?" in line and len(line) < 200 and "\n" not in line
    listed = _kfmt("spark", "options", "read")
    assert listed.returncode == 0 and any(x.startswith("on_corrupt ") for x in listed.stdout.splitlines())


def test_diff_corpus_shows_formats_side_by_side_with_a_difference(tmp_path):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(_segment(20))
    r = _kfmt("diff", "kafka_v1", "kafka_v2", "--corpus", tmp_path, "--corpus-codecs", "none")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(x for x in lines if x.startswith("format "))
    assert "vs kafka_v1" in head
    v2 = next(x for x in lines if x.startswith("kafka_v2 "))
    assert "(-" in v2 and "%)" in v2  # one v2 batch against 20 v1 messages: smaller, in bytes and percent
    assert any(x.startswith("kafka_v1 field") and "kafka_v2 field" in x for x in lines)  # fields side by side


def test_explain_bytes_shows_each_fields_value_and_writes_where_out_says(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(kfmt.encode_batch([kfmt.Record(key=b"k", value=b"hello", timestamp=1700000000000)],
                                      base_offset=42))  # fmt: skip
    r = _kfmt("explain", "--bytes", seg)
    got = {ln[59:91].rstrip(): ln[92:] for ln in r.stdout.splitlines() if ln.strip()}  # field: value
    assert got["base_offset"] == "42" and got["magic"] == "2" and got["base_timestamp"] == "1700000000000"
    assert got["records.value"] == "length 5" and got["records.value [payload]"] == "b'hello'"
    assert got["batch_length"].endswith("bytes follow") and got["crc"].startswith("0x")
    elsewhere = tmp_path / "elsewhere"
    r = _kfmt("explain", "kafka_v2", "--out", f"{tmp_path / 'diagrams'}/", cwd=elsewhere.mkdir() or elsewhere)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "diagrams" / "kafka_v2-layout.svg").is_file() and not (elsewhere / "out").exists()
