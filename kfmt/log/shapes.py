"""How a batch and a record read as JSON, one definition for ``kfmt dump --json`` and the record sets
``kfmt.protocol`` decodes inside messages: text as text, bytes never confused with it, Kafka's derived values
(a record's sequence, a batch's delete horizon, a control record's kind) as Kafka computes them."""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import json
import struct

from kfmt.log.txn import CONTROL_TYPES


def payload(b, how: str):
    """A key, value or header value for JSON: text as a string, anything else as ``{"hex": ...}``
    (``--payload hex/base64``: always encoded), so bytes are never confused with text."""
    if b is None:
        return None
    if how == "hex":
        return b.hex()
    if how == "base64":
        return base64.b64encode(b).decode("ascii")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def _key_bytes(k: str) -> bytes:
    """A header key's bytes as written (kfmt keeps bytes that are not UTF-8 as surrogate escapes)."""
    return k.encode("utf-8", "surrogateescape")


def header_key(k: str, how: str):
    """A header key for JSON: its text; a key that is not UTF-8 as ``{"hex": ..., "kafka": ...}``, its bytes and
    the text Kafka's Java consumer reads (each ill-formed sequence a U+FFFD, by Java's decoder's rules)."""
    if not isinstance(k, str):  # a proposal's integer header key
        return k
    raw = _key_bytes(k)
    got = payload(raw, "utf8")
    if isinstance(got, dict):
        from kfmt.runtime.text import java_utf8

        got["kafka"] = java_utf8(raw)
    return got


