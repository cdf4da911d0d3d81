"""Kafka log directories on disk: segments in offset order.

Layouts read:

- Kafka's LocalLog: ``<log dir>/<topic>-<partition>/<20-digit base offset>.log``;
- tiered storage (KIP-405) as the common remote storage plugins write it:
  ``<topic>-<topicId>/<partition>/<20-digit base offset>-<segmentId>.log``;
- Kafka's own LocalTieredStorage: ``<topic>-<partition>-<topicId>/<base offset>-<segmentId>.log``.

A topic id is Kafka's ``Uuid`` as text (22 characters of URL-safe base64). The files beside each segment
(indexes, snapshots, checkpoints) are read by :mod:`kfmt.logdir.files`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kfmt.logdir.names import parse_folder
from kfmt.storage import COMPRESSED_OBJECTS, compressed_object, is_uri, list_logs  # noqa: F401 - re-exported

#: a segment's name: ``<base offset>.log``, or ``<base offset>-<segmentId>.log`` in tiered storage
SEGMENT_NAME = re.compile(r"^(\d{1,20})(?:-([A-Za-z0-9_-]+))?\.log$")
#: a topic id as text: Kafka's Uuid in 22 characters of URL-safe base64
TOPIC_ID = r"[A-Za-z0-9_-]{22}"
_PARTITION_ID = re.compile(rf"^(.+)-(\d+)-{TOPIC_ID}$")  # LocalTieredStorage: <topic>-<partition>-<topicId>
_TOPIC_WITH_ID = re.compile(rf"^(.+)-{TOPIC_ID}$")  # remote storage plugins: <topic>-<topicId>/<partition>
#: Kafka's LocalLog names a partition folder it is done with, or not yet serving, ``<topic>-<partition>.<uuid
#: without dashes><suffix>`` (the topic cut short if the name would pass 255 characters)
_SUFFIXED = re.compile(r"^(.+)-(\d+)\.([0-9a-fA-F]{32})-(delete|future|stray)$")
#: what each of Kafka's folder suffixes means
SUFFIXES = {
    "delete": "a log pending deletion (Kafka's -delete suffix)",
    "future": "a replica being moved between log dirs (Kafka's -future suffix)",
    "stray": "a stray log Kafka found no assignment for (Kafka's -stray suffix)",
}


def kafka_suffix(name: str) -> str | None:
    """``delete``, ``future`` or ``stray`` for a folder name Kafka gave one of those suffixes, else None."""
    m = _SUFFIXED.match(name)
    return m.group(4) if m else None


def suffixes_opt(value) -> frozenset[str]:
    """The suffixed folders to read as well, from an option: ``"future"``, ``"future,delete"``, a list, or
    None / ``""`` for none."""
    if value is None or value == "":
        return frozenset()
    names = value.split(",") if isinstance(value, str) else list(value)
    got = frozenset(x.strip().lstrip("-").lower() for x in names if x.strip())
    bad = sorted(got - set(SUFFIXES))
    if bad:
        raise ValueError(f"include_suffixed: unknown suffix(es) {', '.join(bad)}; use {', '.join(SUFFIXES)}")
    return got


@dataclass(frozen=True, order=True)
class Segment:
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int


def _base(name: str) -> int:
    """The base offset a segment's name gives (0 for a name that is not one)."""
    m = SEGMENT_NAME.match(name)
    return int(m.group(1)) if m else 0


def _segment(path: Path, topic: str, partition: int) -> Segment:
    return Segment(topic, partition, _base(path.name), str(path), path.stat().st_size)


def topic_partition(d: Path | PurePosixPath) -> tuple[str, int]:
    """``(topic, partition)`` of the folder holding a segment: ``<topic>-<partition>``,
    ``<topic>-<partition>-<topicId>``, or ``<partition>`` inside ``<topic>-<topicId>`` (else the folder's
    name and -1)."""
    name = d.name
    m = _SUFFIXED.match(name) or _PARTITION_ID.match(name)
    if m:
        return m.group(1), int(m.group(2))
    if name.isdigit():
        t = _TOPIC_WITH_ID.match(d.parent.name)
        return (t.group(1) if t else d.parent.name), int(name)
    return parse_folder(name) or (name, -1)


