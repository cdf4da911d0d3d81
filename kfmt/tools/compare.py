"""``kfmt dump --compare A B``: two copies of one partition (two brokers' replicas, a backup and the live
folder) read side by side, batch by batch, to the first offset where they diverge.

Followers copy the leader's batches byte for byte, so two healthy replicas hold the same batches at the same
offsets (same CRC, which covers everything after the leader epoch, and the same leader epoch). Where their
offset ranges overlap, the first batch that differs is the divergence; a copy that ends earlier is behind
(a lagging follower, or an older copy), and one whose log starts later has had older segments deleted.
A compacted topic's replicas are cleaned by each broker on its own, so they may differ where the cleaner ran.

Exit status: 0 the overlap is identical, 1 the copies diverge or one is damaged, 2 usage error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kfmt.log.batches import scan
from kfmt.logdir.layout import find_segments
from kfmt.runtime.errors import CodecError


@dataclass(frozen=True)
class Mark:
    """What identifies a batch across replicas, and where it is."""

    base: int
    last: int
    crc: int | None
    epoch: int
    file: str
    position: int


class Damaged(Exception):
    pass


def marks(path: str, verify_crc: bool) -> Iterator[Mark]:
    """The batches of one copy in offset order (a damaged batch stops it: :class:`Damaged`)."""
    for seg in find_segments(path):
        for pos, _end, b in scan(seg.path, verify_crc=verify_crc, skip_corrupt=True):
            if isinstance(b, CodecError):
                raise Damaged(f"{seg.path} at byte {pos}: {b}")
            yield Mark(b.base_offset, b.last_offset, b.crc, b.partition_leader_epoch, seg.path, pos)


def _describe(m: Mark) -> str:
    return f"batch {m.base}-{m.last} (crc {m.crc}, leader epoch {m.epoch}) in {m.file} at byte {m.position}"


def first_divergence(a: Iterator[Mark], b: Iterator[Mark]) -> tuple[str, bool, int]:
    """Walk both copies; returns ``(what was found, whether they diverge, batches compared)``."""
    x, y = next(a, None), next(b, None)
    compared = 0
    while x is not None and y is not None:
        if x.last < y.base or y.last < x.base:  # a batch only one copy has
            only, which = (x, "first") if x.last < y.base else (y, "second")
            if compared:
                return (
                    f"they diverge at offset {only.base}: only the {which} copy has {_describe(only)}",
                    True,
                    compared,
                )
            if which == "first":  # before the other copy starts (its older segments deleted): not compared
                x = next(a, None)
            else:
                y = next(b, None)
            continue
        if (x.base, x.last, x.crc, x.epoch) != (y.base, y.last, y.crc, y.epoch):
            off = max(x.base, y.base)
            return (
                f"they diverge at offset {off}: first copy {_describe(x)}; second copy {_describe(y)}",
                True,
                compared,
            )
        compared += 1
        x, y = next(a, None), next(b, None)
    if x is None and y is None:
        return "identical over the offsets they share", False, compared
    ahead, which = (x, "first") if x is not None else (y, "second")
    assert ahead is not None
    return f"identical where both hold batches; the {which} copy goes on from offset {ahead.base}", False, compared


def compare(args, out, err) -> int:
    if len(args.paths) != 2 or not all(Path(p).exists() for p in args.paths):
        print("kfmt dump: --compare takes two existing paths (two copies of one partition)", file=err)
        return 2
    a, b = args.paths
    try:
        found, diverged, n = first_divergence(marks(a, not args.no_verify_crc), marks(b, not args.no_verify_crc))
    except Damaged as e:
        print(f"kfmt dump: cannot compare: {e}", file=err)
        return 1
    except (OSError, ValueError) as e:
        print(f"kfmt dump: {e}", file=err)
        return 2
    out.write(f"{a} vs {b}: {n} batch(es) equal; {found}\n")
    return 1 if diverged else 0
