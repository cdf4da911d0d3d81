"""Rows (the source's columns) back into batches and segments: what the Spark writer runs on executors
(``encode_rows``) and on the driver when a write job commits (``commit_partitions``)."""

from __future__ import annotations

import kfmt
from kfmt.logdir.names import folder_name

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
            hs = [(_text(h["key"]), h["value"]) for h in (r.get("headers") or [])]
            recs.append(kfmt.Record(key=r.get("key"), value=r.get("value"), headers=hs,
                                    timestamp=-1 if ts is None else ts, offset=r["offset"]))  # fmt: skip
        out += kfmt.encode_batch(recs, magic=magic, codec=codec if not fields.get("is_control") else "none",
                                 base_offset=recs[0].offset, keep_offsets=True, **fields)  # fmt: skip
    return bytes(out)


def _text(key):
    """A header key as kfmt's encoders take it: text, or bytes that are not UTF-8 kept as they are (surrogateescape),
    as the JVM engine writes a string column's bytes."""
    return key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key


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
    from kfmt.logdir.files import parse_leader_epoch_checkpoint, parse_partition_metadata

    entries: list[tuple[int, int]] = []
    ckpt = f"{folder}/leader-epoch-checkpoint"
    if not replace and tree.is_file(ckpt):
        old, problems = parse_leader_epoch_checkpoint(tree.read(ckpt))
        if not problems:
            entries = [(e["epoch"], e["start_offset"]) for e in old]
    for b in batches:
        epoch = getattr(b, "partition_leader_epoch", -1)
        if b.magic >= 2 and epoch >= 0 and (not entries or epoch > entries[-1][0]):
            entries.append((epoch, b.base_offset))
    text = "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)
    meta = f"{folder}/partition.metadata"
    if not replace and tree.is_file(meta):
        fields, problems = parse_partition_metadata(tree.read(meta))
        if not problems and not topic_id:
            topic_id = fields[0]["topic_id"]
    return [(ckpt, text.encode()), (meta, f"version: 0\ntopic_id: {topic_id or new_topic_id()}\n".encode())]


class OffsetsTaken(ValueError):
    """Appending rows that start at or before an offset the partition folder already holds."""


def folder_last_offset(tree, folder: str, storage=None) -> int | None:
    """The last offset in a partition folder of ``tree`` (a :class:`kfmt.storage.Tree`), read from its last
    segment; None when it holds no segment."""
    from kfmt.log.offsets import last_offset
    from kfmt.logdir.layout import Segment

    logs = [n for n, d in tree.listdir(folder) if not d and n.endswith(".log")]
    if not logs:
        return None
    path = f"{folder}/{logs[-1]}"
    return last_offset(Segment("", -1, 0, tree.uri(path), tree.fs.get_file_info(path).size), storage)


def _staged_entries(tree, files) -> list:
    """The batches of a partition's staged files, ordered by offset, each file checked against what its task
    reported (``(path, records, bytes)``; a bare path reports nothing): a store that acknowledged an upload
    it did not keep fails the job here."""
    from kfmt.log.batches import written_entries
    from kfmt.table.commit import CommitError

    entries = []
    for f in files:
        path, rows, nbytes = (f, None, None) if isinstance(f, str) else (tuple(f) + (None,))[:3]
        data = tree.read(path)
        got = 0
        for pos, end, b in written_entries(data):  # each batch checked whole (its CRC), its records counted
            entries.append((b.base_offset, b.last_offset, data[pos:end], b))
            got += b.records
        if (nbytes is not None and len(data) != nbytes) or (rows is not None and got != rows):
            raise CommitError(f"kafka-log writer: {tree.uri(path)} holds {len(data)} bytes and {got} record(s); its "
                              f"task wrote {nbytes} bytes and {rows} record(s); nothing was committed")  # fmt: skip
    entries.sort(key=lambda e: (e[0], e[1]))
    return entries


