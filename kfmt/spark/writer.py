"""Rows (the source's columns) back into batches and segments: what the Spark writer runs on executors
(``encode_rows``) and on the driver when a write job commits (``commit_partitions``)."""

from __future__ import annotations

import kfmt
from kfmt.runtime.errors import CodecError

_BATCH_FIELDS = ("producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control")
_V2_KEPT = ("partition_leader_epoch", "timestamp_type")


def _row_groups(rows: list[dict], keep_batches: bool, batch_records: int) -> list[list[dict]]:
    """Rows in offset order, grouped: rows of one input batch together (``keep_batches`` and a
    ``batch_base_offset``), else up to ``batch_records`` consecutive rows."""
    rows = sorted(rows, key=lambda r: r["offset"])
    groups: list[list[dict]] = []
    for r in rows:
        batch = r.get("batch_base_offset")
        if groups:
            last = groups[-1]
            if keep_batches and batch is not None:
                joins = last[0].get("batch_base_offset") == batch
            else:
                joins = len(last) < batch_records
            if joins:
                last.append(r)
                continue
        groups.append([r])
    return groups


def _v2_fields(row: dict) -> dict:
    """The batch fields of a v2 batch that a row carries (columns of the kafka-log source)."""
    fields = {f: row[f] for f in _BATCH_FIELDS if row.get(f) is not None}
    if row.get("partition_leader_epoch") is not None:
        fields["partition_leader_epoch"] = row["partition_leader_epoch"]
    if row.get("timestampType") in (0, 1):
        fields["timestamp_type"] = row["timestampType"]
    if row.get("delete_horizon") is not None:
        fields["has_delete_horizon"] = True
        fields["base_timestamp"] = row["delete_horizon"]
    return fields


# what an old magic cannot carry, per row: (what, is it there)
_NOT_BELOW_V2 = (
    ("headers", lambda r: r.get("headers")),
    ("control records", lambda r: r.get("is_control")),
    ("transactional records", lambda r: r.get("is_transactional")),
    ("producer state", lambda r: r.get("producer_id") not in (None, -1)),
    ("partition leader epochs", lambda r: r.get("partition_leader_epoch") not in (None, -1)),
    ("delete horizons", lambda r: r.get("delete_horizon") is not None),
)


def encode_rows(rows: list[dict], *, magic=2, codec="none", batch_records=500, keep_batches=True) -> bytes:
    """Rows (dicts with offset, key, value, headers, timestamp and, when present, batch_base_offset and the
    batch's columns: producer state, transactional/control flags, timestampType, partition_leader_epoch,
    delete_horizon) as batches.

    Magic 2 batches keep every batch field the rows carry.  An older magic refuses what it cannot carry:
    headers, control records, producer state, transactional data, leader epochs and delete horizons (magic
    1 keeps LogAppendTime; magic 0 has no timestamps, which Kafka drops when writing it).
    """

    if rows and rows[0].get("offset") is None:
        raise ValueError("kafka-log writer: rows need an 'offset' column")
    out = bytearray()
    for g in _row_groups(rows, keep_batches, batch_records):
        first = g[0]
        if magic >= 2:
            fields = _v2_fields(first)
        else:
            for what, there in _NOT_BELOW_V2:
                n = sum(1 for r in g if there(r))
                if n:
                    raise ValueError(f"kafka-log writer: magic {magic} cannot carry {what} ({n} row(s) from offset "
                                     f"{first['offset']}); drop or filter them, or write magic 2")  # fmt: skip
            fields = {"timestamp_type": 1} if magic == 1 and first.get("timestampType") == 1 else {}
        recs = []
        for r in g:
            ts = _timestamp_ms(r)
            hs = [(h["key"], h["value"]) for h in (r.get("headers") or [])]
            recs.append(kfmt.Record(key=r.get("key"), value=r.get("value"), headers=hs,
                                    timestamp=-1 if ts is None else ts, offset=r["offset"]))  # fmt: skip
        out += kfmt.encode_batch(recs, magic=magic, codec=codec if not fields.get("is_control") else "none",
                                 base_offset=recs[0].offset, keep_offsets=True, **fields)  # fmt: skip
    return bytes(out)


