"""Conversion between magic 0, 1 and 2, following Kafka's rules (spec section 5).

Rewriting v2 as v2 (another codec) keeps every batch field, as the broker does when it recompresses:
base offset and last offset delta, partition leader epoch, producer id, epoch and base sequence, the
transactional and control flags, timestamp type, base/max timestamps (or the delete horizon), record
attributes and offset/timestamp deltas.  Control batches are copied as they are (the broker never
compresses them).

Down-conversion (to an older magic), as the broker does for old fetchers: control batches are dropped;
an uncompressed v2 batch becomes one message per record; a compressed batch becomes one wrapper with
the same codec (or the one asked for); LogAppendTime is kept for v1; zstd cannot be carried below
magic 2.  Up-conversion (to magic 2): each compressed wrapper becomes one batch, and runs of
consecutive uncompressed messages become one batch; producer fields are -1 (legacy data has none).

Nothing is dropped silently: everything that does not survive is listed in ``Conversion.lost``
(what, where, how many), records and bytes that are not carried over are counted
(``records_in == records_out + records_lost``; ``bytes_unread`` input bytes could not be read), and
``strict=True`` refuses instead.  Batches already in the target magic and codec are copied byte for byte.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kfmt.codec.encode import encode_batch
from kfmt.codec.formats import backend_module, get_format
from kfmt.log.batches import scan
from kfmt.runtime.errors import CodecError, InvalidValueError, UnsupportedCodecError
from kfmt.runtime.model import Record

#: kinds of loss that mean input bytes were not read (corrupt batches, broken framing, incomplete tail)
UNREAD_KINDS = ("corrupt_batch", "unread_bytes")


class Loss(NamedTuple):
    kind: str  # e.g. "headers", "control_batch", "corrupt_batch"
    position: int  # byte position of the input batch
    detail: str  # what, in words
    count: int = 1  # type: ignore[assignment]  # how many of that kind (a field, not tuple.count)


@dataclass
class Conversion:
    """The converted log and an account of what could not be carried over."""

    data: bytes
    batches_in: int = 0
    batches_out: int = 0
    records_in: int = 0
    records_out: int = 0
    #: records read but not written (control records of dropped control batches)
    records_lost: int = 0
    #: input bytes read as batches (``bytes_in + bytes_unread`` is the input's size)
    bytes_in: int = 0
    #: input bytes that could not be read at all (corrupt batches, broken framing, incomplete tail)
    bytes_unread: int = 0
    lost: list[Loss] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """How many of each kind were lost (headers, records, bytes...), by kind."""
        out: Counter = Counter()
        for loss in self.lost:
            out[loss.kind] += loss.count
        return dict(out)

    @property
    def complete(self) -> bool:
        """True when every input byte was read (nothing corrupt, no incomplete tail)."""
        return self.bytes_unread == 0


def _records_of(batch) -> list[Record]:
    return [
        Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp, offset=r.offset)
        for r in batch.records
    ]


_DERIVED_BATCH = ("batch_length", "crc", "num_records")


def _recompress_v2(mod, batch, codec: str) -> bytes:
    """A v2 batch in another codec with every other field as it was (CRC and lengths recomputed)."""
    for f in _DERIVED_BATCH:
        if f in mod.ROOT._fields:
            setattr(batch, f, None)
    batch.codec = codec
    for r in batch.records:
        if hasattr(r, "length"):
            r.length = None
    return backend_module(mod).encode(batch)


def convert(
    data,
    *,
    to_magic: int,
    codec: str | None = None,
    strict: bool = False,
    verify_crc: bool = True,
    skip_corrupt: bool = False,
    out=None,
) -> Conversion:
    """Convert every batch of a log to ``to_magic``; ``codec`` None keeps each batch's codec.

    The converted log is ``.data`` of the result, or, with ``out`` (anything with ``write``, such as
    :class:`kfmt.logdir.indexes.SegmentWriter`), written there batch by batch as it is made, so memory does not
    grow with the log (``.data`` then stays empty; on an error ``out`` holds a prefix: write to a staging
    location).

    Raises :class:`CodecError` on corrupt input or an incomplete tail (with its byte position) unless
    ``skip_corrupt``, which carries the other batches over and lists each corrupt batch and the unread
    tail in ``lost`` (position, reason, bytes); with ``strict``, raises :class:`InvalidValueError` on the
    first thing that would be lost, before anything is returned.
    """
    _check_target(to_magic, codec)
    kw = dict(to_magic=to_magic, codec=codec, strict=strict, verify_crc=verify_crc, skip_corrupt=skip_corrupt, out=out)
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as f:  # read in chunks: memory holds a chunk and a batch, not the segment
            return convert(f, **kw)
    raw = _rereader(data)
    if raw is None:  # a file object with no descriptor: read whole
        return convert(data.read(), **kw)
    c = _Converter(to_magic, codec, strict, skip_corrupt, out)
    for pos, end, batch in scan(data, verify_crc=verify_crc, skip_corrupt=True):
        if isinstance(batch, CodecError):
            c.damaged(pos, end, batch)
        else:
            c.batch(pos, end, batch, raw)
    return c.finish()


def _check_target(to_magic: int, codec: str | None) -> None:
    if to_magic not in (0, 1, 2):
        raise UnsupportedCodecError(f"cannot convert to magic {to_magic}")
    if codec is not None:
        from kfmt.runtime.compression import CODECS

        if codec not in CODECS:
            raise UnsupportedCodecError(f"unknown codec {codec!r}; use one of {', '.join(CODECS)}")


def _rereader(data):
    """How an entry carried over as it is is read again by position: from the file's descriptor, or from the
    bytes; None for a file object without a descriptor."""
    if hasattr(data, "read"):
        try:
            fd, start = data.fileno(), data.tell()
        except (OSError, ValueError):  # io.UnsupportedOperation
            return None
        return lambda pos, end: os.pread(fd, end - pos, start + pos)
    if isinstance(data, (bytes, bytearray)):
        return lambda pos, end: data[pos:end]
    return lambda pos, end: bytes(memoryview(data)[pos:end])


class _Converter:
    """One conversion's state: what is written, what was lost, and consecutive uncompressed legacy messages
    waiting to become one v2 batch."""

    def __init__(self, to_magic: int, codec: str | None, strict: bool, skip_corrupt: bool, out):
        self.to_magic, self.codec, self.strict, self.skip_corrupt = to_magic, codec, strict, skip_corrupt
        self.res = Conversion(b"")
        self.parts: list[bytes | bytearray] = []
        self.write = self.parts.append if out is None else out.write
        self.pending: list[Record] = []
        self.v2 = get_format("kafka_v2")

    def lose(self, kind: str, pos: int, detail: str, count: int = 1) -> None:
        if self.strict:
            raise InvalidValueError(f"converting to magic {self.to_magic} would lose {detail}", offset=pos, path=kind)
        self.res.lost.append(Loss(kind, pos, detail, count))

    def emit(self, blob: bytes | bytearray, n_batches: int, n_records: int) -> None:
        self.write(blob)
        self.res.batches_out += n_batches
        self.res.records_out += n_records

    def flush(self) -> None:
        if self.pending:
            p = self.pending
            self.emit(encode_batch(p, magic=2, codec=self.codec or "none", base_offset=p[0].offset, keep_offsets=True),
                      1, len(p))  # fmt: skip
            self.pending = []

    def damaged(self, pos: int, end: int, e: CodecError) -> None:
        """A damaged region or a corrupt batch: raised, or counted and listed as lost."""
        if not self.skip_corrupt:
            raise e
        self.res.bytes_unread += end - pos
        if getattr(e, "unread", None) is not None:
            self.lose("unread_bytes", pos, f"{end - pos} byte(s) that hold no complete entry ({e.reason})", end - pos)
        else:
            self.res.batches_in += 1
            self.lose("corrupt_batch", pos, f"a corrupt batch of {end - pos} bytes ({e})", end - pos)

    def batch(self, pos: int, end: int, batch, raw) -> None:
        """One decoded batch: carried over as it is, down-converted, recompressed, or up-converted."""
        res = self.res
        res.batches_in += 1
        res.bytes_in += end - pos
        n = len(batch.records)
        res.records_in += n
        target_codec = self.codec or batch.codec
        if batch.magic == self.to_magic and (target_codec == batch.codec or batch.is_control):
            self.flush()  # already in the target form; control batches are never recompressed
            self.emit(raw(pos, end), 1, n)
        elif self.to_magic < 2:
            _down(batch, pos, n, self.to_magic, target_codec, self.lose, self.emit, res)
        elif batch.magic == 2:
            self.flush()
            self.emit(_recompress_v2(self.v2, batch, target_codec), 1, n)
        else:
            self.up(batch, n, target_codec)

    def up(self, batch, n: int, target_codec: str) -> None:
        """A legacy entry to v2: uncompressed messages gathered into one v2 batch per run of consecutive offsets
        (an offset field is outside the legacy CRC: a damaged one may jump anywhere, and a batch's offset deltas
        are int32), a compressed wrapper to one batch of its own."""
        records = _records_of(batch)
        if batch.codec == "none" and self.codec in (None, "none"):
            if self.pending and (records[0].offset != self.pending[-1].offset + 1 or len(self.pending) >= 10_000):
                self.flush()
            self.pending.extend(records)
            return
        self.flush()
        fields: dict[str, Any] = {"base_offset": records[0].offset if records else batch.base_offset}
        if batch.timestamp_type == 1:
            fields.update(timestamp_type=1, max_timestamp=batch.max_timestamp)
        self.emit(encode_batch(records, magic=2, codec=target_codec, keep_offsets=True, **fields), 1, n)

    def finish(self) -> Conversion:
        self.flush()
        self.res.data = b"".join(self.parts)
        return self.res


def _down(batch, pos, n, to_magic, target_codec, lose, emit, res) -> None:
    """One batch to magic 0 or 1, listing everything the older magic cannot carry."""
    if batch.is_control:
        kinds = ", ".join(_control_names(batch))
        lose("control_batch", pos, f"a control batch ({n} control record(s): {kinds}) at offset {batch.base_offset}")
        res.records_lost += n
        return
    if target_codec == "zstd":
        raise UnsupportedCodecError(
            f"zstd cannot be carried to magic {to_magic}; pass codec= to recompress", offset=pos, path="batch.codec"
        )
    if n == 0:
        lose("empty_batch", pos, f"an empty batch (offsets {batch.base_offset}-{batch.last_offset})")
        return
    headers = sum(len(r.headers) for r in batch.records)
    if headers:
        lose("headers", pos, f"{headers} record header(s)", headers)
    if batch.magic == 2:
        _v2_losses(batch, pos, lose)
    if to_magic == 0 and batch.magic >= 1 and any(r.timestamp != -1 for r in batch.records):
        lose("timestamps", pos, f"{n} timestamp(s) and the timestamp type", n)
    records = _records_of(batch)
    fields: dict[str, Any] = {}
    if to_magic == 1:
        fields["timestamp_type"] = batch.timestamp_type or 0
        if batch.timestamp_type == 1:
            fields["max_timestamp"] = batch.max_timestamp
    for r in records:
        r.headers = []
        if to_magic == 0:
            r.timestamp = -1
    blob = encode_batch(records, magic=to_magic, codec=target_codec, keep_offsets=True, **fields)
    # uncompressed: one message (one log entry) per record; compressed: one wrapper
    emit(blob, n if target_codec == "none" else 1, n)


def _v2_losses(batch, pos: int, lose) -> None:
    """What a v2 batch holds that magic 0 and 1 cannot carry."""
    if batch.producer_id != -1 or batch.base_sequence != -1 or batch.producer_epoch != -1:
        lose("producer_state", pos, f"producer id {batch.producer_id}, epoch {batch.producer_epoch}, "
                                    f"base sequence {batch.base_sequence}")  # fmt: skip
    if batch.is_transactional:
        lose("transactional", pos, "the transactional flag (aborted data becomes visible)")
    if batch.partition_leader_epoch != -1:
        lose("leader_epoch", pos, f"partition leader epoch {batch.partition_leader_epoch}")
    if batch.has_delete_horizon:
        lose("delete_horizon", pos, "the delete horizon")
    attrs = sum(1 for r in batch.records if getattr(r, "attributes", 0))
    if attrs:
        lose("record_attributes", pos, f"{attrs} non-zero record attribute byte(s)", attrs)
    if batch.last_offset != batch.records[-1].offset:
        lose("offset_gap", pos, f"the batch's last offset {batch.last_offset} (its last record is at "
                                f"{batch.records[-1].offset})")  # fmt: skip


def _control_names(batch) -> list[str]:
    from kfmt.log.txn import CONTROL_TYPES

    return [CONTROL_TYPES.get(r.control[1], f"type {r.control[1]}") if r.control else "?" for r in batch.records]
