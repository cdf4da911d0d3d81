"""Written partition folders carry what a broker loads: indexes, leader-epoch-checkpoint, partition.metadata."""

import subprocess
import sys

import kfmt
from kfmt.logdir.files import read_leader_epoch_checkpoint, read_partition_metadata
from kfmt.spark.writer import commit_partitions


def _stage(tmp_path, name, batches):
    p = tmp_path / "staging" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(batches))
    return str(p)


def _batch(base, epoch, n=5):
    recs = [kfmt.Record(value=b"v%d" % i, timestamp=1000 + base + i) for i in range(n)]
    return kfmt.encode_batch(recs, base_offset=base, partition_leader_epoch=epoch)


def test_epochs_topic_ids_and_a_clean_dump(tmp_path):
    out = tmp_path / "out"
    pieces = {
        ("orders", 0): [_stage(tmp_path, "a", [_batch(0, -1), _batch(5, 0), _batch(10, 0), _batch(15, 3)])],
        ("orders", 1): [_stage(tmp_path, "b", [_batch(0, 2)])],
    }
    commit_partitions(out, pieces)
    entries, problems = read_leader_epoch_checkpoint(out / "orders-0" / "leader-epoch-checkpoint")
    assert problems == [] and entries == [{"epoch": 0, "start_offset": 5}, {"epoch": 3, "start_offset": 15}]
    ids = []
    for part in (0, 1):
        fields, problems = read_partition_metadata(out / f"orders-{part}" / "partition.metadata")
        assert problems == [] and len(fields[0]["topic_id"]) == 22
        ids.append(fields[0]["topic_id"])
    assert ids[0] == ids[1]  # one id per topic
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--summary", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # appending: the checkpoint goes on from the folder's, the topic id stays
    commit_partitions(out, {("orders", 0): [_stage(tmp_path, "c", [_batch(20, 3), _batch(25, 7)])]})
    entries, problems = read_leader_epoch_checkpoint(out / "orders-0" / "leader-epoch-checkpoint")
    assert problems == [] and [e["epoch"] for e in entries] == [0, 3, 7] and entries[-1]["start_offset"] == 25
    assert read_partition_metadata(out / "orders-0" / "partition.metadata")[0][0]["topic_id"] == ids[0]
    # a topic id given is written
    given = "AbCdEfGhIjKlMnOpQrStUv"
    commit_partitions(out, {("clicks", 0): [_stage(tmp_path, "d", [_batch(0, 1)])]}, topic_ids={"clicks": given})
    assert read_partition_metadata(out / "clicks-0" / "partition.metadata")[0][0]["topic_id"] == given


def test_indexes_hold_entries_and_agree_with_the_log(tmp_path):
    """Segments large enough for Kafka's default index interval (4096 bytes) get non-empty .index and
    .timeindex files, which kfmt dump's checker (the broker's sanity checks and a comparison with the log)
    accepts; damaging one index entry makes the same checker fail."""
    out = tmp_path / "out"
    big = [kfmt.encode_batch([kfmt.Record(value=b"x" * 900, timestamp=5000 + b * 10 + i) for i in range(3)],
                             base_offset=b * 3) for b in range(40)]  # fmt: skip
    commit_partitions(out, {("orders", 0): [_stage(tmp_path, "big", big)]}, segment_bytes=64 * 1024)
    logs = sorted((out / "orders-0").glob("*.log"))
    assert len(logs) >= 2
    for log in logs:
        assert len(log.with_suffix(".index").read_bytes()) >= 8 * 5
        assert len(log.with_suffix(".timeindex").read_bytes()) >= 12 * 5
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--summary", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    idx = logs[0].with_suffix(".index")
    data = bytearray(idx.read_bytes())
    data[12:16] = (int.from_bytes(data[12:16], "big") + 1).to_bytes(4, "big")  # the second entry's position
    idx.write_bytes(bytes(data))
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--summary", str(out)], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
