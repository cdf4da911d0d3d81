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


# ------------------------------------------------------------------ broker text files, read by Kafka's rules
# Each reader below follows the Java class that reads the file when a broker starts, cited in its docstring;
# what that class accepts is healthy here, what it throws on is a problem, and what it repairs on load is a
# problem that says so.

_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")  # java.util.regex's \s
_JAVA_COLON_SPACE = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataReadBuffer's ":\s+"


def java_split(pattern: re.Pattern, line: str) -> list[str]:
    """``String.split(regex)``: the parts, trailing empty strings dropped (a leading one kept)."""
    parts = pattern.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_lines(data: bytes | str) -> tuple[list[str], str | None]:
    """The lines ``java.io.BufferedReader.readLine`` returns for a file read as UTF-8 (ends at ``\\n``, ``\\r``
    or ``\\r\\n``; a last terminator starts no empty line), or a problem when the bytes are not UTF-8 (Kafka's
    ``Files.newBufferedReader`` throws ``MalformedInputException`` then)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            return [], f"byte {e.start}: not UTF-8, which Kafka reads this file as"
    lines = re.split(r"\r\n|\r|\n", data)
    if lines and lines[-1] == "":
        lines.pop()
    return lines, None


def java_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt`` (``bits`` 32) or ``Long.parseLong`` (64): an optional sign then decimal digits (any
    Unicode digit, as ``Character.digit``), in range; None where Java throws ``NumberFormatException``."""
    import unicodedata

    body = text[1:] if text[:1] in "+-" else text
    if not body or any(unicodedata.decimal(c, None) is None for c in body):
        return None
    value = int("".join(str(unicodedata.decimal(c)) for c in body)) * (-1 if text[:1] == "-" else 1)
    return value if -(1 << (bits - 1)) <= value < 1 << (bits - 1) else None


def java_uuid(text: str) -> bytes | None:
    """``org.apache.kafka.common.Uuid.fromString``: at most 24 characters, ``Base64.getUrlDecoder()`` (padding
    optional but exact; the bits past the 16 bytes ignored, as Java's decoder does), 16 bytes; else None."""
    import base64

    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*(==?)?", text) or len(text.rstrip("=")) % 4 == 1:
        return None
    if "=" in text and len(text) % 4:
        return None  # padding present but not completing a 4-character unit: Java throws
    body = text.rstrip("=")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return raw if len(raw) == 16 else None


def _checkpoint(data, fields: tuple[tuple[str, int], ...], shape: str) -> tuple[list[dict], list[str]]:
    """A checkpoint file as ``org.apache.kafka.server.common.CheckpointFile.CheckpointReadBuffer`` reads it:
    no first line (an empty file, as brokers create them) or no count line is no entries; else the version
    must be 0 (``Integer.parseInt``, no spaces), the count an int, each further line ``\\s+``-separated
    fields (``fields``: name and Java width, 0 for a string; a line starting with a space has an empty first
    field), and the count must match the lines. Every case Kafka throws on is one problem."""
    lines, bad = java_lines(data)
    if bad:
        return [], [bad]
    if not lines:
        return [], []
    version = java_int(lines[0])
    if version is None:
        return [], [f"line 1: {lines[0]!r} is not a version number (malformed line, which Kafka refuses)"]
    if version != 0:
        return [], [f"unknown version {version} (Kafka reads version 0 and refuses any other)"]
    if len(lines) == 1:
        return [], []
    count = java_int(lines[1])
    if count is None:
        return [], [f"line 2: {lines[1]!r} is not an entry count (malformed line, which Kafka refuses)"]
    entries, problems = [], []
    for i, line in enumerate(lines[2:], start=3):
        parts = java_split(_JAVA_SPACE, line)
        values = [p if not bits else java_int(p, bits) for p, (_, bits) in zip(parts, fields)]
        if len(parts) != len(fields) or None in values:
            problems.append(f"line {i}: {line!r} is not '{shape}' (malformed line, which Kafka refuses)")
            continue
        entries.append(dict(zip((name for name, _ in fields), values)))
    if count != len(lines) - 2:
        problems.append(f"the count line says {count} entries, the file holds {len(lines) - 2} (Kafka refuses it)")
    return entries, problems


def read_leader_epoch_checkpoint(path: Path) -> tuple[list[dict], list[str]]:
    return parse_leader_epoch_checkpoint(Path(path).read_bytes())


def parse_leader_epoch_checkpoint(data: bytes | str) -> tuple[list[dict], list[str]]:
    """A ``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``: ``epoch startOffset`` lines, int32 and
    int64), then as ``LeaderEpochFileCache`` loads it: a negative epoch or offset is refused; an entry whose
    epoch or start offset does not rise above the one before makes the cache drop the earlier entries (its
    writer never writes such a file), said as a problem."""
    entries, problems = _checkpoint(data, (("epoch", 32), ("start_offset", 64)), "epoch startOffset")
    for e in entries:
        if e["epoch"] < 0 or e["start_offset"] < 0:
            problems.append(f"epoch {e['epoch']} at {e['start_offset']}: negative (Kafka refuses the entry)")
    for a, b in zip(entries, entries[1:]):
        if b["epoch"] <= a["epoch"] or b["start_offset"] < a["start_offset"]:
            problems.append(f"epoch {b['epoch']} at {b['start_offset']} does not follow epoch {a['epoch']} at "
                            f"{a['start_offset']} (Kafka drops epoch {a['epoch']} on load)")  # fmt: skip
    return entries, problems


