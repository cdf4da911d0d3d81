"""Batches from records: ``encode_batch`` in any format (legacy message sets and v2 batches), and
``control_record`` for transaction markers."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping

from kfmt.codec.formats import backend_module, get_format
from kfmt.codec.formats import by_magic as _by_magic
from kfmt.runtime.errors import InvalidValueError, UnsupportedCodecError
from kfmt.runtime.model import Record


def _as_record(r) -> Record:
    if isinstance(r, Record):
        return r
    if isinstance(r, Mapping):
        unknown = set(r) - {"key", "value", "headers", "timestamp", "offset", "control"}
        if unknown:
            raise InvalidValueError(f"unknown record field(s) {sorted(unknown)}", path="record")
        return Record(
            key=r.get("key"),
            value=r.get("value"),
            headers=r.get("headers") or (),
            timestamp=r.get("timestamp"),
            offset=r.get("offset"),
        )
    raise InvalidValueError(f"a record must be a kfmt.Record or a mapping, not {type(r).__name__}", path="record")


def encode_batch(
    records: Iterable,
    *,
    magic: int = 2,
    codec: str = "none",
    format: str | None = None,
    keep_offsets: bool = False,
    backend: str | None = None,
    **batch_fields,
) -> bytes:
    """Encode ``records`` as one batch of the format for ``magic`` (or ``format``).

    Records are numbered from the batch's base offset (``keep_offsets=True``
    keeps each record's own ``offset`` instead).  A record without a timestamp
    gets the current time, as the Java producer does.  ``batch_fields`` are the
    format's batch fields (``base_offset``, ``producer_id``, ``is_transactional``...).
    """
    if format:
        mod = get_format(format)
    else:
        mod = _by_magic().get(magic)
        if mod is None:
            raise UnsupportedCodecError(f"no format for magic {magic}")
    # a missing timestamp becomes the current time, in formats that have timestamps (not magic 0)
    stamp = "timestamp" in mod.CARRIES
    impl = backend_module(mod, backend)
    plain = getattr(impl, "records_plain", None)  # the native backend checks a list of Records in C
    recs: list[Record]
    if plain is not None and plain(records, stamp, not keep_offsets):
        recs = records  # type: ignore[assignment]  # a list of kfmt.Records with what they need: as they are
    else:
        recs = _prepared(records, stamp, keep_offsets)
    if not recs:
        raise InvalidValueError(
            "a batch with no records: Kafka's producer never writes one (the log cleaner keeps an emptied v2 batch"
            " only to retain producer state); to build that, encode the format's batch object directly"
            " (kfmt.get_format('kafka_v2').encode(...))",
            path="batch.records",
        )
    _refuse_uncarried(mod, recs)
    if mod.ROLE == "message":
        return _encode_message_set(mod, impl, recs, codec, dict(batch_fields, keep_offsets=keep_offsets))
    try:
        batch = mod.ROOT(records=recs, codec=codec, **batch_fields)
    except TypeError as e:
        allowed = ", ".join(f for f in mod.ROOT._fields if f != "records")
        raise InvalidValueError(f"{e}; batch fields of {mod.FORMAT_ID}: {allowed}", path="batch") from None
    return impl.encode(batch)


def _prepared(records: Iterable, stamp: bool, keep_offsets: bool) -> list[Record]:
    """The records as kfmt.Records: a missing timestamp the current time (``stamp``), offsets dropped unless
    kept; records already so are taken as they are."""
    now = None
    recs: list[Record] = []
    append = recs.append
    for r in records:
        if not isinstance(r, Record):
            r = _as_record(r)
        if (r.timestamp is None and stamp) or (r.offset is not None and not keep_offsets):
            if now is None:
                now = int(time.time() * 1000)
            r = Record(
                key=r.key,
                value=r.value,
                headers=r.headers,
                timestamp=now if r.timestamp is None else r.timestamp,
                offset=r.offset if keep_offsets else None,
                control=r.control,
            )
        append(r)
    return recs


# what a kfmt.Record can hold that a format's record may lack, with the values that mean "nothing to carry".
# As Kafka's producer: headers and control records are refused below v2; a timestamp given for magic 0
# is not written (MemoryRecordsBuilder ignores it), and kfmt.convert reports timestamps lost to v0.
_CARRIED = (
    ("headers", lambda r: not r.headers, "record headers"),
    ("control", lambda r: r.control is None, "control records"),
)


def _refuse_uncarried(mod, recs) -> None:
    """Nothing is dropped silently: a record holding what the format cannot carry is refused, naming it."""
    for name, empty, what in _CARRIED:
        if name in mod.CARRIES:
            continue
        for i, r in enumerate(recs):
            if not empty(r):
                raise InvalidValueError(f"{mod.FORMAT_ID} cannot carry {what}", path=f"records[{i}].{name}")


def _plain_records(mod, recs: list[Record], has_ts: bool) -> bool:
    """True if every record is a plain ``kfmt.Record`` without an offset, which the message encoder can
    take as it is (format records carry their own codec or timestamp type, and go through a message
    object); raises for what the format cannot carry."""
    plain = True
    for i, r in enumerate(recs):
        if type(r) is not Record or r.offset is not None:
            plain = False
        if has_ts and r.timestamp is not None and r.timestamp < -1:
            raise InvalidValueError(f"invalid timestamp {r.timestamp}", path=f"records[{i}].timestamp")
    return plain


def _encode_message_set(mod, impl, recs: list[Record], codec: str, fields: dict) -> bytes:
    """Legacy-shaped formats (role ``message``): one message per record, or one compressed wrapper.

    As Kafka's MemoryRecordsBuilder: inner offsets base..base+n-1, the wrapper takes the last
    offset, a null key, and (CreateTime) the largest inner timestamp.
    """
    fields = dict(fields)
    base = fields.pop("base_offset", 0)
    wrapper_ts = fields.pop("max_timestamp", None)
    keep = fields.pop("keep_offsets", False)
    timestamp_type = fields.pop("timestamp_type", 0)
    has_ts = "timestamp" in mod.CARRIES
    has_tt = "timestamp_type" in mod.CARRIES
    if fields:
        raise InvalidValueError(
            f"magic {mod.MAGIC} has no batch field(s) {sorted(fields)} (no producer state, no leader epoch)",
            path="batch",
        )
    if timestamp_type and not has_tt:
        raise InvalidValueError(f"magic {mod.MAGIC} has no timestamp type", path="batch.timestamp_type")
    extra = {"timestamp_type": timestamp_type} if has_tt else {}
    has_headers = "headers" in mod.CARRIES
    # plain records go to the encoder as they are (it numbers those without an offset by their index, and
    # reads the attributes records lack, codec and timestamp type, as defaults); others are copied first
    plain = _plain_records(mod, recs, has_ts) and not timestamp_type and mod.python.INDEX_OFFSETS
    if codec == "none" and plain:
        return impl.encode_all(recs, "records", base)
    msgs = recs if plain else []
    make = mod.ROOT
    for i, r in enumerate(recs if not plain else ()):
        m = make(offset=r.offset if keep and r.offset is not None else base + i, key=r.key, value=r.value, **extra)
        if has_headers:
            m.headers = list(r.headers)
        if has_ts:
            m.timestamp = -1 if r.timestamp is None else r.timestamp
        msgs.append(m)
    if codec == "none":
        return impl.encode_all(msgs, "records")
    if "wrappers" not in mod.CARRIES:
        raise UnsupportedCodecError(f"{mod.FORMAT_ID} has no compressed wrapper messages; use codec='none'")
    if not msgs:
        return b""
    first = mod.python.WRAP_OFFSETS == "relative_to_first"  # the wrapper carries its first (else last) offset
    edge = msgs[0 if first else -1].offset
    if edge is None:  # a plain record without an offset
        edge = base if first else base + len(msgs) - 1
    kw = dict(offset=edge, key=None, value=None, codec=codec, messages=msgs, **extra)
    if has_ts:
        kw["timestamp"] = (
            wrapper_ts if wrapper_ts is not None else max(-1 if m.timestamp is None else m.timestamp for m in msgs)
        )
    return impl.encode(mod.ROOT(**kw))


def control_record(kind: str = "commit", *, coordinator_epoch: int = 0, timestamp: int | None = None) -> Record:
    """A transaction marker record (ControlRecordType ABORT=0 / COMMIT=1, EndTransactionMarker v0)."""
    types = {"abort": 0, "commit": 1}
    if kind not in types:
        raise InvalidValueError(f"unknown control record kind {kind!r}; use 'commit' or 'abort'")
    key = struct.pack(">hh", 0, types[kind])
    value = struct.pack(">hi", 0, coordinator_epoch)
    return Record(key=key, value=value, timestamp=timestamp, control=(0, types[kind]))


__all__ = ["control_record", "encode_batch"]