def unmapped_note(d: Path | PurePosixPath) -> str | None:
    """What to say of a folder holding segments whose name does not map back to a topic and partition as Kafka's
    log loader maps one (read as topic <name>, partition -1; never renamed into another), else None."""
    if topic_partition(d)[1] >= 0:
        return None
    return (f"'{d.name}' is not a partition folder's name (<topic>-<partition>, the partition an int32), which Kafka's "
            f"log loader refuses to load; read as topic '{d.name}', partition -1")  # fmt: skip


GLOB_CHARS = re.compile(r"[*?\[]")

#: names tar archives go by, plain or compressed whole
TAR_NAMES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".tar.lz4")


def _ustar(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, gzip's decompressed) is a tar archive's first header (POSIX
    ``ustar`` magic at byte 257)."""
    if head[:2] == b"\x1f\x8b":
        import zlib

        try:
            head = zlib.decompressobj(31).decompress(head, 512)
        except zlib.error:
            return False
    return head[257:262] == b"ustar"


def tar_problem(name: str, head: bytes = b"") -> str | None:
    """The one line every reader says of a tar archive given to it (by its name, or by its first bytes ``head``),
    which holds a log directory but is not one; None for anything else."""
    if not (name.lower().endswith(TAR_NAMES) or _ustar(head)):
        return None
    return f"{name}: a tar archive, not a Kafka log file; unpack it (tar -xf {name}) and read the folder it holds"


def given_file_problem(p: Path) -> str | None:
    """What every reader says of a local file given to it that is not a log although it may hold one (a tar
    archive: :func:`tar_problem` on its name and first bytes), else None."""
    with open(p, "rb") as f:
        return tar_problem(str(p), f.read(1 << 16))


def _given_local(p: Path) -> None:
    """Refuse a file given that holds no log to read (ValueError, its one line)."""
    why = given_file_problem(p)
    if why:
        raise ValueError(why)


def _matches(pattern: str, path: str) -> bool:
    """Whether ``path`` is, or lies under, a path matching the glob ``pattern`` (``*`` ``?`` ``[...]`` within one
    path component, as Hadoop's and Spark's globs)."""
    import fnmatch

    pat, parts = pattern.strip("/").split("/"), path.strip("/").split("/")
    return len(parts) >= len(pat) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pat))


def _expand(raw) -> list:
    """A local glob's matches (sorted), or the path itself; a glob matching nothing is an error."""
    import glob

    s = os.fspath(raw)
    if not GLOB_CHARS.search(s):
        return [raw]
    found = sorted(glob.glob(s))
    if not found:
        raise FileNotFoundError(f"no such file or directory: {s} (a pattern matching nothing)")
    return found


#: folders kfmt's writers stage in (``.kfmt-staging-*``, ``.kfmt-commit-*``): never part of a table
WRITER_PREFIX = ".kfmt-"


def find_segments(paths, options: dict | None = None, *, include_suffixed=(), left_out=None) -> list[Segment]:
    """Segments under the given files / partition folders / log directories, local or URIs (``s3://...``,
    see :mod:`kfmt.storage`; ``options`` configure the store), globs allowed (``logs/orders-*``,
    ``s3://bucket/*/orders-*``), sorted by topic, partition, offset.

    Folders Kafka marked ``-delete``, ``-future`` or ``-stray`` (:data:`SUFFIXES`) found inside a folder given
    are left out, as Kafka leaves them out of the partitions it serves, unless their suffix is in
    ``include_suffixed``; each left out is appended to ``left_out`` (a list) as ``(folder, suffix)``. A
    suffixed folder given itself (or matched by a glob) is read: it was asked for."""
    out: list[Segment] = []
    include = suffixes_opt(include_suffixed)
    skipped: list = left_out if left_out is not None else []
    given = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    for raw in (x for g in given for x in (_expand(g) if not is_uri(g) else [g])):
        if is_uri(raw):
            uri = str(raw)
            pattern = None
            if GLOB_CHARS.search(uri):  # list from the last folder before the first wildcard, then match
                scheme, rest = uri.split("://", 1)
                head = rest[: GLOB_CHARS.search(rest).start()].rsplit("/", 1)[0]  # type: ignore[union-attr]
                uri, pattern = f"{scheme}://{head}", rest
            why = tar_problem(uri)
            if why:
                raise ValueError(why)
            listed = list_logs(uri, options)
            if pattern is not None:
                listed = [(u, n) for u, n in listed if _matches(pattern, u.split("://", 1)[1])]
                if not listed:
                    raise FileNotFoundError(f"no such file or directory: {raw} (a pattern matching nothing)")
            # components a folder has when it is the one given (or the one a glob names): deeper ones were found
            given_at = len((pattern or uri.split("://", 1)[1]).strip("/").split("/"))
            for uri, size in listed:
                folder = PurePosixPath(uri.split("://", 1)[1]).parent
                depth = len(folder.parts) - given_at
                if any(x.startswith(WRITER_PREFIX) for x in folder.parts[max(given_at, 0) :]):
                    continue  # a kfmt writer's staging or commit folder: not part of the table yet
                if _left_out(folder, depth, include, skipped, f"{uri.split('://')[0]}://"):
                    continue
                topic, part = topic_partition(folder)
                out.append(Segment(topic, part, _base(uri.rsplit("/", 1)[1]), uri, size))
            continue
        p = Path(raw)
        if p.is_file():
            _given_local(p)
            topic, part = topic_partition(p.parent)
            out.append(_segment(p, topic, part))
        elif p.is_dir():
            out.extend(walk_folder(p, include, skipped)[0])
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return sorted(set(out))


class UnreadableFolder(PermissionError):
    """A folder of a log directory the reader may not list or enter: its segments cannot be read, so they are
    reported, never taken as absent (the message is one line with the OS's reason)."""

    def __init__(self, e: OSError):
        super().__init__(e.errno, e.strerror, e.filename)
        self.reason = f"{e.strerror}: the folder cannot be listed, so its segments, if any, were not read"
        self.line = f"cannot read folder {e.filename}: {self.reason}"

    def __str__(self) -> str:
        return self.line


def unreadable(e: OSError) -> UnreadableFolder:
    """What every reader says of a folder it could not list (``e``: the OS's error)."""
    return UnreadableFolder(e)


def walk_folder(p: Path, include=frozenset(), skipped: list | None = None,
                unread: list | None = None) -> tuple[list[Segment], list[Path]]:  # fmt: skip
    """What a folder given holds, at any depth: a partition folder, a log directory, a tiered-storage prefix
    (``<topic>-<topicId>/<partition>/``), or a folder of any of these (a broker's JBOD ``log.dirs``, copies
    of several brokers' log dirs), as an object store's prefix is listed. Returns the segments (every
    ``.log`` file) and the folders walked (each holding files a dump checks). kfmt writers' staging folders
    are not walked; Kafka's suffixed folders below ``p`` are left out unless their suffix is in ``include``
    (each noted in ``skipped``). A folder that cannot be listed or entered (permissions) is an error
    (:class:`UnreadableFolder`), or with ``unread`` (a list) appended to it as one and the walk goes on. Every reader
    and tool walks a folder by this one rule."""
    segs: list[Segment] = []
    folders: list[Path] = []
    notes: list = skipped if skipped is not None else []
    errors: list[OSError] = []
    for root, dirs, files in os.walk(p, onerror=errors.append):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(WRITER_PREFIX)
                         and not _left_out(here / d, 1, include, notes))  # fmt: skip
        folders.append(here)
        logs = [f for f in files if f.endswith(".log") and (here / f).is_file()]
        if logs:
            topic, part = topic_partition(here)
            segs.extend(_segment(here / f, topic, part) for f in logs)
    if errors and unread is None:
        raise unreadable(errors[0])
    if unread is not None:
        unread.extend(unreadable(e) for e in errors)
    return segs, folders


def _left_out(folder, depth: int, include, skipped: list, scheme: str = "") -> bool:
    """Whether a folder found ``depth`` levels below a folder given is one of Kafka's suffixed folders to leave
    out (noted once in ``skipped``)."""
    suffix = kafka_suffix(folder.name)
    if suffix is None or depth < 1 or suffix in include:
        return False
    entry = (f"{scheme}{folder}", suffix)
    if entry not in skipped:
        skipped.append(entry)
    return True
