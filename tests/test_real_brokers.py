"""#34: the log directories real Kafka brokers wrote (../shared/fixtures/real-broker: six broker data
directories, ZooKeeper mode 2.1 to 3.9 and KRaft 3.7, provenance and license in its README) read by every tool
as Kafka reads them: a healthy broker's directory is healthy (exit 0, no problem), every record is read, and
every payload of Kafka's own topics decodes.

Independent sources:
* kafka-python's record reader (``kafka.record.memory_records.MemoryRecords``) reads every ``.log`` and
  KRaft snapshot; the counts it gives are stated below (EXPECTED) and every kfmt reader is held to its
  records, field by field;
* kafka-python's reader of Kafka's JSON message specs (``kafka.protocol.schemas``, the spec files pinned in
  tests/fixtures/kafka) reads every payload of ``__consumer_offsets``, ``__transaction_state`` and the KRaft
  snapshots after the serdes' framing (CoordinatorRecordSerde: int16 key version = record type, int16 value
  version; MetadataRecordSerde: unsigned varints frame version 1, apiKey, version).

Files the fixtures' README lists as absent from the source (``__cluster_metadata-0``'s ``.log``, most
``.index``/``.timeindex`` files) are absent here too: nothing is faked.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

import kfmt
from kfmt.codec.formats import available_backends
from kfmt.payloads import _codec, binding, decode_payload

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "real-broker"
KFMT = [sys.executable, "-m", "kfmt"]

#: what kafka-python's reader finds in each fixture (records of .log files, of KRaft snapshots, control
#: records among both, and the payloads of Kafka's own topics with a value and tombstones); the fixtures'
#: README says the same in words (e.g. zk-2.1: 8,201 offset commits and 1 group-metadata record)
EXPECTED = {
    "kraft-3.7-cp-ksql-txn-ItumelengMogase": {
        "records": 147, "snapshot_records": 504, "control_records": 9,
        "payloads": {"__consumer_offsets": (88, 1), "__transaction_state": (4, 0), "kraft-snapshot": (496, 0)},
    },
    "zk-2.1snap-William0423": {"records": 8242, "payloads": {"__consumer_offsets": (8202, 0)}},
    "zk-2.8.0-snappy-seanorth": {"records": 78, "payloads": {"__consumer_offsets": (69, 0)}},
    "zk-3.1.0-aryan-jadon": {"records": 6996, "payloads": {"__consumer_offsets": (4384, 140)}},
    "zk-3.9snap-gzip-BiggerBrain": {"records": 14, "payloads": {}},
    "zk-cp5-lz4-connect-mscaldas2012": {"records": 582, "payloads": {"__consumer_offsets": (222, 3)}},
}  # fmt: skip
NAMES = sorted(EXPECTED)
# the payload test runs every backend itself, and the readers are held to the other backends by the suite's
# own tests: the Construct reference's pass (make test-backends) leaves these 15,000 records out (minutes there)
pytestmark = pytest.mark.skipif(os.environ.get("KFMT_BACKEND") == "construct", reason="run in the other passes")


def test_the_fixtures_are_here():
    """CI checks this project out with ../shared beside it: the fixtures are never silently missing."""
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == NAMES


def _logs(d: Path) -> list[tuple[Path, str, bool]]:
    """``(file, topic, is_snapshot)`` of every segment and KRaft snapshot under ``d``."""
    out = []
    for p in sorted(d.rglob("*")):
        snap = p.suffix == ".checkpoint" and (p.name == "bootstrap.checkpoint" or p.name[0].isdigit())
        if p.is_file() and (p.suffix == ".log" or snap):
            out.append((p, "kraft-snapshot" if snap else p.parent.name.rsplit("-", 1)[0], snap))
    return out


@functools.lru_cache(maxsize=None)
def _oracle(d: Path) -> tuple:
    """kafka-python's reading of every record: ``(file, offset, timestamp, key, value, headers, control)``."""
    rows = []
    for path, topic, _ in _logs(d):
        mr = MemoryRecords(path.read_bytes())
        while mr.has_next():
            b = mr.next_batch()
            assert b.validate_crc(), path
            for r in b:
                rows.append((str(path), topic, r.offset, r.timestamp, r.key, r.value, tuple(r.headers),
                             b.is_control_batch))  # fmt: skip
    return tuple(rows)


