"""What `kfmt dump` reads: paths, folders walked at any depth, stdin, grouped into logs (a partition
folder each), with the files read and the files not read named."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kfmt.logdir.files import OFFSET_CHECKPOINTS, kind_of, not_read, snapshot_id
from kfmt.logdir.layout import (
    SUFFIXES,
    Segment,
    find_segments,
    given_file_problem,
    topic_partition,
    unmapped_note,
    walk_folder,
)


def _looks_like_segment(path: Path) -> bool:
    from kfmt.log.resync import valid_entry_at

    with open(path, "rb") as f:
        head = f.read(1 << 16)
    return valid_entry_at(head, 0, len(head))


def _progress(logs):
    segments = [s for log in logs for s in log.segments]
    if not sys.stderr.isatty() or len(segments) < 2:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is an optional extra
        return None
    return tqdm(total=sum(s.size for s in segments), unit="B", unit_scale=True, file=sys.stderr, desc="dump")


# ------------------------------------------------------------------ what to read
@dataclass
class Log:
    """One log read and checked on its own: a partition folder's segments (two replicas of a partition are
    two logs), a file given alone, or a KRaft snapshot (``snapshot``: end offset and epoch, -1 for bootstrap)."""

    folder: str
    segments: list
    snapshot: tuple[int, int] | None = None
    epochs: bool | None = True  # None: the folder's own files are not checked (a file given alone)

    @property
    def label(self) -> str:
        """How summaries name the log: its folder, or the snapshot file."""
        return self.segments[0].path if self.snapshot else self.folder

    @property
    def root(self) -> str:
        """The log dir holding the partition folder."""
        return str(Path(self.folder).parent)


@dataclass
class Targets:
    logs: list = field(default_factory=list)
    files: list = field(default_factory=list)  # (path, kind): given alone, printed
    log_dir_files: list = field(default_factory=list)  # (path, kind): found in a log dir, checked
    notes: list = field(default_factory=list)  # (path, note): left out, said
    unread: list = field(default_factory=list)  # folders that could not be listed (UnreadableFolder): problems
    stdin: Any = None  # the spool file holding stdin (``-``)


def _walk(p: Path, t: Targets, include) -> list[Segment]:
    """A folder given: its segments (suffixed folders left out, each noted), its KRaft snapshots, and every
    other file of it and of its partition folders, each checked or named as skipped."""
    left: list = []
    segs, folders = walk_folder(p, include, left, t.unread)
    for folder, suffix in left:
        t.notes.append((folder, f"left out: {SUFFIXES[suffix]}; give the folder itself (or --include-suffixed "
                        f"{suffix}) to read it"))  # fmt: skip
    for d in folders:
        for f in sorted(x for x in d.iterdir() if x.is_file()):
            _classify(f, t)
    return segs


def _classify(f: Path, t: Targets) -> None:
    """One file found in a folder walk: a snapshot becomes a log; a broker file is checked; anything else is
    named as skipped (Kafka's dump tool prints "Ignoring unknown file")."""
    kind = kind_of(f)
    if kind == "log" and f.suffix == ".log":
        return  # a segment: found already
    if kind in ("index", "timeindex", "txnindex") and not f.with_suffix(".log").is_file():
        t.notes.append((str(f), f"an orphaned index: no {f.with_suffix('.log').name} beside it (Kafka's log loader "
                        "deletes it at start-up: \"Found an orphaned index file\")"))  # fmt: skip
    snap = snapshot_id(f)
    if snap is not None:
        topic, part = topic_partition(f.parent)
        t.logs.append(Log(str(f.parent), [Segment(topic, part, 0, str(f), f.stat().st_size)], snap, None))
    elif kind in ("index", "timeindex") and f.with_suffix(".log").is_file():
        return  # checked with its segment
    elif kind in ("leader_epoch_checkpoint", "partition_metadata") and any(f.parent.glob("*.log")):
        return  # checked with its partition's log
    elif kind is not None:
        t.log_dir_files.append((f, kind))
    else:
        why = not_read(f)
        t.notes.append((str(f), f"skipped: {why or 'not a Kafka log file'}"))


def _given_file(p: Path, t: Targets, err) -> list[Segment] | None:
    kind = kind_of(p)
    tar = given_file_problem(p)
    if tar:
        print(f"kfmt dump: {tar}", file=err)
        return None
    if kind is None:
        print(f"kfmt dump: {p}: not a Kafka log file (.log, .index, .timeindex, .txnindex, .snapshot, "
              "*.checkpoint, leader-epoch-checkpoint, partition.metadata, meta.properties, quorum-state, "
              f"{', '.join(sorted(OFFSET_CHECKPOINTS))})", file=err)  # fmt: skip
        return None
    snap = snapshot_id(p)
    if snap is not None:
        topic, part = topic_partition(p.parent)
        t.logs.append(Log(str(p.parent), [Segment(topic, part, 0, str(p), p.stat().st_size)], snap, None))
        return []
    if kind == "log":
        return find_segments(p)
    t.files.append((p, kind))
    return []


def _stdin(t: Targets, name: tuple[str, int] | None = None) -> list[Segment]:
    """``-``: stdin, spooled to a temporary file (indexes and offsets need to read it more than once), labelled
    with the topic-partition ``name`` (``--stdin-as``), else topic ``-``, partition -1."""
    import shutil
    import tempfile

    f = tempfile.NamedTemporaryFile(prefix="kfmt-stdin-", suffix=".log")  # noqa: SIM115 - closed by run
    shutil.copyfileobj(sys.stdin.buffer, f)
    f.flush()
    t.stdin = f
    topic, part = name or ("-", -1)
    return [Segment(topic, part, 0, f.name, f.tell())]


def _targets(paths, err, include=(), stdin_as=None) -> Targets | None:
    """The logs (one per partition folder, file given alone, or snapshot) and other files to dump, or None
    after a usage error."""
    t = Targets()
    segs: list[Segment] = []
    walked: set[str] = set()  # partition folders found in a folder walk: their own files are checked too
    for raw in paths:
        p = Path(raw)
        if raw == "-":
            segs += _stdin(t, stdin_as)
        elif p.is_dir():
            found = _walk(p, t, include)
            walked |= {str(Path(s.path).parent) for s in found}
            segs += found
        elif not p.exists():
            print(f"kfmt dump: no such file or directory: {p}", file=err)
            return None
        else:
            got = _given_file(p, t, err)
            if got is None:
                return None
            segs += got
    from kfmt.table.commit import check_tables

    check_tables([s.path for s in segs if t.stdin is None or s.path != t.stdin.name])  # a commit under way: refused
    folders: dict = {}
    for s in sorted(set(segs)):
        folders.setdefault(
            "-" if t.stdin is not None and s.path == t.stdin.name else str(Path(s.path).parent), []
        ).append(s)
    for folder, group in folders.items():
        t.logs.append(Log(folder, group, None, True if folder in walked else None))
        note = unmapped_note(Path(folder)) if folder in walked else None
        if note:
            t.notes.append((folder, note))
    t.logs.sort(key=lambda log: (log.segments[0].topic, log.segments[0].partition, log.folder, log.label))
    return t
