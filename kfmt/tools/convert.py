"""``kfmt convert``: segments converted to another magic or codec, published whole."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kfmt.log.conversion import UNREAD_KINDS, convert
from kfmt.logdir.layout import find_segments
from kfmt.runtime.errors import CodecError


def convert_paths(src, dst, *, to_magic: int, codec=None, strict=False, err=None, skip_corrupt=False,  # noqa: C901 - older than the rule; to be split
                  verbose=False, overwrite=False) -> int:  # fmt: skip
    """``kfmt convert``: every segment under ``src`` converted into ``dst`` (same layout), with ``.index``
    and ``.timeindex`` files rebuilt as a broker writes them.

    Segments are converted one at a time into a staging folder beside ``dst`` (streamed batch by batch: memory holds a chunk of input and a batch, not a segment),
    and the output is published only when complete (kfmt.storage.publish: a directory gets a ``_KFMT_SUCCESS``
    marker with the counts and appears by one rename). A corrupt batch or an incomplete tail stops the
    whole conversion (nothing written, exit 1) unless ``skip_corrupt``, which writes the rest and reports
    the unread bytes (exit 1); with ``strict`` anything that would be lost stops it too.  An existing
    ``dst`` is refused unless ``overwrite`` (which replaces it whole).  Exit 0 only when every input byte
    was read; a full disk or a permission error is one line, exit 1, nothing written.
    """
    import errno

    from kfmt.logdir.indexes import SegmentWriter
    from kfmt.storage.publish import Staging

    err = err or sys.stderr
    src_p, dst_p = Path(src).resolve(), Path(dst).resolve()
    try:
        segments = find_segments(src_p)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as e:
        print(f"kfmt convert: {e}", file=err)
        return 2
    if not segments:
        print(f"kfmt convert: no .log segment under {src}", file=err)
        return 2
    single = src_p.is_file()
    if single and dst_p.is_dir():
        dst_p = dst_p / src_p.name
    if not single and dst_p.exists() and not dst_p.is_dir():
        print(f"kfmt convert: {dst}: not a directory (converting a directory writes one)", file=err)
        return 2
    if codec == "zstd" and to_magic < 2:
        print(f"kfmt convert: zstd cannot be written with magic {to_magic} (Kafka reads zstd only in v2)", file=err)
        return 2
    if dst_p == src_p or (dst_p.exists() and os.path.samefile(dst_p, src_p)):
        print(f"kfmt convert: refusing to overwrite the input {src_p}", file=err)
        return 2
    if src_p in dst_p.parents or (not single and dst_p in src_p.parents):
        print(f"kfmt convert: refusing to write {dst} inside or around its input {src}", file=err)
        return 2
    totals: dict[str, int] = {}
    counts = {"segments": len(segments), "records_in": 0, "records_out": 0, "bytes_unread": 0}
    try:
        with Staging(dst_p, overwrite=overwrite, single=single) as st:
            for seg in segments:
                seg_path = Path(seg.path).resolve()
                rel = Path(dst_p.name) if single else seg_path.relative_to(src_p)
                target = st.root / rel  # published as (dst's folder or dst) / rel
                out = SegmentWriter(target)  # streamed: memory holds a batch and the indexes, not the segment
                try:
                    res = convert(seg_path, to_magic=to_magic, codec=codec, strict=strict,
                                  skip_corrupt=skip_corrupt, out=out)  # fmt: skip
                except CodecError as e:
                    at = getattr(e, "batch_position", None)
                    where = f" (batch at byte {at})" if at is not None else ""
                    print(f"kfmt convert: {seg_path}{where}: {e}; nothing written", file=err)
                    return 1  # the staging folder, with the partial segment, is removed on the way out
                finally:
                    out.close()
                counts["records_in"] += res.records_in
                counts["records_out"] += res.records_out
                counts["bytes_unread"] += res.bytes_unread
                for kind, n in res.summary().items():
                    totals[kind] = totals.get(kind, 0) + n
                print(f"{seg_path} -> {(dst_p.parent if single else dst_p) / rel}: {res.batches_in} batches / {res.records_in} records in, "
                      f"{res.batches_out} batches / {res.records_out} records out", file=err)  # fmt: skip
                for loss in res.lost:  # damage is always listed; format losses batch by batch with --verbose
                    if verbose or loss.kind in UNREAD_KINDS:
                        print(f"  not carried over: {loss.kind} at byte {loss.position}: {loss.detail}", file=err)
            st.publish({"tool": "kfmt convert", "source": str(src_p), "magic": to_magic, "codec": codec,
                        **counts, "not_carried_over": totals})  # fmt: skip
    except FileExistsError as e:
        print(f"kfmt convert: {e}", file=err)
        return 2
    except OSError as e:
        why = "no space left on device" if e.errno == errno.ENOSPC else (e.strerror or str(e))
        print(f"kfmt convert: cannot write {dst}: {why}; nothing written", file=err)
        return 1
    print(f"kfmt convert: {len(segments)} segment(s), {counts['records_in']} records in, "
          f"{counts['records_out']} records out", file=err)  # fmt: skip
    if totals:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(totals.items()))
        print(f"kfmt convert: not carried over: {kinds}" + ("" if verbose else " (--verbose: per batch)"), file=err)
    if counts["bytes_unread"]:
        print(f"kfmt convert: {counts['bytes_unread']} input byte(s) could not be read "
              "(see corrupt_batch/unread_bytes)", file=err)  # fmt: skip
        return 1
    return 0
