"""Conversion between magic 0, 1 and 2, following Kafka's rules (spec section 5).

Down-conversion (to an older magic), as the broker does for old fetchers:
control batches are dropped; an uncompressed v2 batch becomes one message per
record; a compressed batch becomes one wrapper with the same codec (or the one
asked for); LogAppendTime is kept for v1; zstd cannot be carried below magic 2.
Up-conversion (to magic 2): each compressed wrapper becomes one batch, and runs of
consecutive uncompressed messages become one batch; producer fields are -1.

Nothing is dropped silently: everything that does not survive is listed in
``Conversion.lost`` (what, where, how many), and ``strict=True`` refuses instead.
Batches already in the target magic (and codec) are copied byte for byte.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kfmt.api import encode_batch, scan
from kfmt.runtime.errors import CodecError, InvalidValueError, UnsupportedCodecError
from kfmt.runtime.model import Record


@dataclass
class Conversion:
    """The converted log and an account of what could not be carried over."""

    data: bytes
    batches_in: int = 0
    batches_out: int = 0
    records_in: int = 0
    records_out: int = 0
    #: ``(kind, position, detail)`` for each loss, e.g. ``("headers", 128, "3 record headers")``
    lost: list[tuple[str, int, str]] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        return dict(Counter(kind for kind, _, _ in self.lost))


def _records_of(batch) -> list[Record]:
    return [
        Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp, offset=r.offset)
        for r in batch.records
    ]


def convert(
    data,
    *,
    to_magic: int,
    codec: str | None = None,
    strict: bool = False,
    verify_crc: bool = True,
    skip_corrupt: bool = False,
) -> Conversion:
    """Convert every batch of a log to ``to_magic``; ``codec`` None keeps each batch's codec.

    Raises :class:`CodecError` on corrupt input (with its byte position) unless ``skip_corrupt``, which
    carries the other batches over and lists each corrupt one in ``lost`` (position and reason); with
    ``strict``, raises :class:`InvalidValueError` on the first thing that would be lost.
    """
    if to_magic not in (0, 1, 2):
        raise UnsupportedCodecError(f"cannot convert to magic {to_magic}")
    res = Conversion(b"")
    out: list[bytes] = []
    pending: list[Record] = []  # consecutive uncompressed legacy messages, for one v2 batch
    buf = data if type(data) is bytes else bytes(data)

    def lose(kind: str, pos: int, detail: str):
        if strict:
            raise InvalidValueError(f"converting to magic {to_magic} would lose {detail}", offset=pos, path=kind)
        res.lost.append((kind, pos, detail))

    def emit(blob: bytes, n_batches: int, n_records: int):
        out.append(blob)
        res.batches_out += n_batches
        res.records_out += n_records

    def flush():
        nonlocal pending
        if pending:
            emit(encode_batch(pending, magic=2, codec=codec or "none", base_offset=pending[0].offset,
                              keep_offsets=True), 1, len(pending))  # fmt: skip
            pending = []

    for pos, end, batch in scan(buf, verify_crc=verify_crc, skip_corrupt=skip_corrupt):
        res.batches_in += 1
        if isinstance(batch, CodecError):
            lose("corrupt_batch", pos, f"a corrupt batch of {end - pos} bytes ({batch})")
            continue
        n = len(batch.records)
        res.records_in += n
        target_codec = codec or batch.codec
        if batch.magic == to_magic and target_codec == batch.codec:
            flush()
            emit(buf[pos:end], 1, n)
            continue
        if to_magic < 2:
            if batch.is_control:
                lose("control_batch", pos, f"a control batch ({n} control records) at offset {batch.base_offset}")
                continue
            if target_codec == "zstd":
                raise UnsupportedCodecError(
                    f"zstd cannot be carried to magic {to_magic}; pass codec= to recompress",
                    offset=pos,
                    path="batch.codec",
                )
            if n == 0:
                lose("empty_batch", pos, f"an empty batch (offsets {batch.base_offset}-{batch.last_offset})")
                continue
            headers = sum(len(r.headers) for r in batch.records)
            if headers:
                lose("headers", pos, f"{headers} record header(s)")
            if batch.magic == 2:
                if batch.producer_id != -1 or batch.base_sequence != -1:
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
                    lose("record_attributes", pos, f"{attrs} non-zero record attribute byte(s)")
            if to_magic == 0 and batch.magic >= 1 and any(r.timestamp != -1 for r in batch.records):
                lose("timestamps", pos, f"{n} timestamp(s) and the timestamp type")
            records = _records_of(batch)
            for r in records:
                r.headers = []
            fields = {}
            if to_magic == 1:
                fields["timestamp_type"] = batch.timestamp_type or 0
                if batch.timestamp_type == 1:
                    fields["max_timestamp"] = batch.max_timestamp
            if to_magic == 0:
                for r in records:
                    r.timestamp = -1
            blob = encode_batch(records, magic=to_magic, codec=target_codec, keep_offsets=True, **fields)
            # uncompressed: one message (one log entry) per record; compressed: one wrapper
            emit(blob, n if target_codec == "none" else 1, n)
            continue
        # up-conversion to v2
        records = _records_of(batch)
        if batch.codec == "none" and batch.magic < 2 and codec in (None, "none"):
            if pending and (pending[-1].offset >= records[0].offset or len(pending) >= 10_000):
                flush()
            pending.extend(records)
            continue
        flush()
        fields = {"base_offset": records[0].offset if records else batch.base_offset}
        if batch.timestamp_type == 1:
            fields.update(timestamp_type=1, max_timestamp=batch.max_timestamp)
        emit(encode_batch(records, magic=2, codec=target_codec, keep_offsets=True, **fields), 1, n)
    flush()
    res.data = b"".join(out)
    return res
