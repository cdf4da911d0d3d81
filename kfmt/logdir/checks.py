"""Checks across the files of a log directory, as the broker relies on them: a partition's
``leader-epoch-checkpoint`` against its batches' leader epochs, the log dir's offset checkpoints against its
partitions' ends, and ``partition.metadata`` topic ids across a topic's partitions.

Each check returns ``(problems, notes)``: one-line strings. A problem is something Kafka would refuse, repair
or act wrongly on; a note is something unusual that a running broker also leaves behind.
"""

from __future__ import annotations

import bisect

from kfmt.logdir.files import OFFSET_CHECKPOINTS


def epoch_runs_add(runs: list, base_offset: int, last_offset: int, epoch: int) -> None:
    """Record a batch's partition leader epoch (v2; -1 means none) in ``runs``: ``[first offset, epoch, last
    offset]`` per stretch of batches of one epoch, the shape of a leader-epoch checkpoint."""
    if epoch < 0:
        return
    if runs and runs[-1][1] == epoch:
        runs[-1][2] = last_offset
    else:
        runs.append([base_offset, epoch, last_offset])


def epoch_problems(entries: list[dict], runs: list) -> tuple[list[str], list[str]]:
    """A leader-epoch checkpoint (``epoch``, ``start_offset`` entries) against the epochs the batches carry.

    Kafka's LeaderEpochFileCache assigns ``(epoch, first offset)`` when a batch of a newer epoch is appended,
    so the checkpoint's entry covering a batch's offset names that batch's epoch, and no entry starts inside
    a stretch of batches of one epoch. Batches of epochs newer than the checkpoint's last one are a note (the
    broker writes the checkpoint after the log and rebuilds it on recovery); any other disagreement is a
    problem.
    """
    if not entries:
        return ([f"no entries, but the batches carry leader epochs from epoch {runs[0][1]} at offset {runs[0][0]}"]
                if runs else []), []  # fmt: skip
    starts = [e["start_offset"] for e in entries]
    last = entries[-1]
    problems: list[str] = []
    notes: list[str] = []
    for first, epoch, end in runs:
        i = bisect.bisect_right(starts, first) - 1
        inside = [e for e in entries[i + 1 : bisect.bisect_right(starts, end)] if e["epoch"] != epoch]
        if i < 0:
            problems.append(f"batches at offset {first} carry epoch {epoch}, before the first entry (epoch "
                            f"{entries[0]['epoch']} from offset {starts[0]})")  # fmt: skip
        elif entries[i]["epoch"] != epoch and epoch > last["epoch"] and first >= last["start_offset"]:
            notes.append(f"batches from offset {first} carry epoch {epoch}, newer than the last entry (epoch "
                         f"{last['epoch']}): not written yet (Kafka rebuilds it on recovery)")  # fmt: skip
        elif entries[i]["epoch"] != epoch:
            problems.append(f"batches from offset {first} carry epoch {epoch}, but the entry covering that offset "
                            f"says epoch {entries[i]['epoch']} (from offset {starts[i]})")  # fmt: skip
        for e in inside:
            problems.append(f"batches {first}-{end} carry epoch {epoch}, but the entry covering offset "
                            f"{e['start_offset']} says epoch {e['epoch']}")  # fmt: skip
    return problems, notes


def offset_checkpoint_problems(name: str, entries: list[dict], ends: dict) -> tuple[list[str], list[str]]:
    """A log dir's offset checkpoint (``name`` one of :data:`OFFSET_CHECKPOINTS`) against the partitions read:
    ``ends`` maps ``(topic, partition)`` to the partition's log end offset (the offset after its last record).
    No offset may pass the end; a partition listed without a folder is a note."""
    what = OFFSET_CHECKPOINTS.get(name, "offset")
    problems, notes = [], []
    for e in entries:
        tp = (e["topic"], e["partition"])
        if tp not in ends:
            notes.append(f"{e['topic']}-{e['partition']}: listed ({what} {e['offset']}), but no such partition folder "
                         "was read")  # fmt: skip
        elif e["offset"] > ends[tp]:
            problems.append(f"{e['topic']}-{e['partition']}: {what} {e['offset']} is past the partition's end "
                            f"(log end offset {ends[tp]})")  # fmt: skip
    return problems, notes


def topic_id_problems(ids: dict[str, dict[str, list[str]]]) -> list[str]:
    """``partition.metadata`` topic ids per topic (``{topic: {id: [folders]}}``): one topic has one id in a
    log dir (partitions that disagree were written by different topics of the same name), and one id names one
    topic."""
    out = []
    for topic, by_id in sorted(ids.items()):
        if len(by_id) > 1:
            said = "; ".join(f"{i} in {', '.join(sorted(fs))}" for i, fs in sorted(by_id.items()))
            out.append(f"topic {topic} has {len(by_id)} topic ids across its partition folders: {said}")
    topics_of: dict[str, list[str]] = {}
    for topic, by_id in ids.items():
        for i in by_id:
            topics_of.setdefault(i, []).append(topic)
    for i, topics in sorted(topics_of.items()):
        if len(topics) > 1:
            out.append(f"topic id {i} is the id of {len(topics)} topics ({', '.join(sorted(topics))}): a topic id "
                       "names one topic, and Kafka's metadata never gives two topics one id")  # fmt: skip
    return out