def read_offset_checkpoint(path: Path) -> tuple[list[dict], list[str]]:
    """A broker's offset checkpoint (recovery points, high watermarks, log start offsets, cleaner offsets):
    ``OffsetCheckpointFile``, ``topic partition offset`` lines (a string, an int32, an int64)."""
    return parse_offset_checkpoint(Path(path).read_bytes())


def parse_offset_checkpoint(data: bytes | str) -> tuple[list[dict], list[str]]:
    return _checkpoint(data, (("topic", 0), ("partition", 32), ("offset", 64)), "topic partition offset")


def read_partition_metadata(path: Path) -> tuple[list[dict], list[str]]:
    return parse_partition_metadata(Path(path).read_bytes())


def parse_partition_metadata(data: bytes | str) -> tuple[list[dict], list[str]]:
    """``partition.metadata`` as ``PartitionMetadataReadBuffer`` reads it: two lines, each split at ``:\\s+``
    into exactly two parts (the names before the colon are not checked); the version an int of at least 0
    (a newer one is read, for downgrades); the topic id a ``Uuid`` that is not zero; later lines ignored.
    An empty file fails in Kafka (a null line), so it is a problem here."""
    lines, bad = java_lines(data)
    if bad:
        return [], [bad]
    fields: dict[str, str] = {}
    for i, (what, line) in enumerate(zip(("version", "topic_id"), [*lines[:2], None, None]), start=1):
        parts = java_split(_JAVA_COLON_SPACE, line) if line is not None else []
        if len(parts) != 2:
            return [fields], [f"line {i}: {line!r} is not '{what}: <value>' (Kafka refuses the file)"]
        fields[what] = parts[1]
        version = java_int(parts[1]) if what == "version" else 0
        if version is None or version < 0:
            return [fields], [f"unknown version {parts[1]!r} (Kafka reads 0 and up)"]
    problem = topic_id_problem(fields["topic_id"])
    return [fields], [f"topic_id: {problem}"] if problem else []


def java_properties(data: bytes) -> dict[str, str]:
    """``java.util.Properties.load`` of an input stream: ISO-8859-1; ``#``/``!`` comment lines; a line ending
    in an odd number of backslashes continues on the next (its leading blanks skipped); the key ends at the
    first unescaped ``=``, ``:`` or blank; escapes ``\\t \\n \\r \\f \\uXXXX``, and a backslash before any
    other character stands for that character."""
    props: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", data.decode("latin-1"))
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]  # a continuation at the end of the file continues on nothing
        m = re.match(r"((?:\\.|[^=: \t\f\\])*)[ \t\f]*[=:]?[ \t\f]*(.*)", line, re.S)
        assert m is not None  # the pattern matches any line
        props[_java_unescape(m.group(1))] = _java_unescape(m.group(2))
    return props


def _java_unescape(text: str) -> str:
    def one(m: re.Match) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16)) if re.fullmatch(r"u[0-9a-fA-F]{4}", c) else c
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|u|.)", one, text, flags=re.S)


def read_meta_properties(path: Path) -> tuple[list[dict], list[str]]:
    return parse_meta_properties(Path(path).read_bytes())


def parse_meta_properties(data: bytes) -> tuple[list[dict], list[str]]:
    """A log dir's ``meta.properties`` as ``MetaProperties.Builder`` reads it (``PropertiesUtils``, Java
    properties): ``version`` 0 when absent (trimmed, 0 or 1); version 0 may carry ``broker.id``, version 1
    needs ``node.id`` and ``cluster.id``; ids are ``Integer.parseInt``; ``directory.id`` a ``Uuid``."""
    props = java_properties(data)
    problems = []
    version = java_int(props.get("version", "0").strip())
    if version not in (0, 1):
        problems.append(f"unknown version {props.get('version')!r} (Kafka reads 0 or 1)")
    for key in ("cluster.id", "node.id") if version == 1 else ():
        if key not in props:
            problems.append(f"version 1 needs {key} (Kafka refuses the file without it)")
    for key in ("broker.id",) if version == 0 else ("node.id",):
        if key in props and java_int(props[key]) is None:
            problems.append(f"{key} {props[key]!r} is not an integer (Kafka refuses it)")
    if "directory.id" in props and java_uuid(props["directory.id"]) is None:
        problems.append(f"directory.id {props['directory.id']!r} is not a Uuid (Kafka refuses it)")
    return [props], problems


def topic_id_problem(text: str) -> str | None:
    """Why ``text`` is not a topic id Kafka reads (``Uuid.fromString``, and not the zero Uuid, which Kafka
    reserves), or None."""
    raw = java_uuid(text)
    if raw is None:
        return f"{text!r} is not a Uuid (Uuid.fromString: URL-safe base64 of 16 bytes)"
    if not any(raw):
        return f"{text!r} is the zero Uuid, which Kafka reserves"
    return None


def read_quorum_state(path: Path) -> tuple[list[dict], list[str]]:
    """KRaft's ``quorum-state`` as ``FileQuorumStateStore`` reads it: the first line, a JSON object with a
    ``data_version`` Kafka knows (0 or 1) and the fields of QuorumStateData (``leaderEpoch``...); an empty
    file is refused ("File ended prematurely")."""
    lines, bad = java_lines(Path(path).read_bytes())
    if bad or not lines:
        return [], [bad or "empty (Kafka refuses it: file ended prematurely)"]
    try:
        doc = json.loads(lines[0])
    except ValueError as e:
        return [], [f"line 1 is not JSON: {e}"]
    if not isinstance(doc, dict) or "leaderEpoch" not in doc:
        return [], ["not a quorum-state file (no leaderEpoch)"]
    if doc.get("data_version") not in (0, 1):
        return [doc], [f"data_version {doc.get('data_version')!r} is not one Kafka reads (0 or 1)"]
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
