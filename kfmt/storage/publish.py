"""Outputs that appear complete or not at all.

A tool writes into a staging folder beside its destination (``.NAME.kfmt-partial-<pid>-<random>``); only
when everything is written (and flushed to disk) is it published with renames. A directory output gets a
completion marker (``_KFMT_SUCCESS``, JSON: what was written and what was not carried over) before the one
rename that publishes it, so a directory without the marker is never a finished output. A process killed
at any point leaves at most a staging folder, which the next run for the same destination removes (the
pid in its name is no longer running). An existing destination is refused unless ``overwrite``; replacing
one renames it aside first and removes it only after the new output is in place (a run killed between
the two renames is rolled back by the next one).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

MARKER = "_KFMT_SUCCESS"
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.kfmt-(?P<kind>partial|old)-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(dst: Path) -> None:
    """Remove what interrupted runs for ``dst`` left beside it; restore a destination that was renamed
    aside by a run killed before it put the new one in place."""
    parent = dst.parent
    if not parent.is_dir():
        return
    for p in sorted(parent.iterdir()):
        m = _LEFTOVER.match(p.name)
        if not m or m["name"] != dst.name or _alive(int(m["pid"])):
            continue
        if m["kind"] == "old" and not dst.exists():
            p.rename(dst)  # the replacement never landed: the old output is still the output
            continue
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def occupied(dst: Path) -> bool:
    """Whether ``dst`` holds an output (anything but an empty folder, which is replaced, not refused)."""
    return dst.exists() and not (dst.is_dir() and not any(dst.iterdir()))


def _fsync_tree(root: Path) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())


class Staging:
    """``with Staging(dst, overwrite) as st: write under st.root ...; st.publish(marker)``.

    ``single=True``: ``dst`` is one file (plus companions such as ``.index`` written beside it in
    ``st.root``); they are renamed into ``dst``'s folder, ``dst`` itself last. Otherwise ``dst`` is a
    directory, published whole by one rename, with the completion marker inside.
    """

    def __init__(self, dst: Path, *, overwrite: bool = False, single: bool = False):
        self.dst = Path(dst)
        self.overwrite = overwrite
        self.single = single
        self.root = self.dst.parent / f".{self.dst.name}.kfmt-partial-{os.getpid()}-{secrets.token_hex(4)}"

    def __enter__(self) -> Staging:
        clean_leftovers(self.dst)
        if occupied(self.dst) and not self.overwrite:
            raise FileExistsError(f"{self.dst} exists (pass --overwrite to replace it)")
        if self.dst.is_dir() and not any(self.dst.iterdir()):
            self.dst.rmdir()  # an empty folder is not an output: it is replaced
        self.dst.parent.mkdir(parents=True, exist_ok=True)
        self.root.mkdir()
        return self

    def __exit__(self, *exc) -> None:
        if self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)

    def publish(self, marker: dict | None = None) -> None:
        _fsync_tree(self.root)
        if self.single:
            files = sorted(self.root.iterdir(), key=lambda p: p.name == self.dst.name)  # dst itself last
            for p in files:
                os.replace(p, self.dst.parent / p.name)
        else:
            if marker is not None:
                with open(self.root / MARKER, "w") as f:
                    json.dump(marker, f, indent=1, sort_keys=True)
                    f.flush()
                    os.fsync(f.fileno())
            old = None
            if self.dst.exists():
                old = self.dst.parent / f".{self.dst.name}.kfmt-old-{os.getpid()}-{secrets.token_hex(4)}"
                os.rename(self.dst, old)
            os.rename(self.root, self.dst)
            if old is not None:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        self._sync_dir(self.dst.parent)

    @staticmethod
    def _sync_dir(d: Path) -> None:
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    write_all([(Path(path), data)])


def temp_beside(path: Path) -> Path:
    """A temporary file beside ``path``, named so that the next write of ``path`` removes it if the process
    that made it was killed (kfmt.storage.publish.clean_leftovers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.kfmt-partial-{os.getpid()}-", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def written_beside(path: Path, data: bytes) -> Path:
    """``data`` in a temporary file beside ``path``, flushed to disk, with the permissions a new file gets
    (the umask's), ready to be renamed or linked into place; nothing is left behind on an error."""
    tmp = temp_beside(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_all(staged: list[tuple[Path, bytes]]) -> None:
    """Write every ``(path, data)`` to a temporary name beside it, then rename them all: either every file
    appears or (on an error before the renames) none does."""
    temps: list[tuple[Path, Path]] = []
    try:
        for path, data in staged:
            temps.append((written_beside(path, data), path))
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in temps:
        os.replace(tmp, path)