def shown(b, how: str) -> str:
    """A key, value or header value for the table: quoted text, ``0x...`` for bytes that are not UTF-8."""
    if b is None:
        return "null"
    if how == "hex":
        return "0x" + b.hex()
    if how == "base64":
        return "base64:" + base64.b64encode(b).decode("ascii")
    try:
        return json.dumps(b.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return "0x" + b.hex()


TS_TYPES = {0: "CreateTime", 1: "LogAppendTime", None: "NoTimestampType"}


def iso(ts) -> str | None:
    """A timestamp in milliseconds as UTC text to the millisecond ("2024-01-30T10:00:00.123Z"); None for none
    (negative) or one out of datetime's range. The text of each second is made once (records of a batch share
    their seconds), its milliseconds added."""
    if ts is None or ts < 0:
        return None
    if type(ts) is int:
        second = _second(ts // 1000)
        return None if second is None else f"{second}.{ts % 1000:03d}Z"
    try:
        return _dt.datetime.fromtimestamp(ts / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z"
    except (OverflowError, OSError, ValueError):
        return None


@functools.lru_cache(maxsize=4096)
def _second(seconds: int) -> str | None:
    try:
        return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).isoformat()[:-6]
    except (OverflowError, OSError, ValueError):
        return None


def control_text(r) -> str | None:
    """``COMMIT coordinatorEpoch 5``, ``LEADER_CHANGE``... for a control record, else None."""
    if not r.control:
        return None
    version, kind = r.control
    name = CONTROL_TYPES.get(kind, f"UNKNOWN({kind})")
    if kind in (0, 1) and r.value is not None and len(r.value) >= 6:
        _, epoch = struct.unpack_from(">hi", r.value)
        return f"{name} coordinatorEpoch {epoch}"
    return name


def sequence_at(b, offset: int) -> int:
    """The producer sequence of the record at ``offset`` (-1 without one), wrapping at Int32.MAX_VALUE as
    Kafka's DefaultRecordBatch.incrementSequence does."""
    if b.base_sequence < 0:
        return -1
    return (b.base_sequence + offset - b.base_offset) % 0x80000000


def delete_horizon(b) -> int | None:
    """A compacted v2 batch's deleteHorizonMs (its base timestamp when attribute bit 6 is set), else None."""
    return b.base_timestamp if getattr(b, "has_delete_horizon", False) else None


def batch_dict(seg, pos, end, b, verified: bool = True) -> dict:
    return {
        "type": "batch", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "size": end - pos, "magic": b.magic, "base_offset": b.base_offset, "last_offset": b.last_offset,
        "count": len(b.records), "codec": b.codec, "timestamp_type": b.timestamp_type,
        "base_timestamp": b.base_timestamp, "max_timestamp": b.max_timestamp, "max_time": iso(b.max_timestamp),
        "crc": b.crc, "is_valid": True if verified else None, "partition_leader_epoch": b.partition_leader_epoch,
        "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
        "last_sequence": sequence_at(b, b.last_offset), "is_transactional": b.is_transactional,
        "is_control": b.is_control, "delete_horizon_ms": delete_horizon(b),
    }  # fmt: skip


def record_dict(seg, pos, b, r, how: str) -> dict:
    return {
        "type": "record", "file": seg.path, "topic": seg.topic, "partition": seg.partition, "position": pos,
        "magic": b.magic, "batch_base_offset": b.base_offset, "offset": r.offset, "timestamp": r.timestamp,
        "time": iso(r.timestamp), "timestamp_type": b.timestamp_type, "sequence": sequence_at(b, r.offset),
        "key_size": _size(r.key), "value_size": _size(r.value), "key": payload(r.key, how),
        "value": payload(r.value, how), "headers": [[header_key(k, how), payload(v, how)] for k, v in r.headers],
        "control": list(r.control) if r.control else None, "control_type": control_text(r),
    }  # fmt: skip


def record_dicts(seg, pos, b, how: str, *, wire: bool = False) -> list[dict]:
    """Every record of batch ``b`` as :func:`record_dict` shapes it (``wire``: without the keys that name a
    segment, as a record set on the wire has none). With payloads as text (``how`` "utf8") and the native backend
    built, the common records are shaped in C (kfmt.runtime.native._shapes; a rare one, such as a control record or
    a header key that is not UTF-8, is handed back here): the same dicts, held equal by tests/test_native.py."""

    def one(r) -> dict:
        return on_the_wire(record_dict(seg, pos, b, r, how)) if wire else record_dict(seg, pos, b, r, how)

    native = _native_shapes() if how == "utf8" else None
    if native is None:
        return [one(r) for r in b.records]
    head = None if wire else {"type": "record", "file": seg.path, "topic": seg.topic, "partition": seg.partition}
    return native.records(head, pos, b, one)


def records_text(pos, b) -> bytes:
    """The JSON array (UTF-8) of ``record_dicts(..., pos, b, "utf8", wire=True)``: written in C where the native
    backend is built (a rare record's JSON made here), else from the dicts."""
    from kfmt.runtime import jsonl

    def one(r) -> dict:
        return on_the_wire(record_dict(NoSegment, pos, b, r, "utf8"))

    native = _native_shapes()
    if native is None:
        return jsonl.text([one(r) for r in b.records])
    return native.records_json(pos, b, lambda r: jsonl.text(one(r)))


def record_lines(seg, name: str, pos, b) -> bytes:
    """The JSON lines (UTF-8) of ``record_dict(seg, pos, b, r, "utf8") | {"file": name}`` for each record of batch
    ``b``, as `kfmt dump --records --json` writes a log's: written in C where the native backend is built (a rare
    record's line made here), else from the dicts."""
    from kfmt.runtime import jsonl

    def one(r) -> bytes:
        return jsonl.text(record_dict(seg, pos, b, r, "utf8") | {"file": name})

    native = _native_shapes()
    if native is None:
        return b"".join(one(r) + b"\n" for r in b.records)
    prefix = jsonl.text({"type": "record", "file": name, "topic": seg.topic, "partition": seg.partition})
    return native.records_json(pos, b, one, prefix[1:-1] + b",")


class NoSegment:
    """What a record set on the wire is named by: nothing (its shapes leave these out: SEGMENT_KEYS)."""

    path = topic = partition = None


#: what names a segment in a batch's and a record's shape (a record set on the wire has none)
SEGMENT_KEYS = ("type", "file", "topic", "partition")


def on_the_wire(d: dict) -> dict:
    """A batch's or record's shape without what names a segment."""
    return {k: v for k, v in d.items() if k not in SEGMENT_KEYS}


@functools.lru_cache(maxsize=1)
def _native_shapes():
    """kfmt.runtime.native._shapes where it is built and the native backend is not turned off, else None."""
    from kfmt.runtime.native import extension

    return extension("_shapes")


def _size(b) -> int:
    """A key's or value's size as Kafka prints it: -1 for null."""
    return -1 if b is None else len(b)