def _blobs(entries) -> list[tuple[int, bytes, tuple[int, int, int]]]:
    """``(base offset, bytes, (batches, records, last offset))`` per batch, the facts from the batches the
    staged files were read as; batches whose offsets interleave (one input batch split across tasks) merged
    back into one, whose facts are read from the merged bytes."""
    blobs: list[tuple[int, bytes, tuple[int, int, int]]] = []
    cluster: list = []
    top = -1
    for e in entries + [None]:
        if e is not None and cluster and e[0] <= top:
            cluster.append(e)
            top = max(top, e[1])
            continue
        if len(cluster) == 1:
            b = cluster[0][3]
            blobs.append((cluster[0][0], cluster[0][2], (1, b.records, b.last_offset)))
        elif cluster:
            blobs.append((cluster[0][0], *_facts(_merged([_decoded(c[2]) for c in cluster]))))
        if e is not None:
            cluster, top = [e], e[1]
    return blobs


def _decoded(blob: bytes):
    """The one batch ``blob`` holds, decoded (batches to merge)."""
    from kfmt.log.batches import scan

    return next(b for _, _, b in scan(blob))


def _facts(blob: bytes) -> tuple[bytes, tuple[int, int, int]]:
    from kfmt.log.batches import written_entries

    bs = [b for _, _, b in written_entries(blob)]
    return blob, (len(bs), sum(b.records for b in bs), bs[-1].last_offset)


def _segments(folder: str, blobs, segment_bytes: int) -> list[tuple[str, bytes, dict]]:
    """Segments rolled at ``segment_bytes`` with their indexes, as ``(path, data, facts)``; ``blobs`` are
    ``(base offset, bytes, (batches, records, last offset))`` and a segment's facts are the batches,
    records and last offset it holds, for the commit to check wherever it lands."""
    from pathlib import PurePosixPath

    from kfmt.logdir.indexes import segment_files

    out: list[tuple[str, bytes, dict]] = []
    seg, base, facts = bytearray(), None, {"batches": 0, "records": 0, "last_offset": None}
    for start, blob, (nb, nr, last) in [*blobs, (None, b"", (0, 0, None))]:
        if base is not None and (start is None or len(seg) + len(blob) > segment_bytes):
            for p, d in segment_files(PurePosixPath(f"{folder}/{base:020d}.log"), bytes(seg), base):
                out.append((str(p), d, facts if str(p).endswith(".log") else {}))
            seg, base, facts = bytearray(), None, {"batches": 0, "records": 0, "last_offset": None}
        if start is not None:
            base = start if base is None else base
            seg += blob
            facts = {"batches": facts["batches"] + nb, "records": facts["records"] + nr, "last_offset": last}
    return out


def table_topic_ids(tree) -> dict[str, dict[str, list[str]]]:
    """``{topic: {topic id: [partition folders]}}`` of a table's partition folders (their ``partition.metadata``;
    folders whose name Kafka would not load, and unreadable files, left out)."""
    from kfmt.logdir.files import parse_partition_metadata
    from kfmt.logdir.names import parse_folder

    found: dict[str, dict[str, list[str]]] = {}
    try:
        listed = tree.listdir(tree.root)
    except FileNotFoundError:
        return found
    for name, is_dir in listed:
        tp = parse_folder(name) if is_dir and not name.startswith(".") else None
        meta = f"{tree.join(name)}/partition.metadata"
        if tp is None or not tree.is_file(meta):
            continue
        fields, problems = parse_partition_metadata(tree.read(meta))
        if not problems:
            found.setdefault(tp[0], {}).setdefault(fields[0]["topic_id"], []).append(name)
    return found


def _ids_to_write(tree, topics, given: dict, replace: bool) -> dict[str, str]:
    """The topic id each topic written gets: the one given (``topic_ids``), else the one the table's folders of
    that topic hold (a topic keeps its id across writes), else a new one shared by its partitions. An append that
    would give a topic a second id in the table is refused."""
    have = table_topic_ids(tree)
    ids = {}
    for topic in sorted(set(topics)):
        held = have.get(topic, {})
        if len(held) > 1 and not replace:
            raise ValueError(f"kafka-log writer: topic {topic} already has {len(held)} topic ids in "
                             f"{tree.uri(tree.root)} ({_listed(held)}); a broker would refuse the table")  # fmt: skip
        if topic in given and held and set(held) != {given[topic]} and not replace:
            raise ValueError(f"kafka-log writer: topic_ids gives {topic} the id {given[topic]}, but its folders in "
                             f"{tree.uri(tree.root)} hold {_listed(held)}; one topic has one id (mode('overwrite') "
                             "replaces the table)")  # fmt: skip
        ids[topic] = given.get(topic) or (next(iter(held)) if held else new_topic_id())
    return ids