def _timestamp_ms(r) -> int | None:
    """A row's Kafka timestamp: ``timestamp`` (a datetime or milliseconds), else ``timestamp_ms`` (the
    source's raw value, which also holds timestamps too far out for ``timestamp``)."""
    ts = r.get("timestamp")
    if ts is None:
        return r.get("timestamp_ms")
    if hasattr(ts, "timestamp"):
        return int(round(ts.timestamp() * 1000))
    return ts


def _merged(batches: list) -> bytes:
    """Batches whose offsets interleave (one input batch split across tasks): one batch per original batch."""

    by_offset: dict = {}
    for b in batches:
        for r in b.records:
            if r.offset in by_offset:
                raise ValueError(f"kafka-log writer: offset {r.offset} is written twice")
            by_offset[r.offset] = (b, r)
    first = batches[0]
    recs = [kfmt.Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp, offset=r.offset)
            for _, (_, r) in sorted(by_offset.items())]  # fmt: skip
    fields = {}
    if first.magic >= 2:
        fields = {f: getattr(first, f) for f in _BATCH_FIELDS + _V2_KEPT}
        if first.has_delete_horizon:
            fields.update(has_delete_horizon=True, base_timestamp=first.base_timestamp)
    elif first.magic == 1 and first.timestamp_type:
        fields["timestamp_type"] = first.timestamp_type
    return kfmt.encode_batch(recs, magic=first.magic, codec=first.codec, base_offset=recs[0].offset,
                             keep_offsets=True, **fields)  # fmt: skip


def new_topic_id() -> str:
    """A topic id as Kafka writes one: 16 random bytes, URL-safe base64 without padding (Uuid.toString)."""
    import base64
    import os

    return base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()


def broker_files(tree, folder: str, batches: list, topic_id: str, replace: bool) -> list[tuple[str, bytes]]:
    """``leader-epoch-checkpoint`` and ``partition.metadata`` for a partition folder of ``tree`` (a
    :class:`kfmt.storage.Tree`), so that a broker loads it: the leader epochs the written v2 batches carry
    (each epoch with the first offset written under it; -1, "none", as producers write, is left out, as
    Kafka's leader epoch cache does), after the epochs of the folder's checkpoint when appending; the
    topic id is the folder's own when it has one."""
    from kfmt.logfiles import parse_leader_epoch_checkpoint, parse_partition_metadata

    entries: list[tuple[int, int]] = []
    ckpt = f"{folder}/leader-epoch-checkpoint"
    if not replace and tree.is_file(ckpt):
        old, problems = parse_leader_epoch_checkpoint(tree.read(ckpt).decode(errors="replace"))
        if not problems:
            entries = [(e["epoch"], e["start_offset"]) for e in old]
    for b in batches:
        epoch = getattr(b, "partition_leader_epoch", -1)
        if b.magic >= 2 and epoch >= 0 and (not entries or epoch > entries[-1][0]):
            entries.append((epoch, b.base_offset))
    text = "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)
    meta = f"{folder}/partition.metadata"
    if not replace and tree.is_file(meta):
        fields, problems = parse_partition_metadata(tree.read(meta).decode(errors="replace"))
        if not problems and not topic_id:
            topic_id = fields[0]["topic_id"]
    return [(ckpt, text.encode()), (meta, f"version: 0\ntopic_id: {topic_id or new_topic_id()}\n".encode())]


class OffsetsTaken(ValueError):
    """Appending rows that start at or before an offset the partition folder already holds."""


def folder_last_offset(tree, folder: str, storage=None) -> int | None:
    """The last offset in a partition folder of ``tree`` (a :class:`kfmt.storage.Tree`), read from its last
    segment; None when it holds no segment."""
    from kfmt.logdir import Segment
    from kfmt.offsets import last_offset

    logs = [n for n, d in tree.listdir(folder) if not d and n.endswith(".log")]
    if not logs:
        return None
    path = f"{folder}/{logs[-1]}"
    return last_offset(Segment("", -1, 0, tree.uri(path), tree.fs.get_file_info(path).size), storage)


