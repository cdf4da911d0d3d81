"""``kfmt convert``: segments converted to another magic or codec, published whole."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kfmt.log.conversion import UNREAD_KINDS, convert
from kfmt.logdir.layout import UnreadableFolder, find_segments
from kfmt.runtime.errors import CodecError


class _Refused(Exception):
    """A usage error of ``kfmt convert``: one line, exit 2."""


def convert_paths(src, dst, *, to_magic: int, codec=None, strict=False, err=None, skip_corrupt=False,
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

    err = err or sys.stderr
    try:
        src_p, dst_p, segments, single = _paths(src, dst, to_magic, codec)
        job = _Job(src_p, dst_p, single, dict(to_magic=to_magic, codec=codec, strict=strict, skip_corrupt=skip_corrupt),
                   verbose, err)  # fmt: skip
        if not job.run(segments, overwrite):
            return 1  # the staging folder, with the partial segment, is removed on the way out
    except UnreadableFolder as e:  # an input folder it may not list: its records would be missing
        print(f"kfmt convert: {e}; nothing written", file=err)
        return 1
    except (_Refused, FileExistsError) as e:
        print(f"kfmt convert: {e}", file=err)
        return 2
    except OSError as e:
        why = "no space left on device" if e.errno == errno.ENOSPC else (e.strerror or str(e))
        print(f"kfmt convert: cannot write {dst}: {why}; nothing written", file=err)
        return 1
    return job.report(len(segments))


def _paths(src, dst, to_magic: int, codec) -> tuple[Path, Path, list, bool]:
    """The input's segments and where they go, or :class:`_Refused` saying why not."""
    src_p, dst_p = Path(src).resolve(), Path(dst).resolve()
    try:
        segments = find_segments(src_p)
    except UnreadableFolder:
        raise
    except (FileNotFoundError, NotADirectoryError, PermissionError) as e:
        raise _Refused(str(e)) from None
    if not segments:
        raise _Refused(f"no .log segment under {src}")
    single = src_p.is_file()
    if single and dst_p.is_dir():
        dst_p = dst_p / src_p.name
    if not single and dst_p.exists() and not dst_p.is_dir():
        raise _Refused(f"{dst}: not a directory (converting a directory writes one)")
    if codec == "zstd" and to_magic < 2:
        raise _Refused(f"zstd cannot be written with magic {to_magic} (Kafka reads zstd only in v2)")
    if dst_p == src_p or (dst_p.exists() and os.path.samefile(dst_p, src_p)):
        raise _Refused(f"refusing to overwrite the input {src_p}")
    if src_p in dst_p.parents or (not single and dst_p in src_p.parents):
        raise _Refused(f"refusing to write {dst} inside or around its input {src}")
    return src_p, dst_p, segments, single


class _Job:
    """One conversion's segments, counts and what was not carried over, said on ``err``."""

    def __init__(self, src_p: Path, dst_p: Path, single: bool, kw: dict, verbose: bool, err):
        self.src_p, self.dst_p, self.single, self.kw, self.verbose, self.err = src_p, dst_p, single, kw, verbose, err
        self.totals: dict[str, int] = {}
        self.counts = {"records_in": 0, "records_out": 0, "bytes_unread": 0}

    def run(self, segments, overwrite: bool) -> bool:
        """Every segment into the staging folder, then published; False (nothing written) on damage."""
        from kfmt.storage.publish import Staging

        with Staging(self.dst_p, overwrite=overwrite, single=self.single) as st:
            for seg in segments:
                if not self.segment(st, Path(seg.path).resolve()):
                    return False
            st.publish({"tool": "kfmt convert", "source": str(self.src_p), "magic": self.kw["to_magic"],
                        "codec": self.kw["codec"], "segments": len(segments), **self.counts,
                        "not_carried_over": self.totals})  # fmt: skip
        return True

    def segment(self, st, seg_path: Path) -> bool:
        from kfmt.logdir.indexes import SegmentWriter

        rel = Path(self.dst_p.name) if self.single else seg_path.relative_to(self.src_p)
        out = SegmentWriter(st.root / rel)  # streamed: memory holds a batch and the indexes, not the segment
        try:
            res = convert(seg_path, out=out, **self.kw)
        except CodecError as e:
            at = getattr(e, "batch_position", None)
            where = f" (batch at byte {at})" if at is not None else ""
            print(f"kfmt convert: {seg_path}{where}: {e}; nothing written", file=self.err)
            return False
        finally:
            out.close()
        for k in self.counts:
            self.counts[k] += getattr(res, k)
        for kind, n in res.summary().items():
            self.totals[kind] = self.totals.get(kind, 0) + n
        print(f"{seg_path} -> {(self.dst_p.parent if self.single else self.dst_p) / rel}: {res.batches_in} batches / "
              f"{res.records_in} records in, {res.batches_out} batches / {res.records_out} records out",
              file=self.err)  # fmt: skip
        for loss in res.lost:  # damage is always listed; format losses batch by batch with --verbose
            if self.verbose or loss.kind in UNREAD_KINDS:
                print(f"  not carried over: {loss.kind} at byte {loss.position}: {loss.detail}", file=self.err)
        return True

    def report(self, n_segments: int) -> int:
        err, counts = self.err, self.counts
        print(f"kfmt convert: {n_segments} segment(s), {counts['records_in']} records in, "
              f"{counts['records_out']} records out", file=err)  # fmt: skip
        if self.totals:
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.totals.items()))
            print(f"kfmt convert: not carried over: {kinds}" + ("" if self.verbose else " (--verbose: per batch)"),
                  file=err)  # fmt: skip
        if counts["bytes_unread"]:
            print(f"kfmt convert: {counts['bytes_unread']} input byte(s) could not be read "
                  "(see corrupt_batch/unread_bytes)", file=err)  # fmt: skip
            return 1
        return 0
