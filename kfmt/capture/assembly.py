"""One direction of a TCP connection put back together as its segments come, its bytes kept on disk, not in
memory: a capture of any size is read with memory bounded by what is out of order at once, not by the capture.

A direction's bytes are written to a spool file in stream order, each once (a retransmission counted, not
written again); a segment ahead of the next byte waits until the bytes before it come. Where they never come (the
capture lacks a segment: a hole), what follows begins a new run: at the end of the capture, or once the bytes
waiting pass :data:`PENDING`. The runs lie one after another in the file, which is mapped into memory when the
capture is read: ``Direction.data`` and the runs are read-only views of it. Where each packet's new bytes begin
(its number and time) is written the same way, to three files of 8-byte values (stream byte, packet number, time),
mapped as arrays: nothing a direction keeps in memory grows with the capture."""

from __future__ import annotations

import heapq
import math
import mmap
import os
import tempfile
from array import array
from collections import OrderedDict

SEQ = 1 << 32
#: bytes of one direction waiting for an earlier segment, beyond which that segment is taken as missing (a hole)
PENDING = 32 << 20
#: segments of a direction held until its first byte is known, when the capture lacks its SYN (the lowest
#: sequence number among them starts it)
LOOKAHEAD = 64
#: spool files open for writing at once (a capture of thousands of connections reopens the others as needed)
OPEN_FILES = 64
#: packet marks a direction holds in memory before it writes them to its spool files
MARKS = 1 << 14


class Spool:
    """The spool files of one capture read, in a temporary folder removed once they are mapped."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="kfmt-capture-")
        self.open: OrderedDict[str, object] = OrderedDict()
        self.count = 0

    def path(self) -> str:
        self.count += 1
        return os.path.join(self.dir.name, f"{self.count}")

    def write(self, path: str, data: bytes) -> None:
        f = self.open.pop(path, None)
        if f is None:
            f = open(path, "ab")  # noqa: SIM115 - kept open across calls, closed when evicted or mapped
            while len(self.open) >= OPEN_FILES:
                self.open.popitem(last=False)[1].close()  # type: ignore[attr-defined]
        self.open[path] = f
        f.write(data)  # type: ignore[attr-defined]

    def mapped(self, path: str, size: int) -> mmap.mmap:
        """The file mapped read-only (the file itself then goes; the mapping keeps its bytes)."""
        f = self.open.pop(path, None)
        if f is not None:
            f.close()  # type: ignore[attr-defined]
        with open(path, "rb") as r:
            m = mmap.mmap(r.fileno(), size, access=mmap.ACCESS_READ)
        os.unlink(path)
        return m

    def close(self) -> None:
        for f in self.open.values():
            f.close()  # type: ignore[attr-defined]
        self.open.clear()
        self.dir.cleanup()


class Assembly:
    """One direction's segments as they come: its SYN (or the SYN-ACK's) sequence number, then each payload."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.file = ""
        self.syn: int | None = None
        self.synack: int | None = None
        self.start: int | None = None
        self.early: list[tuple[int, bytes, tuple]] = []  # before ``start`` is known
        self.nxt = 0  # the stream byte expected next
        self.waiting: list[tuple[int, int, bytes, tuple]] = []  # (stream byte, packet number, payload, packet)
        self.waiting_bytes = 0
        self.runs: list[tuple[int, int]] = [(0, 0)]  # (stream byte, file offset) where each run begins
        self.written = 0
        self.repeated = 0
        self.marks: tuple[array, array, array] = (
            array("q"),
            array("q"),
            array("d"),
        )  # (stream byte, packet number, time) not written yet
        self.mark_files: list[str] = []
        self.nmarks = 0

    @property
    def empty(self) -> bool:
        """Whether no segment with a payload came."""
        return not (self.written or self.early or self.waiting)

    def add(self, seq: int, payload: bytes, packet: tuple) -> None:
        """A segment's payload (``packet``: its number and time in the capture)."""
        if self.start is None:
            self.early.append((seq, payload, packet))
            if self.syn is None and self.synack is None and len(self.early) < LOOKAHEAD:
                return
            self._begin()
            return
        self._take((seq - self.start) % SEQ, payload, packet)

    def _begin(self) -> None:
        """The first byte fixed: after the SYN's (or the SYN-ACK's) sequence number, or the lowest seen."""
        if self.syn is not None:
            self.start = (self.syn + 1) % SEQ
        elif self.synack is not None:
            self.start = (self.synack + 1) % SEQ
        else:
            self.start = min(s for s, _, _ in self.early)
        early, self.early = self.early, []
        for seq, payload, packet in early:
            self._take((seq - self.start) % SEQ, payload, packet)

    def _take(self, off: int, payload: bytes, packet: tuple) -> None:
        if off > self.nxt:  # ahead of the bytes before it: it waits for them
            heapq.heappush(self.waiting, (off, packet[0], payload, packet))
            self.waiting_bytes += len(payload)
            if self.waiting_bytes > PENDING:
                self._hole()
            return
        self._append(off, payload, packet)
        self._drain()

    def _append(self, off: int, payload: bytes, packet: tuple) -> None:
        end = off + len(payload)
        if end <= self.nxt:  # every byte of it seen: a retransmission
            self.repeated += 1
            return
        self._mark(self.nxt, packet)
        self._write(payload[self.nxt - off :])
        self.nxt = end

    def _drain(self) -> None:
        while self.waiting and self.waiting[0][0] <= self.nxt:
            off, _, payload, packet = heapq.heappop(self.waiting)
            self.waiting_bytes -= len(payload)
            self._append(off, payload, packet)

    def _hole(self) -> None:
        """The bytes before the first segment waiting are missing: a new run begins with it."""
        off, _, payload, packet = heapq.heappop(self.waiting)
        self.waiting_bytes -= len(payload)
        self.runs.append((off, self.written))
        self.nxt = off
        self._append(off, payload, packet)
        self._drain()

    def _mark(self, at: int, packet: tuple) -> None:
        at_, number, time = self.marks
        at_.append(at)
        number.append(packet[0])
        time.append(math.nan if packet[1] is None else packet[1])
        self.nmarks += 1
        if len(at_) >= MARKS:
            self._write_marks()

    def _write_marks(self) -> None:
        if not self.mark_files:
            self.mark_files = [self.spool.path() for _ in self.marks]
        for path, a in zip(self.mark_files, self.marks):
            self.spool.write(path, a.tobytes())
            del a[:]

    def _write(self, data: bytes) -> None:
        if not self.file:
            self.file = self.spool.path()
        self.spool.write(self.file, data)
        self.written += len(data)

    def finish(self) -> tuple[mmap.mmap | None, list[tuple[int, int, int]], list]:
        """The direction's mapping (None: no byte), its runs as (stream byte where each begins, file offset,
        length), the first run's from stream byte 0, and its marks: three arrays (stream byte, packet number,
        time), each (its mapping, a view of it as 8-byte values), or in memory (None, the array) when none was
        written."""
        if self.start is None and self.early:
            self._begin()
        while self.waiting:
            self._hole()
        if self.mark_files:
            self._write_marks()
        return _mapped(self.spool, self.file, self.written, self.runs, self.marks, self.mark_files, self.nmarks)