def _listed(held: dict) -> str:
    return ", ".join(f"{i} in {', '.join(folders)}" for i, folders in sorted(held.items()))


def _partition_files(tree, folder, entries, topic_id, replace, segment_bytes):
    """Every file a partition's commit writes (segments, indexes, broker files) and its first offset."""
    made = broker_files(tree, folder, [e[3] for e in entries], topic_id, replace)
    files: list[tuple[str, bytes, dict]] = [(p, d, {}) for p, d in made]
    blobs = _blobs(entries)
    return files + _segments(folder, blobs, segment_bytes), (blobs[0][0] if blobs else None)


def commit_partitions(root, pieces: dict, *, segment_bytes=1024**3, replace=False, topic_ids=None,
                      storage=None) -> list[str]:  # fmt: skip
    """Put the staged batches of each topic-partition (``{(topic, partition): [files]}``, a file being a
    path or ``(path, records, bytes)`` as its task reported it) in place as segments named by base offset,
    with their indexes, ``leader-epoch-checkpoint`` and ``partition.metadata`` (``topic_ids``: ``{topic:
    id}``; else the folder's, else a new one per topic), as one commit of :mod:`kfmt.table.commit`: all of it
    becomes visible at once or none of it, one writer at a time. ``root`` is a local folder or a store's
    URI (``storage``: options of :mod:`kfmt.storage`).  ``replace`` removes the target's old segments;
    otherwise new offsets must come after the ones already there (:class:`OffsetsTaken`)."""
    from kfmt.storage import Tree
    from kfmt.table import commit

    tree = Tree(str(root), storage)
    names = {tp: folder_name(*tp) for tp in pieces}  # Kafka's names only: nothing outside the table, never renamed
    ids = _ids_to_write(tree, [t for t, _ in pieces], dict(topic_ids or {}), replace)
    files: list[tuple[str, bytes, dict]] = []
    starts: dict[str, int] = {}
    for (topic, part), staged in sorted(pieces.items()):
        folder = tree.join(names[(topic, part)])
        out, first = _partition_files(tree, folder, _staged_entries(tree, staged), ids[topic], replace, segment_bytes)
        files += out
        if first is not None:
            starts[folder] = first

    def check() -> list[str]:
        if replace:
            return _old_files(tree)
        _same_ids(tree, ids)
        for folder, first in starts.items():
            last_old = folder_last_offset(tree, folder, storage)
            if last_old is not None and first <= last_old:
                raise OffsetsTaken(f"kafka-log writer: {tree.uri(folder)} already holds offsets up to {last_old}; "
                                   f"new rows start at {first} (mode('overwrite') replaces the segments)")  # fmt: skip
        return []

    written = [tree.uri(p) for p, _, _ in files if p.endswith(".log")]
    commit.commit(tree, tree.root, files, mode="overwrite" if replace else "append", check=check,
                  marker={"tool": "kafka-log writer", "segments_written": len(written)})  # fmt: skip
    return written


def _same_ids(tree, ids: dict) -> None:
    """Under the table's lock: refuse an append whose topic got another id from a write committed since this one
    chose (two writers giving a new topic its first partitions at once)."""
    have = table_topic_ids(tree)
    for topic, chosen in sorted(ids.items()):
        other = sorted(set(have.get(topic, {})) - {chosen})
        if other:
            raise ValueError(f"kafka-log writer: topic {topic} got the id {other[0]} from a write committed "
                             f"meanwhile in {tree.uri(tree.root)}; this write was not committed: write again")  # fmt: skip


_KAFKA_FILES = ("log", "index", "timeindex", "txnindex")
_BROKER_FILES = ("partition.metadata", "leader-epoch-checkpoint")


def _old_files(tree) -> list[str]:
    """Every partition folder's segment files and broker files (an overwrite replaces the whole target: a
    folder it does not write again keeps no segment and no topic id of the old table)."""
    out = []
    for name, is_dir in tree.listdir(tree.root):
        if is_dir and "-" in name and not name.startswith("."):
            folder = tree.join(name)
            out += [f"{folder}/{n}" for n, d in tree.listdir(folder)
                    if not d and (n.rsplit(".", 1)[-1] in _KAFKA_FILES or n in _BROKER_FILES)]  # fmt: skip
    return out