def commit_partitions(root, pieces: dict, *, segment_bytes=1024**3, replace=False, topic_ids=None,
                      storage=None) -> list[str]:  # fmt: skip
    """Put the staged batches of each topic-partition (``{(topic, partition): [files]}``) in place as
    segments named by base offset, with their indexes, ``leader-epoch-checkpoint`` and
    ``partition.metadata`` (``topic_ids``: ``{topic: id}``; else the folder's, else a new one per topic).
    ``root`` is a local folder or a store's URI (``storage``: options of :mod:`kfmt.storage`); staged files
    are paths in the same tree.  All partitions are computed first, then every file is written: locally
    all at once, in a store object after object with the completion marker last.  ``replace`` removes
    the target's old segments; otherwise new offsets must come after the ones already there."""
    from pathlib import PurePosixPath

    from kfmt.api import scan
    from kfmt.publish import MARKER
    from kfmt.segments import segment_files
    from kfmt.storage import Tree

    tree = Tree(str(root), storage)
    ids = dict(topic_ids or {})
    staged: list[tuple[str, bytes]] = []
    remove: list[str] = []
    for (topic, part), files in sorted(pieces.items()):
        folder = tree.join(f"{topic}-{part}")
        entries = []
        for f in files:
            data = tree.read(f)
            for pos, end, b in scan(data):
                if isinstance(b, CodecError):  # scan without skip_corrupt raises; staged batches are ours
                    raise b
                entries.append((b.base_offset, b.last_offset, data[pos:end], b))
        entries.sort(key=lambda e: (e[0], e[1]))
        existing = tree.is_file(f"{folder}/partition.metadata") and not replace
        if topic not in ids and not existing:
            ids[topic] = new_topic_id()  # one id per topic, shared by its partitions
        staged += broker_files(tree, folder, [e[3] for e in entries], ids.get(topic, ""), replace)
        blobs: list[tuple[int, bytes]] = []
        cluster: list = []
        top = -1
        for e in entries + [None]:
            if e is not None and cluster and e[0] <= top:
                cluster.append(e)
                top = max(top, e[1])
                continue
            if cluster:
                blobs.append((cluster[0][0], cluster[0][2] if len(cluster) == 1 else _merged([c[3] for c in cluster])))
            if e is not None:
                cluster, top = [e], e[1]
        last_old = folder_last_offset(tree, folder, storage) if not replace and blobs else None
        if last_old is not None and blobs[0][0] <= last_old:
            raise OffsetsTaken(f"kafka-log writer: {tree.uri(folder)} already holds offsets up to {last_old}; new "
                               f"rows start at {blobs[0][0]} (mode('overwrite') replaces the segments)")  # fmt: skip
        seg, base = bytearray(), None
        ends: list[tuple[int | None, bytes]] = [(None, b"")]
        for start, blob in [*blobs, *ends]:
            if base is not None and (start is None or len(seg) + len(blob) > segment_bytes):
                staged += [(str(p), d) for p, d in segment_files(PurePosixPath(f"{folder}/{base:020d}.log"), seg, base)]
                seg, base = bytearray(), None
            if start is not None:
                base = start if base is None else base
                seg += blob
    marker = tree.join(MARKER)
    tree.remove(marker)  # not complete again until the last file is in place
    if replace:  # the whole target is replaced: every partition folder's segment files go
        for name, is_dir in tree.listdir(tree.root):
            if is_dir and "-" in name and not name.startswith("."):
                folder = tree.join(name)
                remove += [f"{folder}/{n}" for n, d in tree.listdir(folder)
                           if not d and n.rsplit(".", 1)[-1] in ("log", "index", "timeindex", "txnindex")]  # fmt: skip
    tree.write_all(staged)
    keep = {p for p, _ in staged}
    for p in remove:
        if p not in keep:
            tree.remove(p)
    for folder in {p.rsplit("/", 1)[0] for p in remove}:
        tree.remove_empty(folder)
    written = [tree.uri(p) for p, _ in staged if p.endswith(".log")]
    import json

    tree.write_all([(marker, json.dumps({"tool": "kafka-log writer", "segments_written": len(written)}).encode())])
    return written
