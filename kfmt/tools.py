"""File-level tools: conversion of segments with atomic writes."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from kfmt.conversion import UNREAD_KINDS, convert
from kfmt.logdir import find_segments
from kfmt.runtime.errors import CodecError

_SEGMENT_NAME = re.compile(r"^\d{20}\.log$")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; segments are ordinary files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _temp_beside(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def _write_all(staged: list[tuple[Path, bytes]]) -> None:
    """Write every ``(path, data)`` to a temporary name beside it, then rename them all: either every file
    appears or (on an error before the renames) none does."""
    temps: list[tuple[Path, Path]] = []
    try:
        for path, data in staged:
            tmp = _temp_beside(path)
            temps.append((tmp, path))
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in temps:
        os.replace(tmp, path)


def convert_paths(src, dst, *, to_magic: int, codec=None, strict=False, err=None, skip_corrupt=False,
                  verbose=False, overwrite=False) -> int:  # fmt: skip
    """``kfmt convert``: every segment under ``src`` converted into ``dst`` (same layout), with ``.index``
    and ``.timeindex`` files rebuilt as a broker writes them.

    Every segment is converted before anything is written; then all files appear at once.  A corrupt
    batch or an incomplete tail stops the whole conversion (nothing written, exit 1) unless
    ``skip_corrupt``, which writes the rest and reports the unread bytes (exit 1); with ``strict`` anything
    that would be lost stops it too.  Exit 0 only when every input byte was read.
    """
    from kfmt.segments import build_indexes

    err = err or sys.stderr
    src_p, dst_p = Path(src).resolve(), Path(dst).resolve()
    segments = find_segments(src_p)
    if not segments:
        print(f"kfmt convert: no .log segment under {src}", file=err)
        return 2
    single = src_p.is_file()
    if single and dst_p.is_dir():
        dst_p = dst_p / src_p.name
    staged: list[tuple[Path, bytes]] = []
    totals: dict[str, int] = {}
    ins = outs = unread = 0
    for seg in segments:
        seg_path = Path(seg.path).resolve()
        target = dst_p if single else dst_p / seg_path.relative_to(src_p)
        if target == seg_path or (target.exists() and os.path.samefile(target, seg_path)):
            print(f"kfmt convert: refusing to overwrite the input {seg_path}", file=err)
            return 2
        if target.exists() and not overwrite:
            print(f"kfmt convert: {target} exists (pass --overwrite to replace it)", file=err)
            return 2
        try:
            res = convert(seg_path.read_bytes(), to_magic=to_magic, codec=codec, strict=strict,
                          skip_corrupt=skip_corrupt)  # fmt: skip
        except CodecError as e:
            at = getattr(e, "batch_position", None)
            where = f" (batch at byte {at})" if at is not None else ""
            print(f"kfmt convert: {seg_path}{where}: {e}; nothing written", file=err)
            return 1
        staged.append((target, res.data))
        if target.suffix == ".log" and _SEGMENT_NAME.match(target.name):
            index, timeindex = build_indexes(res.data, int(target.stem))
            staged += [(target.with_suffix(".index"), index), (target.with_suffix(".timeindex"), timeindex)]
        ins += res.records_in
        outs += res.records_out
        unread += res.bytes_unread
        for kind, n in res.summary().items():
            totals[kind] = totals.get(kind, 0) + n
        print(f"{seg_path} -> {target}: {res.batches_in} batches / {res.records_in} records in, "
              f"{res.batches_out} batches / {res.records_out} records out", file=err)  # fmt: skip
        for loss in res.lost:  # damage is always listed; format losses batch by batch with --verbose
            if verbose or loss.kind in UNREAD_KINDS:
                print(f"  not carried over: {loss.kind} at byte {loss.position}: {loss.detail}", file=err)
    _write_all(staged)
    print(f"kfmt convert: {len(segments)} segment(s), {ins} records in, {outs} records out", file=err)
    if totals:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(totals.items()))
        print(f"kfmt convert: not carried over: {kinds}" + ("" if verbose else " (--verbose: per batch)"), file=err)
    if unread:
        print(f"kfmt convert: {unread} input byte(s) could not be read (see corrupt_batch/unread_bytes)", file=err)
        return 1
    return 0


def write_partition_rows(folder, rows: list[dict], *, magic=2, codec="none", segment_bytes=1024**3,
                         batch_records=500, keep_batches=True, replace=False) -> list[str]:  # fmt: skip
    """Write rows (dicts with offset, key, value, headers, timestamp[, batch_base_offset]) as segments.

    Rows are ordered by offset; with ``keep_batches`` rows that shared a batch stay together.
    Segments roll at ``segment_bytes`` and are named by their base offset; every file is written to a
    temporary name and renamed, so an interrupted job leaves no half segment.
    """
    import kfmt

    if rows and rows[0].get("offset") is None:
        raise ValueError("kafka-log writer: rows need an 'offset' column")
    rows = sorted(rows, key=lambda r: r["offset"])
    groups: list[list[dict]] = []
    for r in rows:
        batch = r.get("batch_base_offset")
        if groups:
            last = groups[-1]
            if keep_batches and batch is not None:  # rows of one input batch stay together
                joins = last[0].get("batch_base_offset") == batch
            else:
                joins = len(last) < batch_records
            if joins:
                last.append(r)
                continue
        groups.append([r])
    folder = Path(folder)
    written, buf, base = [], bytearray(), None

    def flush():
        nonlocal buf, base
        if base is not None and buf:
            target = folder / f"{base:020d}.log"
            if target.exists() and not replace:
                raise FileExistsError(f"kafka-log writer: {target} exists (use mode('overwrite') to replace it)")
            atomic_write(target, bytes(buf))
            written.append(str(target))
        buf, base = bytearray(), None

    for g in groups:
        recs = []
        for r in g:
            ts = r.get("timestamp")
            if ts is not None and hasattr(ts, "timestamp"):
                ts = int(round(ts.timestamp() * 1000))
            hs = [(h["key"], h["value"]) for h in (r.get("headers") or [])] if magic >= 2 else []
            recs.append(kfmt.Record(key=r.get("key"), value=r.get("value"), headers=hs,
                                    timestamp=-1 if ts is None else ts, offset=r["offset"]))  # fmt: skip
        data = kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=recs[0].offset, keep_offsets=True)
        if base is not None and len(buf) + len(data) > segment_bytes:
            flush()
        if base is None:
            base = recs[0].offset
        buf += data
    flush()
    return written
