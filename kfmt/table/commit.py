"""Table commits that a reader sees whole or not at all, and that only one writer makes at a time.

A table is a log directory kfmt writes (the Spark ``kafka-log`` writer, ``writeStream``): Kafka's layout,
``<root>/<topic>-<partition>/<offset>.log`` with indexes and broker files, so that brokers and Kafka's
tools read it as they read their own. A commit changes many files, and no file system or store changes
many files in one step, so a commit is a redo journal:

1. Every new file is written whole under ``<root>/.kfmt-commit-<id>/`` and read back: its size, and the
   batches, records and last offset the writer reported for it (a store that acknowledged an upload it
   did not keep fails the commit here).
2. The table is taken: the journal ``<root>/_KFMT_PENDING`` is created exclusively (a hard link on local
   disk, under a ``flock`` of the table's folder that makes a second local writer wait; a conditional write, ``If-None-Match:
   *``, on S3). Exactly one writer can hold it. Only now are the offsets already there checked (an append
   must start after them) and the old files to remove listed (an overwrite).
3. The commit point: the journal is rewritten as ready, listing each file to put in place and each old
   file to remove. It is then applied (renames locally, server-side copies in a store), every file in
   place is checked again, the marker ``_KFMT_SUCCESS`` is written with the commit's id, and the journal
   removed.

A journal that does not read back ready was never a commit point (a store that kept an empty body, a write
cut short): the writer rolls back before anything is in place, readers read the old table, and
:func:`recover` drops it. A commit that fails after its commit point says the data is committed and that
``kfmt recover`` finishes it (:class:`CommittedUnfinished`).

Readers (:func:`check_table`, called by the Spark source, ``read_arrow`` on folders, ``kfmt dump`` and the
stream reader) refuse a table whose journal is ready with one line naming the commit: it is being
applied, or its writer was killed; and a reader whose table was replaced while it read (the marker's
version, taken when it planned, checked again when it is done; appends keep it) fails rather than mixing
two versions.
:func:`recover` completes a ready journal and drops one that is not (nothing of it is in place). The
next local writer runs it under the lock (any journal there is a killed writer's); in a store, which
cannot tell a slow writer from a dead one, ``kfmt recover URI`` does. Folders Kafka wrote (no journal,
no marker) read as before.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

from kfmt.storage.publish import MARKER

PENDING = "_KFMT_PENDING"
COMMIT_PREFIX = ".kfmt-commit-"
UNREADABLE = "(unreadable journal)"


class CommitError(RuntimeError):
    """A commit that cannot be made or read around (one line: what, where, why)."""


class InterruptedCommit(CommitError):
    """A table whose last commit has not finished (being applied now, or its writer was killed)."""


class ConcurrentCommit(CommitError):
    """Another writer holds the table's commit."""


class CommittedUnfinished(CommitError):
    """A commit past its commit point (its journal is ready) whose files are not all in place yet: the data
    is committed, and ``kfmt recover`` (or the table's next local writer) finishes putting it in place."""


@dataclass
class Put:
    """A file of the commit: written whole at ``staged``, put in place at ``final``; ``size`` bytes, and
    (segments) the batches, records and last offset it must hold."""

    staged: str
    final: str
    size: int
    batches: int | None = None
    records: int | None = None
    last_offset: int | None = None


@dataclass
class Journal:
    id: str
    mode: str
    puts: list[Put] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    marker: dict = field(default_factory=dict)
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)
    ready: bool = False  # False: the table is taken, nothing is in place yet (readers go on reading)
    version: str | None = None  # the table's version when the commit began (kept by an append)

    def to_bytes(self) -> bytes:
        d = dict(self.__dict__, puts=[p.__dict__ for p in self.puts])
        return json.dumps(d, indent=1, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Journal:
        d = json.loads(data)
        d["puts"] = [Put(**p) for p in d["puts"]]
        return cls(**d)

    def describe(self) -> str:
        if self.id == UNREADABLE:
            return f"a journal that does not read ({PENDING}: never ready, nothing of it in place)"
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started))
        return f"commit {self.id} ({self.mode}, started {when} by pid {self.pid} on {self.host})"


