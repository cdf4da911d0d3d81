"""Transactions in a log: which producer's data was aborted, as a read_committed consumer sees it.

A transactional producer's data batches (attributes bit 4) stay undecided until a control batch of the
same producer id ends the transaction: COMMIT makes them visible, ABORT hides them (spec section 3).
The broker keeps the aborted ones in each segment's ``.txnindex`` (entries: int16 version, int64
producerId, int64 firstOffset, int64 lastOffset, int64 lastStableOffset); a consumer fetches that list
and drops transactional batches of an aborted producer from its first offset up to its ABORT marker.
Here the same list is computed from the log itself (batch headers, and the control records), so it
holds with or without ``.txnindex`` files; data of a transaction that has no marker yet is above the
last stable offset and is not returned either (a Kafka consumer would wait for it).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from dataclasses import dataclass, field

from kfmt.runtime.errors import CodecError

# v2 batch header positions (DefaultRecordBatch): magic at 16, attributes at 21, producerId at 43
_V2_HEAD_SIZE = 61
ABORT, COMMIT = 0, 1
_TXN_INDEX_ENTRY = struct.Struct(">hqqqq")
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


@dataclass
class Transactions:
    """What a read_committed reader must leave out: aborted ranges and still-open transactions."""

    #: ``(producer_id, first_offset, last_offset)``: the producer's transactional data from first to
    #: last (the ABORT marker's offset) was aborted; ``first_offset`` is None when it began before the data
    aborted: list[tuple[int, int | None, int]] = field(default_factory=list)
    #: ``producer_id -> first offset`` of transactions that have no marker in the data
    open: dict[int, int] = field(default_factory=dict)
    #: the aborted ranges by producer id, ``(last offsets, first offsets)`` in offset order (built on use)
    _by_pid: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _indexed: int = field(default=0, init=False, repr=False, compare=False)

    def is_dropped(self, batch) -> bool:
        """Whether a read_committed consumer leaves this batch out (control batches are kept).  A binary
        search in the producer's aborted ranges (one producer's transactions never overlap)."""
        if not batch.is_transactional or batch.is_control:
            return False
        pid, base = batch.producer_id, batch.base_offset
        first = self.open.get(pid)
        if first is not None and base >= first:
            return True
        if self._indexed != len(self.aborted):  # ``transactions(into=...)`` may have added ranges
            self._by_pid = {}
            for p, lo, hi in sorted(self.aborted, key=lambda a: a[2]):
                his, los = self._by_pid.setdefault(p, ([], []))
                his.append(hi)
                los.append(lo)
            self._indexed = len(self.aborted)
        ranges = self._by_pid.get(pid)
        if ranges is None:
            return False
        his, los = ranges
        i = bisect.bisect_left(his, base)  # the first range ending at or after base
        return i < len(his) and (los[i] is None or los[i] <= base)


def _marker_type(batch) -> int | None:
    for r in batch.records:
        if r.control is not None:
            return r.control[1]
    return None


def transactions(source, *, format: str | None = None, into: Transactions | None = None) -> Transactions:
    """Aborted and open transactions of a log (bytes-like data or a binary file), from its batch headers.

    Only v2 batches carry transactions; other entries are stepped over.  Control batches are decoded (they
    are tiny) to tell COMMIT from ABORT; a corrupt or truncated entry ends the pass (the reader reports it).
    ``into`` carries the state of the segments before this one (a partition's segments in order).
    """
    out = into if into is not None else Transactions()
    if format is not None and format != "kafka_v2":
        from kfmt.codec.formats import get_format

        mod = get_format(format)
        if mod.MAGIC != 2 or "producer_state" not in mod.CARRIES:
            return out
    from kfmt.codec.formats import backend_module

    read, decode = _reader(source), backend_module("kafka_v2").decode_from
    for pos, end, base, attrs, pid in _transactional_heads(source, read):
        if not attrs & 0x20:
            if pid not in out.open:
                out.open[pid] = base
            continue
        entry = read(pos, end - pos)
        if len(entry) < end - pos:
            break
        kind = _marker_of(entry, decode)
        if kind is _NOT_A_BATCH:
            continue
        first = out.open.pop(pid, None)
        if kind == ABORT:
            out.aborted.append((pid, first, base))
    return out


_NOT_A_BATCH = object()
# base offset, size, magic, attributes, producer id: the fields the pass needs, read in place
_HEAD_FIELDS = struct.Struct(">qi4xb4xh20xq")


def _transactional_heads(source, read):
    """``(position, end, base offset, attributes, producer id)`` of each transactional v2 batch: entries are
    stepped over by their size fields up to the first that is cut short or has a size below 14. A buffer's
    headers are read in place (a file's through ``read``)."""
    from kfmt.log.resync import LOG_OVERHEAD

    buf = None if hasattr(source, "read") and not isinstance(source, mmap.mmap) else source
    n = len(buf) if buf is not None else 0
    unpack, pos = _HEAD_FIELDS.unpack_from, 0
    while True:
        if buf is not None:
            head, have, at = buf, n - pos, pos
        else:
            head = read(pos, _V2_HEAD_SIZE)
            have, at = len(head), 0
        if have < 17:
            return
        size = struct.unpack_from(">i", head, at + 8)[0]
        if size < 14:
            return
        end = pos + LOG_OVERHEAD + size
        if head[at + 16] == 2 and have >= _V2_HEAD_SIZE:
            base, _, _, attrs, pid = unpack(head, at)
            if attrs & 0x10:
                yield pos, end, base, attrs, pid
        pos = end


def _marker_of(entry: bytes, decode):
    """The control type of a control batch's marker (None: no marker record; _NOT_A_BATCH: it does not decode)."""
    try:
        batch, _ = decode(entry, 0, len(entry))
    except CodecError:
        return _NOT_A_BATCH
    return _marker_type(batch)


def transactions_of_files(paths, *, format: str | None = None, storage: dict | None = None) -> Transactions:
    """Transactions of a partition's segment files, read in order (a transaction may span segments)."""
    out = Transactions()
    for p in paths:
        transactions_of_file(p, format=format, into=out, storage=storage)
    return out


def transactions_of_file(path: str, *, format: str | None = None, into: Transactions | None = None,
                         storage: dict | None = None, start: int = 0, end: int | None = None) -> Transactions:  # fmt: skip
    """The transactions of a segment's entries from byte ``start`` to ``end`` (default: its end), added to
    ``into`` (what the partition's earlier entries left open). A local file is mapped (headers read in place);
    a store's object is read by blocks of 8 MiB; an object stored compressed whole (a remote storage plugin's)
    is decompressed first, as its readers read it (never walked as if its compressed bytes were entries)."""
    from kfmt.storage import Blocks, compressed_object, file_size, is_uri, open_input, open_segment

    out = into if into is not None else Transactions()
    if not is_uri(path) and start == 0 and end is None:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return out
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:  # headers read in place, no call each
                if compressed_object(m[:16]) is None:
                    return transactions(m, format=format, into=out)
    opened = open_segment(path, storage) if start == 0 else (open_input(path, storage), None, None)
    with opened[0] as src:
        stop = (opened[1] if opened[1] is not None else file_size(src)) if end is None else end
        if stop > start:
            view = Blocks(lambda at, n: src.read_at(n, start + at), stop - start, name=path)
            transactions(view, format=format, into=out)
    return out


def _reader(source):
    if hasattr(source, "read") and hasattr(source, "seek") and not isinstance(source, mmap.mmap):

        def read_file(pos, n):
            source.seek(pos)
            return source.read(n)

        return read_file
    if isinstance(source, (bytes, mmap.mmap)):  # slices are bytes already (no view: a mapping can then close)
        return lambda pos, n: source[pos : pos + n]
    buf = source if isinstance(source, bytearray) else memoryview(source)
    return lambda pos, n: bytes(buf[pos : pos + n])


def committed_only(items, txns: Transactions, positions: bool):
    """``(pos, end, batch)`` items of a scan without the batches ``txns`` drops (batches alone unless
    ``positions``)."""
    dropped = txns.is_dropped
    for item in items:
        b = item[2]
        if isinstance(b, CodecError) or not dropped(b):
            yield item if positions else b


def read_txn_index(path) -> list[tuple[int, int, int, int, int]]:
    """Entries ``(version, producer_id, first_offset, last_offset, last_stable_offset)`` of a .txnindex."""
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // _TXN_INDEX_ENTRY.size
    return [_TXN_INDEX_ENTRY.unpack_from(data, i * _TXN_INDEX_ENTRY.size) for i in range(n)]


def txn_index_entry(producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int) -> bytes:
    return _TXN_INDEX_ENTRY.pack(0, producer_id, first_offset, last_offset, last_stable_offset)