@pytest.mark.parametrize("name", NAMES)
def test_counts_kafka_python_reads(name):
    want = EXPECTED[name]
    rows = _oracle(FIXTURES / name)
    snap = [r for r in rows if r[1] == "kraft-snapshot"]
    assert len(rows) - len(snap) == want["records"]
    assert len(snap) == want.get("snapshot_records", 0)
    assert sum(r[7] for r in rows) == want.get("control_records", 0)
    payloads: dict = {}
    for r in rows:
        if binding(r[1]) is not None and not r[7]:
            v, t = payloads.get(r[1], (0, 0))
            payloads[r[1]] = (v + (r[5] is not None), t + (r[5] is None))
    assert payloads == want["payloads"]


@pytest.mark.parametrize("name", NAMES)
def test_read_batches_on_each_segment(name):
    """Every segment and snapshot, read whole by read_batches: kafka-python's records, field by field."""
    d = FIXTURES / name
    want = Counter(_oracle(d))
    got: Counter = Counter()
    for path, topic, _ in _logs(d):
        for b in kfmt.read_batches(path.read_bytes()):
            for r in b.records:
                got[(str(path), topic, r.offset, r.timestamp, r.key, r.value, tuple(r.headers), b.is_control)] += 1
    assert got == want


def _arrow_rows(table) -> Counter:
    cols = [table.column(c).to_pylist() for c in ("file", "offset", "timestamp_ms", "key", "value", "headers")]
    return Counter((f, o, t, k, v, tuple((h["key"], h["value"]) for h in hs)) for f, o, t, k, v, hs in zip(*cols))


@pytest.mark.parametrize("name", NAMES)
def test_read_arrow_on_the_log_dir(name):
    d = FIXTURES / name
    want = Counter(r[:1] + r[2:7] for r in _oracle(d) if r[1] != "kraft-snapshot" and not r[7])
    assert _arrow_rows(kfmt.read_arrow(d)) == want
    assert sum(want.values()) == EXPECTED[name]["records"] - (1 if name.startswith("kraft") else 0)  # 1 COMMIT


def _dump(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*KFMT, "dump", *map(str, args)], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("name", NAMES)
def test_dump_says_healthy_in_every_mode(name):
    """kfmt dump on a healthy broker's log dir: exit 0 and no problem, as text, records, summary and JSON;
    the JSON records are every record, and every payload of Kafka's own topics decodes."""
    d = FIXTURES / name
    for mode in ((), ("--records",), ("--summary",), ("--json",)):
        r = _dump(*mode, d)
        assert r.returncode == 0 and "problem" not in r.stderr, (mode, r.stderr[-2000:])
    r = _dump("--json", "--records", d)
    assert r.returncode == 0, r.stderr[-2000:]
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert not [o for o in objs if o["type"] == "problem"]
    records = [o for o in objs if o["type"] == "record"]
    want = EXPECTED[name]
    assert len(records) == want["records"] + want.get("snapshot_records", 0)
    for o in records:  # a KRaft snapshot's records (bootstrap.checkpoint's too) are metadata records
        o["topic"] = "kraft-snapshot" if o["file"].endswith(".checkpoint") else o["topic"]
    ours = [o for o in records if binding(o["topic"]) is not None and o["control"] is None]
    decoded = Counter((o["topic"], o["value_decoded"] is not None) for o in ours)
    assert {t: (decoded[t, True], decoded[t, False]) for t in want["payloads"]} == want["payloads"]
    assert all(o["key_decoded"] is not None for o in ours if o["topic"] != "kraft-snapshot")
    assert all(o["value_decoded"] is not None for o in ours if o["value"] is not None)


# ---------------------------------------------------------------- Kafka's payloads, against kafka-python


BACKENDS = ("python", "construct") + (("native",) if "native" in available_backends() else ())