def new_id() -> str:
    return uuid.uuid4().hex


# -- readers ------------------------------------------------------------------------------------------


def table_state(tree, root: str) -> tuple[Journal | None, str | None]:
    """``(the pending journal or None, the table's version or None)`` of the table at ``root`` of ``tree``
    (a :class:`kfmt.storage.Tree`). The version is the id of the commit that last replaced the table (an
    overwrite): appends keep it, since they add segments and change none a reader may be reading."""
    journal = None
    pending = _pending(root)
    if tree.is_file(pending):
        try:
            journal = Journal.from_bytes(tree.read(pending))
        except (ValueError, TypeError, KeyError, FileNotFoundError):
            # never ready: a writer applies a commit only once it has read its ready journal back (an empty
            # body a store kept, a write cut short): the table underneath is the old one, whole
            journal = Journal(id=UNREADABLE, mode="?", ready=False)
    marker_id = None
    marker = _marker(root)
    if tree.is_file(marker):
        try:
            d = json.loads(tree.read(marker))
            marker_id = d.get("version", d.get("commit"))
        except (ValueError, AttributeError, FileNotFoundError):
            marker_id = None
    return journal, marker_id


def refuse_pending(tree, root: str, journal: Journal | None) -> None:
    if journal is not None and journal.ready:
        raise InterruptedCommit(
            f"{tree.uri(root)}: {journal.describe()} has not finished: the table is being written or its writer "
            f"was killed; read it when the commit is done, or run `kfmt recover {tree.uri(root)}` if no writer "
            "is running"
        )


def check_table(tree, root: str) -> str | None:
    """Refuse (:class:`InterruptedCommit`) a table whose commit has not finished; else its version (see
    :func:`table_state`; None for folders kfmt did not write)."""
    journal, marker_id = table_state(tree, root)
    refuse_pending(tree, root, journal)
    return marker_id


def check_unchanged(tree, root: str, seen: str | None) -> None:
    """After reading: refuse if a commit is being applied, or the table was replaced since ``seen`` was taken
    (a reader must not mix two versions of a table; appends in between are fine)."""
    journal, marker_id = table_state(tree, root)
    refuse_pending(tree, root, journal)
    if marker_id != seen:
        raise InterruptedCommit(f"{tree.uri(root)}: the table was rewritten while it was read (commit {seen} -> "
                                f"{marker_id}); read it again")  # fmt: skip


# -- writers ------------------------------------------------------------------------------------------


