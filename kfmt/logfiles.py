"""The other files of a Kafka log directory, read and sanity-checked as the broker does.

``.index`` (8-byte entries: int32 relative offset, int32 position), ``.timeindex`` (12 bytes: int64
timestamp, int32 relative offset), ``.txnindex`` (34 bytes: int16 version, int64 producerId, int64
firstOffset, int64 lastOffset, int64 lastStableOffset), producer-state ``.snapshot`` (int16 version,
uint32 CRC-32C of everything after it, int32 count, then per producer: int64 producerId, int16 epoch,
int32 lastSequence, int64 lastOffset, int32 offsetDelta, int64 timestamp, int32 coordinatorEpoch,
int64 currentTxnFirstOffset; ProducerStateManager), ``leader-epoch-checkpoint`` (text: version, count,
then ``epoch startOffset`` lines), ``partition.metadata`` (text: ``version: 0``, ``topic_id: ...``).
KRaft snapshots (``<offset>-<epoch>.checkpoint``) are record batches, read like segments.

Each reader returns ``(entries, problems)``: problems are one-line strings, never exceptions.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from pathlib import Path

SNAPSHOT_FIELDS = ("producer_id", "epoch", "last_sequence", "last_offset", "offset_delta", "timestamp",
                   "coordinator_epoch", "current_txn_first_offset")  # fmt: skip
_TXN = struct.Struct(">hqqqq")
TXN_FIELDS = ("version", "producer_id", "first_offset", "last_offset", "last_stable_offset")


#: the broker's per-log-dir checkpoint files: text, version 0, a count, then ``topic partition offset`` lines
OFFSET_CHECKPOINTS = {
    "recovery-point-offset-checkpoint": "recovery point",
    "replication-offset-checkpoint": "high watermark",
    "log-start-offset-checkpoint": "log start offset",
    "cleaner-offset-checkpoint": "cleaner offset",
}
_NAMED = {
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "meta.properties": "meta_properties",
    "quorum-state": "quorum_state",
    **dict.fromkeys(OFFSET_CHECKPOINTS, "offset_checkpoint"),
}
#: files of a log directory kfmt knows and does not read, and why (a dump names them instead of ignoring them)
NOT_READ = {
    ".deleted": "a file Kafka is deleting (.deleted suffix)",
    ".cleaned": "a log cleaner's output not yet swapped in (.cleaned suffix)",
    ".swap": "a segment being swapped in by the log cleaner (.swap suffix)",
    ".lock": "the log dir's lock file",
    ".kafka_cleanshutdown": "the marker of a clean shutdown",
    ".tmp": "a temporary file",
    "_KFMT_SUCCESS": "kfmt's marker of a finished write",
    "_KFMT_PENDING": "kfmt's journal of a commit (being applied, or interrupted)",
}
#: a KRaft snapshot: ``<20-digit end offset>-<10-digit epoch>.checkpoint`` (and ``bootstrap.checkpoint``)
SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def snapshot_id(path: Path) -> tuple[int, int] | None:
    """``(end offset, epoch)`` of a KRaft snapshot's name; ``(-1, -1)`` for ``bootstrap.checkpoint``; else None."""
    if path.name == "bootstrap.checkpoint":
        return -1, -1
    m = SNAPSHOT_NAME.match(path.name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def not_read(path: Path) -> str | None:
    """Why a file kfmt knows is not read (a segment being deleted, the lock...), else None."""
    return next((why for suffix, why in NOT_READ.items() if path.name.endswith(suffix)), None)


def kind_of(path: Path) -> str | None:
    """What a file of a log directory holds, by its name (None: not a Kafka log file)."""
    name = path.name
    if name in _NAMED:
        return _NAMED[name]
    for suffix, kind in ((".log", "log"), (".index", "index"), (".timeindex", "timeindex"),
                         (".txnindex", "txnindex"), (".snapshot", "snapshot"), (".checkpoint", "log")):  # fmt: skip
        if name.endswith(suffix):
            return kind
    return None


def base_offset_of(path: Path) -> int:
    stem = path.name.split(".")[0].split("-")[0]
    return int(stem) if stem.isdigit() else 0


def _entries(data: bytes, st: struct.Struct) -> tuple[list, int]:
    """Entries of a preallocated index (trailing all-zero entries are free space), and any leftover bytes."""
    n = len(data) // st.size
    out = [st.unpack_from(data, i * st.size) for i in range(n)]
    while len(out) > 1 and not any(out[-1]):
        out.pop()
    if len(out) == 1 and not any(out[0]) and st.size == 12:
        out.pop()  # an empty time index is all zeros
    return out, len(data) % st.size


def read_offset_index(path: Path) -> tuple[list[tuple[int, int]], list[str]]:
    """``(offset, position)`` entries (absolute offsets) and the broker's sanity check (OffsetIndex)."""
    return parse_offset_index(Path(path).read_bytes(), base_offset_of(path))


def parse_offset_index(data: bytes, base: int) -> tuple[list[tuple[int, int]], list[str]]:
    """:func:`read_offset_index` on the bytes of a segment's ``.index`` with base offset ``base``."""
    raw, extra = _entries(data, struct.Struct(">ii"))
    problems = [f"size is not a multiple of 8 ({extra} trailing byte(s))"] if extra else []
    entries = [(base + rel, pos) for rel, pos in raw]
    for i in range(1, len(entries)):
        if entries[i][0] <= entries[i - 1][0] or entries[i][1] <= entries[i - 1][1]:
            problems.append(f"entry {i} ({entries[i][0]} -> {entries[i][1]}) does not follow entry {i - 1} "
                            f"({entries[i - 1][0]} -> {entries[i - 1][1]}): offsets and positions must increase")  # fmt: skip
    if entries and entries[-1][0] < base:
        problems.append(f"the last offset {entries[-1][0]} is less than the base offset {base}")
    return entries, problems


def read_time_index(path: Path) -> tuple[list[tuple[int, int]], list[str]]:
    """``(timestamp, offset)`` entries (absolute offsets) and the broker's sanity check (TimeIndex)."""
    base = base_offset_of(path)
    raw, extra = _entries(Path(path).read_bytes(), struct.Struct(">qi"))
    problems = [f"size is not a multiple of 12 ({extra} trailing byte(s))"] if extra else []
    entries = [(ts, base + rel) for ts, rel in raw]
    for i in range(1, len(entries)):
        if entries[i][0] < entries[i - 1][0] or entries[i][1] < entries[i - 1][1]:
            problems.append(f"entry {i} ({entries[i][0]}, offset {entries[i][1]}) goes backwards from entry {i - 1} "
                            f"({entries[i - 1][0]}, offset {entries[i - 1][1]})")  # fmt: skip
    if entries and entries[-1][1] < base:
        problems.append(f"the last offset {entries[-1][1]} is less than the base offset {base}")
    return entries, problems


def read_txn_index(path: Path) -> tuple[list[dict], list[str]]:
    data = Path(path).read_bytes()
    n, extra = divmod(len(data), _TXN.size)
    problems = [f"size is not a multiple of {_TXN.size} ({extra} trailing byte(s))"] if extra else []
    entries = [dict(zip(TXN_FIELDS, _TXN.unpack_from(data, i * _TXN.size))) for i in range(n)]
    for i, e in enumerate(entries):
        if e["version"] != 0:
            problems.append(f"entry {i}: unknown version {e['version']}")
        if e["first_offset"] > e["last_offset"]:
            problems.append(f"entry {i}: first offset {e['first_offset']} after last offset {e['last_offset']}")
    return entries, problems


def _snapshot_codec():
    """The producer snapshot's codec, generated from Kafka's ProducerSnapshot spec (schemas/messages)."""
    from kfmt.payloads import _codec

    return _codec("producer_snapshot")


def read_producer_snapshot(path: Path) -> tuple[list[dict], list[str]]:
    """A producer-state snapshot's entries, read by the schema lowered from Kafka's spec (version 1, a CRC-32C
    of everything after it, the entries); a corrupt one still shows its entries when they can be read."""
    from kfmt.runtime.errors import ChecksumError, CodecError

    codec = _snapshot_codec()
    data = Path(path).read_bytes()
    problems = []
    try:
        snap = codec.decode(data)
    except ChecksumError as e:
        problems.append(f"{e.path}: {e.reason.removesuffix(' (corrupt data)')} (corrupt snapshot)")
        try:
            snap = codec.decode(data, verify_crc=False)
        except CodecError as again:
            return [], [*problems, f"and its entries cannot be read: {again}"]
    except CodecError as e:
        return [], [f"not a producer snapshot Kafka reads: {e}"]
    return [{f: getattr(p, f) for f in SNAPSHOT_FIELDS} for p in snap.producer_entries], problems


def producer_snapshot(entries: list[dict]) -> bytes:
    """The bytes of a producer-state snapshot holding ``entries`` (dicts of SNAPSHOT_FIELDS)."""
    codec = _snapshot_codec()
    from generated.messages.producer_snapshot.model import ProducerEntry, ProducerSnapshot

    return codec.encode(ProducerSnapshot(version=1, producer_entries=[ProducerEntry(**e) for e in entries]))


def read_leader_epoch_checkpoint(path: Path) -> tuple[list[dict], list[str]]:
    return parse_leader_epoch_checkpoint(Path(path).read_text(errors="replace"))


def parse_leader_epoch_checkpoint(text: str) -> tuple[list[dict], list[str]]:
    return _checkpoint_lines(text, ("epoch", "start_offset"))


def _checkpoint_lines(text: str, names: tuple[str, ...]) -> tuple[list[dict], list[str]]:
    lines = text.splitlines()
    problems: list[str] = []
    if len(lines) < 2 or not lines[0].strip().isdigit() or not lines[1].strip().isdigit():
        return [], ["not a checkpoint file (expected a version line and a count line)"]
    count = int(lines[1])
    entries = []
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != len(names) or not all(p.lstrip("-").isdigit() for p in parts):
            problems.append(f"line {i}: {line!r} is not {len(names)} integers")
            continue
        entries.append(dict(zip(names, map(int, parts))))
    if count != len(entries) + len([p for p in problems if p.startswith("line")]):
        problems.append(f"the count line says {count} entries, the file holds {len(lines) - 2}")
    for a, b in zip(entries, entries[1:]):
        if b["epoch"] <= a["epoch"] or b["start_offset"] < a["start_offset"]:
            problems.append(f"epoch {b['epoch']} at {b['start_offset']} does not follow epoch {a['epoch']} at "
                            f"{a['start_offset']}")  # fmt: skip
    return entries, problems


def read_partition_metadata(path: Path) -> tuple[list[dict], list[str]]:
    return parse_partition_metadata(Path(path).read_text(errors="replace"))


def _key_values(lines, sep: str, shape: str, comments: str = "") -> tuple[dict[str, str], list[str]]:
    """``key<sep>value`` lines (blank lines and lines starting with one of ``comments`` skipped), and a problem
    per line that is not ``shape``."""
    fields: dict[str, str] = {}
    problems: list[str] = []
    for i, line in enumerate(lines, start=1):
        if not line.strip() or (comments and line[:1] in comments):
            continue
        key, found, value = line.partition(sep)
        if not found:
            problems.append(f"line {i}: {line!r} is not '{shape}'")
            continue
        fields[key.strip()] = value.strip()
    return fields, problems


def parse_partition_metadata(text: str) -> tuple[list[dict], list[str]]:
    fields, problems = _key_values(text.splitlines(), ":", "key: value")
    if fields.get("version") != "0":
        problems.append(f"unknown version {fields.get('version')!r} (Kafka writes 0)")
    if "topic_id" not in fields:
        problems.append("no topic_id")
    elif topic_id_problem(fields["topic_id"]):
        problems.append(f"topic_id: {topic_id_problem(fields['topic_id'])}")
    return [fields], problems


def read_offset_checkpoint(path: Path) -> tuple[list[dict], list[str]]:
    """A broker's offset checkpoint (recovery points, high watermarks, log start offsets, cleaner offsets):
    ``version`` 0, a count line, then ``topic partition offset`` lines (OffsetCheckpointFile)."""
    return parse_offset_checkpoint(Path(path).read_text(errors="replace"))


def parse_offset_checkpoint(text: str) -> tuple[list[dict], list[str]]:
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].strip().isdigit() or not lines[1].strip().isdigit():
        return [], ["not a checkpoint file (expected a version line and a count line)"]
    problems = [] if lines[0].strip() == "0" else [f"unknown version {lines[0].strip()} (Kafka writes 0)"]
    entries = []
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            problems.append(f"line {i}: {line!r} is not 'topic partition offset'")
            continue
        entries.append({"topic": parts[0], "partition": int(parts[1]), "offset": int(parts[2])})
    if int(lines[1]) != len(lines) - 2:
        problems.append(f"the count line says {int(lines[1])} entries, the file holds {len(lines) - 2}")
    return entries, problems