@pytest.mark.named_backends
@pytest.mark.parametrize("name", [n for n in NAMES if EXPECTED[n]["payloads"]])
def test_payloads_as_kafka_python_reads_them(name):
    """Every payload of Kafka's own topics (distinct bytes) decodes in every backend to what kafka-python reads
    from the same spec, and re-encodes to the same bytes."""
    from test_kafka_payloads import _kafka_python_reads, _same

    seen = set()
    for _, topic, _, _, key, value, _, control in _oracle(FIXTURES / name):
        if control or binding(topic) is None or (key, value) in seen:
            continue
        seen.add((key, value))
        k_py, v_py = _kafka_python_reads(topic, key, value)
        b = binding(topic)
        for backend in BACKENDS:
            p = decode_payload(topic, key, value, backend=backend)
            assert not p.problems, (topic, p.problems)
            if k_py is not None:
                _same(p.key.data, k_py)
                assert _codec(b.key, backend).encode(_codec(b.key, backend).decode(key)) == key
            if value is None:
                assert p.value is None
                continue
            _same(p.value.data, v_py)
            kw = {b.param: p.key.version} if b.param else {}
            codec = _codec(b.value, backend)
            assert codec.encode(codec.decode(value, **kw), **kw) == value, (topic, backend)
    assert seen


# ---------------------------------------------------------------- a folder holding log directories


def _total(names) -> int:
    return sum(EXPECTED[n]["records"] - (1 if n.startswith("kraft") else 0) for n in names)


def test_a_folder_of_log_dirs_is_read_whole_by_every_tool(tmp_path):
    """The fixtures' own folder holds six log dirs, and a broker's JBOD ``log.dirs`` (/data/d1, /data/d2)
    two: every tool reads each log dir below the folder given, each its own logs."""
    assert kfmt.read_arrow(FIXTURES).num_rows == _total(NAMES)
    r = _dump("--summary", "--json", FIXTURES)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert sum(summary["records"].values()) == sum(len(_oracle(FIXTURES / n)) for n in NAMES)  # control too
    jbod = tmp_path / "data"
    for i, n in enumerate(("zk-2.8.0-snappy-seanorth", "zk-3.9snap-gzip-BiggerBrain"), 1):
        shutil.copytree(FIXTURES / n, jbod / f"d{i}")
    assert kfmt.read_arrow(jbod).num_rows == _total(["zk-2.8.0-snappy-seanorth", "zk-3.9snap-gzip-BiggerBrain"])
    assert sum(1 for _ in kfmt.read_arrow_batches(jbod)) >= 1
    r = _dump("--summary", jbod)
    assert r.returncode == 0 and "some-topic-0" in r.stdout and "lsx1-0" in r.stdout, r.stderr


def test_two_copies_of_a_log_dir_are_two_sets_of_logs(tmp_path):
    """Two brokers' copies of one partition are two logs (replicas), never merged into one."""
    name = "zk-3.9snap-gzip-BiggerBrain"
    for broker in ("broker-1", "broker-2"):
        shutil.copytree(FIXTURES / name, tmp_path / broker)
    t = kfmt.read_arrow(tmp_path)
    assert t.num_rows == 2 * EXPECTED[name]["records"]
    assert len(set(t.column("file").to_pylist())) == 2
    r = _dump("--summary", tmp_path)
    assert r.returncode == 0 and r.stdout.count("lsx1-0") >= 2, r.stdout


def test_a_folder_with_no_log_is_one_line_everywhere(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "notes.txt").write_text("x")
    r = _dump("--summary", tmp_path)
    assert r.returncode != 0 and "no Kafka log file found" in r.stderr
    with pytest.raises(ValueError, match="no Kafka log file"):
        kfmt.read_arrow(tmp_path)


def test_the_walk_is_one_rule(tmp_path):
    """The folders dump checks and the segments every reader reads come from kfmt.logdir.layout.walk_folder."""
    from kfmt.logdir.layout import find_segments, walk_folder

    segs, folders = walk_folder(FIXTURES)
    assert sorted(segs) == find_segments(FIXTURES)
    assert {Path(s.path).parent for s in segs} <= set(folders)
    assert len([f for f in folders if (f / "meta.properties").is_file()]) == 6