@contextmanager
def exclusive(tree, root: str):
    """Hold the table's local lock (``flock`` on the table's folder itself, so no lock file is left in
    it; the kernel releases it when the process dies). In a store there is no lock: the journal's
    conditional creation is the exclusion."""
    if tree.remote:
        yield
        return
    import fcntl

    os.makedirs(root, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a second writer waits here, then sees what the first one wrote
        yield
    finally:
        os.close(fd)


def stage(tree, root: str, commit_id: str, files: list[tuple[str, bytes, dict]]) -> list[Put]:
    """Write every ``(final path, data, facts)`` whole under the commit's folder; each read back and checked."""
    base = _staging(root, commit_id)
    puts = []
    for final, data, facts in files:
        rel = final[len(root.rstrip("/")) + 1 :]
        puts.append(Put(staged=f"{base}/{rel}", final=final, size=len(data), **facts))
    tree.write_all([(p.staged, d) for p, (_, d, _) in zip(puts, files, strict=True)])
    for p in puts:
        verify(tree, p.staged, p)
    return puts


def verify(tree, path: str, p: Put) -> None:
    """Check the file at ``path`` is what the commit means to put there: its size, and for segments the
    batches, records and last offset the writer reported. A store that acknowledged an upload it did not
    keep whole fails the commit here, before anything is visible."""
    size = tree.size(path)
    if size != p.size:
        raise CommitError(f"{tree.uri(path)}: {size} bytes in place of the {p.size} written (the store did not "
                          "keep the upload whole); nothing was committed")  # fmt: skip
    if p.batches is None:
        return
    from kfmt.log.batches import written_entries
    from kfmt.runtime.errors import CodecError

    batches = records = 0
    last = None
    try:
        entries = written_entries(tree.read(path))  # each batch checked whole: its CRC, or decoded
    except CodecError as e:
        raise CommitError(f"{tree.uri(path)}: not readable back ({e}); nothing was committed") from None
    for _, _, b in entries:
        batches += 1
        records += b.records
        last = b.last_offset
    if (batches, records, last) != (p.batches, p.records, p.last_offset):
        raise CommitError(f"{tree.uri(path)}: holds {batches} batch(es), {records} record(s) up to offset {last}; "
                          f"the writer reported {p.batches}, {p.records} up to {p.last_offset}; nothing was committed")  # fmt: skip


def begin(tree, root: str, journal: Journal) -> None:
    """Take the table: create the journal (not yet ready), exclusively. Exactly one writer can."""
    if not tree.create_exclusive(_pending(root), journal.to_bytes()):
        held, _ = table_state(tree, root)
        what = held.describe() if held else "another commit"
        hint = f" (if no writer is running, `kfmt recover {tree.uri(root)}`)" if tree.remote else ""
        raise ConcurrentCommit(f"{tree.uri(root)}: {what} holds the table; this write was not committed{hint}")


def apply(tree, root: str, journal: Journal) -> None:
    """Put every file of a ready journal in place, remove the old ones, verify, mark done. Idempotent: a
    commit killed part way is completed by running this again."""
    for p in journal.puts:
        if tree.is_file(p.staged):
            tree.move(p.staged, p.final)
    finals = {p.final for p in journal.puts}
    for r in journal.removes:
        if r not in finals:
            tree.remove(r)
    for p in journal.puts:
        verify(tree, p.final, p)
    for folder in sorted({r.rsplit("/", 1)[0] for r in journal.removes}):
        tree.remove_empty(folder)
    version = journal.id if journal.mode == "overwrite" or not journal.version else journal.version
    marker = dict(journal.marker, commit=journal.id, version=version)
    tree.write_all([(_marker(root), json.dumps(marker).encode())])
    tree.remove(_pending(root))
    tree.remove(_staging(root, journal.id))


def roll_back(tree, root: str, journal: Journal) -> None:
    """Drop a journal that never became ready (nothing of it is in place yet)."""
    tree.remove(_staging(root, journal.id))
    tree.remove(_pending(root))


def recover(tree, root: str) -> Journal | None:
    """Complete the table's interrupted commit (ready: roll forward) or drop it (not ready: roll back), and
    remove what commits killed before taking the table left. Its writer must be gone. Returns the journal."""
    journal, _ = table_state(tree, root)
    if journal is not None:
        (apply if journal.ready else roll_back)(tree, root, journal)
    for name, is_dir in tree.listdir(root):
        if is_dir and name.startswith(COMMIT_PREFIX):
            tree.remove(f"{root.rstrip('/')}/{name}")
    return journal


def commit(tree, root: str, files: list[tuple[str, bytes, dict]], *, mode: str, marker: dict,
           check=None) -> Journal:  # fmt: skip
    """One commit of ``files`` (``(final path, data, facts)``) to the table at ``root``. ``check()`` runs once
    the table is held and returns the old files to remove (or raises, e.g. for offsets already there)."""
    journal = Journal(id=new_id(), mode=mode, marker=marker)
    with exclusive(tree, root):
        if not tree.remote:
            recover(tree, root)  # under the lock: a journal here is a killed writer's
        try:
            journal.puts = stage(tree, root, journal.id, files)
            begin(tree, root, journal)
        except BaseException:
            tree.remove(_staging(root, journal.id))
            raise
        try:
            journal.version = table_state(tree, root)[1]
            journal.removes = list(check() or []) if check is not None else []
        except BaseException:
            roll_back(tree, root, journal)
            raise
        journal.ready = True
        commit_point(tree, root, journal)
        try:
            apply(tree, root, journal)
        except Exception as e:
            raise CommittedUnfinished(
                f"{tree.uri(root)}: {journal.describe()} is committed (its journal is ready) but putting its files in"
                f" place stopped: {e}; run `kfmt recover {tree.uri(root)}` to finish it (readers refuse the table"
                " until then); do not write the data again"
            ) from e
    return journal


def commit_point(tree, root: str, journal: Journal) -> None:
    """Write the ready journal and read it back: the commit is made only when it reads back ready (a write
    that failed may have landed; one that succeeded may hold nothing, in a store that keeps an empty body).
    Short of that, nothing is in place: the commit is rolled back and the error says so."""
    failed: Exception | None = None
    try:
        tree.write_all([(_pending(root), journal.to_bytes())])
    except Exception as e:  # noqa: BLE001 - judged by what reads back
        failed = e
    try:
        back = Journal.from_bytes(tree.read(_pending(root)))
        landed = back.ready and back.id == journal.id
    except Exception:  # noqa: BLE001 - unreadable: not ready
        landed = False
    if landed:
        return
    roll_back(tree, root, journal)
    why = f"writing its ready journal failed ({failed})" if failed else "its ready journal did not read back"
    raise CommitError(f"{tree.uri(root)}: {journal.describe()}: {why}; nothing was committed")


def _pending(root: str) -> str:
    return f"{root.rstrip('/')}/{PENDING}"


def _marker(root: str) -> str:
    return f"{root.rstrip('/')}/{MARKER}"


def _staging(root: str, commit_id: str) -> str:
    return f"{root.rstrip('/')}/{COMMIT_PREFIX}{commit_id}"


# -- the readers' side, by segment -------------------------------------------------------------------


def table_root(segment_path: str) -> str:
    """The folder a writer's table would be rooted at for a segment: two levels up (``<root>/<topic>-<p>/x.log``)."""
    return segment_path.rsplit("/", 2)[0] if "/" in segment_path.rsplit("/", 1)[0] else "."


class _LocalView:
    """What readers need of a local table folder (two stats and a small read), without pyarrow."""

    remote = False

    def __init__(self, root: str):
        self.root = os.path.abspath(root)

    @staticmethod
    def is_file(path: str) -> bool:
        return os.path.isfile(path)

    @staticmethod
    def read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    @staticmethod
    def uri(path: str) -> str:
        return path


def _view(root: str, storage: dict | None):
    from kfmt.storage import Tree, is_uri

    return Tree(root, storage) if is_uri(root) else _LocalView(root)


def check_tables(segment_paths, storage: dict | None = None) -> dict[str, str | None]:
    """``{table root: its version}`` for the segments' tables, refusing any whose commit has not finished
    (:class:`InterruptedCommit`). Kafka's own folders have neither journal nor marker: None."""
    out: dict[str, str | None] = {}
    for root in sorted({table_root(str(p)) for p in segment_paths}):
        view = _view(root, storage)
        out[root] = check_table(view, view.root)
    return out


def recheck_files(seen: dict[str, str | None], storage: dict | None = None) -> dict[str, dict]:
    """``{table root: what a reader in another language re-reads to make check_unchanged's decision}``: the
    journal's and the marker's paths or URIs, the name messages give the table, and the version ``seen``.
    The JVM engine (``kfmt.jvm.TableCheck``) follows :func:`table_state`, :func:`refuse_pending` and
    :func:`check_unchanged` on these, held there by tests/test_jvm.py's differential test."""
    out = {}
    for root, version in seen.items():
        view = _view(root, storage)
        out[root] = {"uri": view.uri(view.root), "pending": view.uri(_pending(view.root)),
                     "marker": view.uri(_marker(view.root)), "version": version}  # fmt: skip
    return out


def check_tables_unchanged(seen: dict[str, str | None], roots, storage: dict | None = None) -> None:
    """After reading segments of the tables ``roots``: refuse if any was replaced since :func:`check_tables`."""
    for root in sorted(set(roots)):
        if root in seen:
            view = _view(root, storage)
            check_unchanged(view, view.root, seen[root])