def read_meta_properties(path: Path) -> tuple[list[dict], list[str]]:
    """A log dir's ``meta.properties`` (Java properties): version 0 needs ``broker.id``, version 1 (KRaft)
    ``cluster.id`` and ``node.id``; a ``directory.id`` is a topic-id-like Uuid."""
    lines = [line.strip() for line in Path(path).read_text(errors="replace").splitlines()]
    props, problems = _key_values(lines, "=", "key=value", comments="#!")
    need = {"0": ("broker.id",), "1": ("cluster.id", "node.id")}.get(props.get("version", ""))
    if need is None:
        problems.append(f"unknown version {props.get('version')!r} (Kafka writes 0 or 1)")
    for key in need or ():
        if key not in props:
            problems.append(f"version {props['version']} needs {key}")
    for key in ("broker.id", "node.id"):
        if key in props and not props[key].lstrip("-").isdigit():
            problems.append(f"{key} {props[key]!r} is not an integer")
    if "directory.id" in props and topic_id_problem(props["directory.id"]):
        problems.append(f"directory.id: {topic_id_problem(props['directory.id'])}")
    return [props], problems


def topic_id_problem(text: str) -> str | None:
    """Why ``text`` is not a valid Kafka Uuid (22 characters of URL-safe base64 for 16 bytes, not all
    zero), or None."""
    import base64

    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", text):
        return f"{text!r} is not a Uuid (22 characters of URL-safe base64)"
    raw = base64.urlsafe_b64decode(text + "==")
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text:
        return f"{text!r} is not a Uuid (its last character has bits past the 16 bytes)"
    if not any(raw):
        return f"{text!r} is the zero Uuid, which Kafka reserves"
    return None


def read_quorum_state(path: Path) -> tuple[list[dict], list[str]]:
    """KRaft's ``quorum-state`` (JSON: leaderId, leaderEpoch, votedId, ..., data_version)."""
    try:
        doc = json.loads(Path(path).read_text(errors="replace"))
    except ValueError as e:
        return [], [f"not JSON: {e}"]
    if not isinstance(doc, dict) or "leaderEpoch" not in doc:
        return [], ["not a quorum-state file (no leaderEpoch)"]
    return [doc], []


# each reader returns (entries, problems): entries as tuples (or dicts), problems as strings
READERS: dict[str, Callable[[Path], tuple[list, list]]] = {
    "index": read_offset_index,
    "timeindex": read_time_index,
    "txnindex": read_txn_index,
    "snapshot": read_producer_snapshot,
    "leader_epoch_checkpoint": read_leader_epoch_checkpoint,
    "partition_metadata": read_partition_metadata,
    "offset_checkpoint": read_offset_checkpoint,
    "meta_properties": read_meta_properties,
    "quorum_state": read_quorum_state,
}