class Finished:
    """A direction put together by kfmt.runtime.native._capture (which follows :class:`Assembly`): its spool files
    and what :meth:`Assembly.finish` gives of them."""

    def __init__(self, spool: Spool, syn, synack, file, written: int, runs, repeated: int, mark_files, nmarks: int):
        self.spool, self.syn, self.synack, self.file, self.written = spool, syn, synack, file, written
        self.runs, self.repeated, self.mark_files, self.nmarks = runs, repeated, mark_files, nmarks

    @property
    def empty(self) -> bool:
        return not self.written

    def finish(self) -> tuple[mmap.mmap | None, list[tuple[int, int, int]], list]:
        """As :meth:`Assembly.finish` (its marks always in their files)."""
        empty = (array("q"), array("q"), array("d"))
        return _mapped(self.spool, self.file, self.written, self.runs, empty, self.mark_files, self.nmarks)


def _mapped(spool: Spool, file: str, written: int, runs, marks: tuple, mark_files, nmarks: int):
    """What :meth:`Assembly.finish` gives of a direction's spool files: the bytes' mapping (None: no byte), its runs
    as (stream byte, file offset, length), and its marks, each (its file's mapping, a view of it as 8-byte values),
    or (None, ``marks``' array in memory) where none was written to a file."""
    m = spool.mapped(file, written) if written else None
    bounds = [fo for _, fo in runs[1:]] + [written]
    held: list = [(None, a) for a in marks]
    if mark_files:
        maps = [spool.mapped(p, nmarks * 8) for p in mark_files]
        held = [(x, memoryview(x).cast(a.typecode)) for x, a in zip(maps, marks)]
    return m, [(at, fo, stop - fo) for (at, fo), stop in zip(runs, bounds)], held


def release(m: mmap.mmap, upto: int) -> None:
    """The pages of mapping ``m`` before file offset ``upto`` given back (read already: the kernel reads them from
    the file again if they are asked for), so that reading a large capture does not hold it in memory."""
    end = upto - upto % mmap.PAGESIZE
    if end > 0:
        m.madvise(mmap.MADV_DONTNEED, 0, end)
