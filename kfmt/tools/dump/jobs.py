"""Where a capture's dump goes, a message at a time: its JSON lines (or text) on out, and what is said (problems and
notes, counted) on err. :class:`Outlet` writes as the reading goes; :class:`Shared` is `kfmt dump --jobs N`:
N processes read the capture's connections alike (the capture is read once, before they part: each maps its spool
files), and each writes the messages of its share. The messages are cut into chunks by their frames' bytes, which
every process knows alike, chunk c written by process c % N, in order: a token goes round a ring of pipes, and a
process writes a chunk when the token comes, so the output is byte for byte the one process's. A process that dies
breaks the ring (the next one reads the end of its pipe): the others stop, and the dump fails in one line."""

from __future__ import annotations

import os
import pickle

from kfmt.runtime import jsonl

#: a chunk's frames, in bytes, and in messages (at most), before the next chunk begins (KFMT_DUMP_CHUNK: messages,
#: for tests that cut small captures into many chunks)
CHUNK_BYTES = 1 << 20
CHUNK_MESSAGES = int(os.environ.get("KFMT_DUMP_CHUNK") or 512)
#: without --jobs, a capture smaller than this is dumped by one process (forking would cost more than it saves)
PARALLEL_FROM = 16 << 20


class Outlet:
    """One process writes every message as it is read."""

    def __init__(self, out, err) -> None:
        self.out, self.err = out, err
        self.problems = self.notes = 0
        self.index = -1  # the message being read, counted from 0 over the capture's connections

    def begin(self, size: int) -> bool:
        """A message of ``size`` frame bytes comes next: whether this process writes it."""
        self.index += 1
        return True

    def put(self, obj) -> None:
        """A JSON line (``out`` writes JSON lines: a kfmt.runtime.jsonl.Lines)."""
        self.out.put(obj)

    def text(self, line: str) -> None:
        """A line of text, its newline included (``out`` a text stream)."""
        self.out.write(line)

    def say(self, kind: str, text: str) -> None:
        """A problem or a note, counted."""
        self._count(kind)
        print(f"kfmt dump: {kind}: {text}", file=self.err)

    def _count(self, kind: str) -> None:
        self.problems, self.notes = self.problems + (kind == "problem"), self.notes + (kind == "note")

    def finish(self) -> None:
        """The capture is read (a share's process ends here; the first one waits for the others)."""

    def abandon(self, status: int = 2) -> list[int]:
        """The dump failed (a share's process ends at once; the first one waits for the others: their statuses)."""
        return []


