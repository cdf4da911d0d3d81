"""`kfmt dump`'s index checks: a segment's ``.index`` and ``.timeindex`` against the batches read from it
(the facts each batch leaves), as kafka-dump-log checks them."""

from __future__ import annotations

import bisect
from array import array
from pathlib import Path

from kfmt.log.batches import scan
from kfmt.logdir.files import READERS
from kfmt.runtime.errors import CodecError

_ENTRY_NAMES = {"index": ("offset", "position"), "timeindex": ("timestamp", "offset")}


def _new_facts():
    """What index checks need of a segment's batches, compactly: positions, base and last offsets, max
    timestamps (four int64 arrays, in file order)."""
    return (array("q"), array("q"), array("q"), array("q"))


def _add_fact(facts, pos: int, b) -> None:
    for arr, v in zip(facts, (pos, b.base_offset, b.last_offset, b.max_timestamp)):
        arr.append(v)


def _facts_of(log: Path, args):
    facts = _new_facts()
    for pos, _end, b in scan(log, verify_crc=False, skip_corrupt=True, format=args.format):
        if not isinstance(b, CodecError):
            _add_fact(facts, pos, b)
    return facts


def check_offset_index(path: Path, facts, stop: int | None = None, damaged=frozenset()) -> list[str]:
    """Each ``.index`` entry ``(offset, position)``: a batch starts at ``position`` (the start of an append),
    and ``offset`` (the append's largest offset) is in that batch or one after it.  Entries from ``stop`` on
    (where reading stopped early) are not judged.  Linear in entries (a binary search each)."""
    positions, bases, lasts, _ = facts
    entries, _ = READERS["index"](path)
    problems = []
    for off, pos in entries:
        if stop is not None and pos >= stop:
            break
        if pos in damaged:
            continue  # points at a corrupt batch (reported already): its offsets are unknown
        i = bisect.bisect_left(positions, pos)
        if i == len(positions) or positions[i] != pos:
            problems.append(f"entry offset {off} -> position {pos}: no batch starts there")
            continue
        j = bisect.bisect_left(lasts, off, lo=i)  # first batch from there whose last offset reaches off
        if bases[i] > off or j == len(lasts) or bases[j] > off:
            problems.append(f"entry offset {off} -> position {pos}: offset not found from that position on "
                            f"(batch there holds {bases[i]}-{lasts[i]})")  # fmt: skip
    return problems


def check_time_index(path: Path, facts, stop: int | None = None, damaged=frozenset()) -> list[str]:
    """Each ``.timeindex`` entry ``(timestamp, offset)`` as Kafka's dump tool checks it: a batch holds ``offset``
    (the batch that had the largest timestamp so far when the entry was written) and that batch's largest
    timestamp is ``timestamp`` ("timestamp mismatch" otherwise); timestamps increase from entry to entry.
    When reading stopped early (``stop``), entries past the last batch read are not judged."""
    _, bases, lasts, max_ts = facts
    entries, _ = READERS["timeindex"](path)
    problems = []
    prev = None
    for ts, off in entries:
        if stop is not None and (not lasts or off > lasts[-1]):
            break
        if prev is not None and ts <= prev:
            problems.append(f"entry ({ts}, offset {off}): timestamp not above the entry before it ({prev})")
        prev = ts
        j = bisect.bisect_left(lasts, off)
        if j == len(lasts) or bases[j] > off:
            if not damaged:  # else the offset may be in a corrupt batch (reported already)
                problems.append(f"entry ({ts}, offset {off}): no batch holds that offset")
        elif max_ts[j] != ts:
            problems.append(f"entry ({ts}, offset {off}): timestamp mismatch: the batch holding offset {off} "
                            f"({bases[j]}-{lasts[j]}) has max timestamp {max_ts[j]}")  # fmt: skip
    return problems
