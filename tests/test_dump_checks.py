"""`kfmt dump` never calls damaged input clean; every file of a log directory is read by its kind."""

import json
import random
import struct

import pytest

import kfmt
from kfmt.log.txn import transactions_of_files
from kfmt.logdir.files import producer_snapshot
from kfmt.tools.cli import main
from kfmt.tools.synth import SynthConfig, synth


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("dumpc")
    synth(d, SynthConfig(seed=3, topics=("orders", "clicks"), partitions=1, records=500, segment_bytes=48 * 1024,
                         legacy=False))  # fmt: skip
    return d


def _seg(corpus):
    return sorted(corpus.glob("orders-0/*.log"))[0]


def test_clean_corpus_is_clean(corpus, capsys):
    assert main(["dump", str(corpus)]) == 0
    assert "problem" not in capsys.readouterr().err


def test_damaged_length_and_garbage_are_reported(corpus, tmp_path, capsys):
    data = bytearray(_seg(corpus).read_bytes())
    (first,) = struct.unpack_from(">i", data, 8)
    struct.pack_into(">i", data, 12 + first + 8, 0x7FFF0000)
    bad = tmp_path / "orders-0"
    bad.mkdir()
    (bad / _seg(corpus).name).write_bytes(bytes(data))
    assert main(["dump", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"at byte {12 + first}" in err and f"{len(data) - 12 - first} byte(s) not read" in err
    noise = tmp_path / "x.log"
    noise.write_bytes(random.Random(1).randbytes(5000))
    assert main(["dump", str(noise)]) == 1
    assert "5000 byte(s)" in capsys.readouterr().err
    trunc = tmp_path / "t.log"
    trunc.write_bytes(_seg(corpus).read_bytes()[:-7])
    # a log's last batch cut short is one being written (#24): reported as such, not data, not damage
    assert main(["dump", "--json", str(trunc)]) == 0
    got = capsys.readouterr()
    assert not [x for x in got.out.splitlines() if '"problem"' in x]
    assert "not yet written completely" in got.err and "left out" in got.err


def test_corrupt_partition_does_not_stop_the_others(corpus, tmp_path, capsys):
    import shutil

    d = tmp_path / "logs"
    shutil.copytree(corpus, d)
    seg = sorted((d / "clicks-0").glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert main(["dump", "--json", str(d)]) == 1
    objs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {o["topic"] for o in objs if o["type"] == "batch"} == {"clicks", "orders"}
    assert any(o["type"] == "problem" and o["kind"] == "corrupt_batch" for o in objs)
    # later segments of the damaged partition are still read
    later = sorted((d / "clicks-0").glob("*.log"))[1:]
    assert later and {o["file"] for o in objs if o["type"] == "batch"} >= {str(p) for p in later}


def test_offsets_going_backwards_are_reported(tmp_path, capsys):
    a = kfmt.encode_batch([kfmt.Record(value=b"a", timestamp=1)] * 3, base_offset=10)
    b = kfmt.encode_batch([kfmt.Record(value=b"b", timestamp=2)], base_offset=11)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / f"{10:020d}.log").write_bytes(a + b)
    assert main(["dump", str(tmp_path / "t-0")]) == 1
    assert "offsets go backwards" in capsys.readouterr().err


def test_every_kind_of_file(corpus, tmp_path, capsys):
    part = corpus / "orders-0"
    for p in sorted(part.iterdir()):
        assert main(["dump", "--json", str(p)]) == 0, p
    out = capsys.readouterr().out
    kinds = {json.loads(x)["type"] for x in out.splitlines()}
    assert {"batch", "index", "timeindex", "txnindex"} <= kinds
    # .txnindex lists what a consumer skips, and it agrees with the markers in the log
    txn = [json.loads(x) for x in out.splitlines() if json.loads(x)["type"] == "txnindex"]
    computed = transactions_of_files(sorted(part.glob("*.log")))
    assert [(t["producer_id"], t["first_offset"], t["last_offset"]) for t in txn] == computed.aborted
    snap = tmp_path / f"{100:020d}.snapshot"
    entry = dict(producer_id=5, epoch=1, last_sequence=9, last_offset=99, offset_delta=0, timestamp=1, coordinator_epoch=2,
                 current_txn_first_offset=-1)  # fmt: skip
    snap.write_bytes(producer_snapshot([entry]))
    assert main(["dump", "--json", str(snap)]) == 0
    assert json.loads(capsys.readouterr().out)["producer_id"] == 5
    snap.write_bytes(snap.read_bytes()[:-1] + b"\x01")
    assert main(["dump", str(snap)]) == 1
    assert "corrupt snapshot" in capsys.readouterr().err
    ck = tmp_path / "leader-epoch-checkpoint"
    ck.write_text("0\n2\n0 0\n3 120\n")
    assert main(["dump", str(ck)]) == 0
    ck.write_text("0\n2\n3 120\n1 100\n")
    assert main(["dump", str(ck)]) == 1
    pm = tmp_path / "partition.metadata"
    pm.write_text("version: 0\ntopic_id: vE1bKX0JTHa0Bq0rYwqG8A\n")
    assert main(["dump", str(pm)]) == 0
    pm.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")  # Uuid.ZERO_UUID: reserved, never a topic's
    assert main(["dump", str(pm)]) == 1
    capsys.readouterr()
    other = tmp_path / "notes.txt"
    other.write_text("x")
    assert main(["dump", str(other)]) == 2
    assert "not a Kafka log file" in capsys.readouterr().err


def test_index_dumped_as_index_and_checked_against_its_log(corpus, capsys):
    idx = _seg(corpus).with_suffix(".index")
    assert main(["dump", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "offset" in out and "position" in out and "magic" not in out


def test_control_records_are_named_and_payloads_unambiguous(tmp_path, capsys):
    recs = [kfmt.Record(key=b"\xff\x00", value=b'"quoted"', timestamp=1_700_000_000_000)]
    data = kfmt.encode_batch(recs, base_offset=0) + kfmt.encode_batch(
        [kfmt.control_record("commit", coordinator_epoch=5, timestamp=1_700_000_000_001)], base_offset=1,
        producer_id=7, is_transactional=True, is_control=True)  # fmt: skip
    p = tmp_path / "a.log"
    p.write_bytes(data)
    assert main(["dump", "--records", str(p)]) == 0
    out = capsys.readouterr().out
    assert "COMMIT coordinatorEpoch 5" in out and "2023-11-14T22:13:20.000Z CreateTime" in out
    assert 'key 0xff00 value "\\"quoted\\""' in out
    assert main(["dump", "--records", "--json", str(p)]) == 0
    first, marker = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert first["key"] == {"hex": "ff00"} and first["value"] == '"quoted"'
    assert marker["control_type"] == "COMMIT coordinatorEpoch 5"


def test_filters_and_isolation(corpus, capsys):
    seg = _seg(corpus)
    assert main(["dump", "--json", "--records", "--offsets", "10:19", str(seg)]) == 0
    assert [json.loads(x)["offset"] for x in capsys.readouterr().out.splitlines()] == list(range(10, 20))
    part = str(corpus / "orders-0")
    assert main(["dump", "--json", "--records", part]) == 0
    every = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert main(["dump", "--json", "--records", "--isolation", "read_committed", part]) == 0
    committed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    aborted = transactions_of_files(sorted((corpus / "orders-0").glob("*.log"))).aborted
    assert aborted and len(committed) < len(every)
    dropped = {r["offset"] for r in every} - {r["offset"] for r in committed}
    assert all(any(lo <= o <= hi for _, lo, hi in aborted) for o in dropped)
    assert main(["dump", "--max-bytes", "1000", "--json", str(seg)]) == 0
    assert all(json.loads(x)["position"] < 1000 for x in capsys.readouterr().out.splitlines())
    with pytest.raises(SystemExit) as e:  # argparse: one line, exit 2 (tests/test_cli_usage.py has the table)
        main(["dump", "--offsets", "nope", str(seg)])
    assert e.value.code == 2


def test_index_check_on_many_entries(tmp_path):
    """One batch per 100 bytes and an index entry per batch: 20,000 entries (a binary search each; the old
    quadratic check took 16 s for 10,000), and one wrong entry among them is found."""
    from kfmt.tools.dump import check_offset_index, check_time_index

    n = 20_000
    facts = tuple(__import__("array").array("q", v) for v in (
        [i * 100 for i in range(n)], range(n), range(n), [1000 + i for i in range(n)]))  # fmt: skip
    idx = tmp_path / f"{0:020d}.index"
    idx.write_bytes(b"".join(struct.pack(">ii", i, i * 100) for i in range(1, n)))
    tidx = tmp_path / f"{0:020d}.timeindex"
    tidx.write_bytes(b"".join(struct.pack(">qi", 1000 + i, i) for i in range(1, n)))
    assert check_offset_index(idx, facts) == [] and check_time_index(tidx, facts) == []
    data = bytearray(idx.read_bytes())
    struct.pack_into(">ii", data, 8 * 5000, 5001, 5001 * 100 + 1)
    idx.write_bytes(bytes(data))
    assert check_offset_index(idx, facts) == [f"entry offset 5001 -> position {5001 * 100 + 1}: no batch starts there"]


def test_streamed_indexes_equal_whole_segment_indexes(tmp_path, capsys):
    """``kfmt convert`` writes a segment batch by batch and builds its indexes as it goes
    (kfmt.logdir.indexes.IndexBuilder); they equal the indexes built from the whole segment, and dump's index
    checks find nothing wrong with them."""

    from kfmt.logdir.indexes import IndexBuilder, build_indexes

    rng = random.Random(7)
    src = tmp_path / "in" / "t-0"
    src.mkdir(parents=True)
    parts = []
    for b in range(300):
        recs = [kfmt.Record(value=bytes(rng.randrange(200)), timestamp=1000 + rng.randrange(5000)) for _ in range(5)]
        parts.append(kfmt.encode_batch(recs, base_offset=b * 5, magic=rng.choice([1, 2]), codec="none"))
    whole = b"".join(parts)
    builder = IndexBuilder(0)
    for p in parts:
        builder.add(p)
    assert builder.finish() == build_indexes(whole, 0)
    assert len(build_indexes(whole, 0)[0]) > 100  # entries every 4 KiB: a real check
    (src / f"{0:020d}.log").write_bytes(whole)
    assert main(["convert", str(src), str(tmp_path / "out"), "--magic", "2", "--codec", "gzip"]) == 0
    seg = tmp_path / "out" / f"{0:020d}.log"
    assert (seg.with_suffix(".index").read_bytes(), seg.with_suffix(".timeindex").read_bytes()) == build_indexes(
        seg.read_bytes(), 0
    )
    capsys.readouterr()
    assert main(["dump", "--summary", str(seg)]) == 0, capsys.readouterr()


def test_a_records_time_is_its_timestamp_to_the_millisecond():
    """The time kfmt dump shows beside a timestamp: UTC to the millisecond, exact (integer arithmetic: a float
    division is a millisecond off for the last milliseconds of some seconds past 2109), None for none or out of
    datetime's range."""
    import datetime as dt
    import random

    from kfmt.log.shapes import iso

    rng = random.Random(3)
    for ts in [0, 1, 999, 1000, 1_681_878_307_999, *(rng.randrange(0, 253_402_300_800_000) for _ in range(20000))]:
        whole = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ts)
        assert iso(ts) == whole.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts % 1000:03d}Z", ts
    assert iso(253_402_300_799_999) == "9999-12-31T23:59:59.999Z"
    assert iso(253_402_300_800_000) is None and iso(-1) is None and iso(None) is None and iso(2**63 - 1) is None