class Shared(Outlet):
    """``n`` processes, each writing its share of the messages (see the module's text). Made after the capture is
    read and before its connections are: the first process goes on as this one, the others are forked here."""

    def __init__(self, out, err, n: int, carry=None) -> None:
        """``carry``: what each process counts besides problems and notes (a --summary's Summary: ``state()`` in a
        share's process, ``absorb(state)`` in the first)."""
        super().__init__(out, err)
        if out is not None:
            out.flush()
        err.flush()
        self.n, self.k, self.carry = n, 0, carry
        self.children: list[tuple[int, int]] = []  # (process id, the pipe its counts come on)
        self.chunk = self.size = self.count = 0
        self.pending: list[tuple[int, bytes | str]] = []  # (0 err, 1 a JSON line, 2 text, its data) of the chunk
        rings = [os.pipe() for _ in range(n)]
        os.write(rings[0][1], b"t")  # the first chunk's turn
        self.back = -1  # (a share's process: where its counts go)
        for k in range(1, n):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                for _, fd in self.children:
                    os.close(fd)
                self.k, self.back = k, w
                self.children.clear()
                break
            os.close(w)
            self.children.append((pid, r))
        self.take, self.give = rings[self.k][0], rings[(self.k + 1) % n][1]
        for r, w in rings:
            for fd in (r, w):
                if fd not in (self.take, self.give):
                    os.close(fd)

    def _mine(self) -> bool:
        return self.chunk % self.n == self.k

    def begin(self, size: int) -> bool:
        if self.count >= CHUNK_MESSAGES or self.size >= CHUNK_BYTES:
            self._next()
        self.count, self.size = self.count + 1, self.size + size
        return super().begin(size) and self._mine()

    def put(self, obj) -> None:
        if self._mine():
            self.pending.append((1, jsonl.encoded(obj)))

    def text(self, line: str) -> None:
        if self._mine():
            self.pending.append((2, line))

    def say(self, kind: str, text: str) -> None:
        if self._mine():
            self._count(kind)
            self.pending.append((0, f"kfmt dump: {kind}: {text}\n"))

    def _next(self) -> None:
        """The chunk ends: written when its turn comes, if it is this process's."""
        if self._mine():
            if os.read(self.take, 1) != b"t":
                raise OSError("kfmt dump: a process of this dump (--jobs) stopped before its turn")
            for to, data in self.pending:
                if to == 1:
                    self.out.put_bytes(data)
                else:
                    (self.out if to == 2 else self.err).write(data)
            if self.out is not None:
                self.out.flush()
            self.err.flush()
            self.pending = []
            try:
                os.write(self.give, b"t")
            except BrokenPipeError:  # the next process has ended: it had no chunk left (a failure is its status)
                pass
        self.chunk, self.size, self.count = self.chunk + 1, 0, 0

    def finish(self) -> None:
        """The last chunk written; a share's process then hands its counts to the first and ends, and the first
        adds them to its own (failing in one line if a share's process failed; a reader that went away, as one
        process's dump ends then: BrokenPipeError)."""
        try:
            self._next()
        finally:
            self._close_ring()
        if self.k:
            state = (self.problems, self.notes, self.carry.state() if self.carry is not None else None)
            with os.fdopen(self.back, "wb") as f:
                pickle.dump(state, f)
            os._exit(0)
        codes = self._reap()
        if BROKEN in codes:
            raise BrokenPipeError
        failed = [c for c in codes if c]
        if failed:
            raise OSError(f"kfmt dump: a process of this dump (--jobs) failed (exit status {failed[0]})")

    def abandon(self, status: int = 2) -> list[int]:
        """This process failed (``status``: BROKEN where its output's reader went away): a share's process ends at
        once (the ring broken, the others stop); the first waits for the others, and gives their exit statuses."""
        if self.k:
            os._exit(status)
        self._close_ring()
        return self._reap()

    def _close_ring(self) -> None:
        for fd in (self.take, self.give):
            if fd >= 0:
                os.close(fd)
        self.take = self.give = -1

    def _reap(self) -> list[int]:
        """Each share's process waited for, once: their exit statuses, the counts of those that ended well added."""
        codes = []
        for pid, fd in self.children:
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            codes.append(code if code or data else 2)
            if code == 0 and data:
                problems, notes, carried = pickle.loads(data)
                self.problems, self.notes = self.problems + problems, self.notes + notes
                if self.carry is not None:
                    self.carry.absorb(carried)
        self.children = []
        return codes


#: a share's exit status when its output's reader went away (`kfmt dump ... | head`)
BROKEN = 3


def outlet(args, out, err, size: int) -> Outlet:
    """How a capture of ``size`` bytes is dumped: by ``--jobs`` processes where its output goes to a file or pipe
    (JSON lines, text lines, template lines, or a summary: counted in shares, added up at the end), else by this one
    (output in memory); without --jobs, one process per CPU (up to 4) for a capture of PARALLEL_FROM bytes or more."""
    jobs = getattr(args, "jobs", None)
    if jobs is None:
        jobs = min(4, len(os.sched_getaffinity(0))) if size >= PARALLEL_FROM else 1
    summary = args.capture_summary
    to_file = out.has_file() if isinstance(out, jsonl.Lines) else _has_fd(out)
    if jobs > 1 and (summary is not None or to_file) and _has_fd(err):
        return Shared(out if summary is None else None, err, jobs, summary)
    return Outlet(out, err)


def _has_fd(stream) -> bool:
    try:
        return stream.fileno() >= 0
    except (OSError, ValueError, AttributeError):
        return False
