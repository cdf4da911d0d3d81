"""File-level tools: conversion of segments with atomic writes."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from kfmt.convert import convert
from kfmt.logdir import find_segments
from kfmt.runtime.errors import CodecError


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def convert_paths(src, dst, *, to_magic: int, codec=None, strict=False, err=None) -> int:
    err = err or sys.stderr
    src_p, dst_p = Path(src).resolve(), Path(dst).resolve()
    segments = find_segments(src_p)
    if not segments:
        print(f"kfmt convert: no .log segment under {src}", file=err)
        return 2
    single = src_p.is_file()
    if single and dst_p.is_dir():
        dst_p = dst_p / src_p.name
    status = 0
    for seg in segments:
        seg_path = Path(seg.path).resolve()
        target = dst_p if single else dst_p / seg_path.relative_to(src_p)
        if target == seg_path or (target.exists() and os.path.samefile(target, seg_path)):
            print(f"kfmt convert: refusing to overwrite the input {seg_path}", file=err)
            return 2
        try:
            res = convert(seg_path.read_bytes(), to_magic=to_magic, codec=codec, strict=strict)
        except CodecError as e:
            print(f"kfmt convert: {seg_path}: {e}; nothing written for this segment", file=err)
            status = 1
            continue
        atomic_write(target, res.data)
        print(f"{seg_path} -> {target}: {res.batches_in} batches / {res.records_in} records in, "
              f"{res.batches_out} batches / {res.records_out} records out", file=err)  # fmt: skip
        for kind, pos, detail in res.lost:
            print(f"  not carried over: {kind} at byte {pos}: {detail}", file=err)
    return status
