"""Written partition folders carry what a broker loads: indexes, leader-epoch-checkpoint, partition.metadata."""

import subprocess
import sys

import kfmt
from kfmt.logfiles import read_leader_epoch_checkpoint, read_partition_metadata
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
