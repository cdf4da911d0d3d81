"""Captured traffic read offline: pcap and pcapng files (dpkt reads the file and the packet headers), TCP
connections put back together byte for byte, each connection's two directions then read as Kafka's peers read
them (kfmt.protocol.conversation).

Nothing is lost or hidden: a direction is the bytes of its segments in sequence order, once each; where a segment
the capture lacks leaves a hole, the bytes after it are counted as unread (a frame cannot be found across a hole),
and said with where the hole is.
May import: kfmt.runtime, kfmt.protocol (which side of a connection opened before the capture sends requests)."""

from __future__ import annotations

import socket
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from kfmt.runtime.errors import CodecError, InvalidValueError

#: a direction's bytes: in memory, or a view of its spool file's mapping
Buffer = bytes | memoryview
#: how many bytes of a direction are read between two givings back of their pages
RELEASE = 4 << 20

#: a pcapng file's first block type (a section header)
PCAPNG = b"\x0a\x0d\x0d\x0a"
#: a pcap file's magic numbers: microseconds and nanoseconds, little-endian first
PCAP_LE = (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")
PCAP = (*PCAP_LE, b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d")


def is_capture(path: str | Path) -> bool:
    """Whether ``path`` is a pcap or pcapng file (by its first four bytes)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            return p.is_file() and f.read(4) in (PCAPNG, *PCAP)
    except OSError:
        return False


@dataclass
class Direction:
    """One direction of a connection: its bytes in order up to the first hole, and what is known after it. The
    bytes are read-only views of a spool file mapped into memory (kfmt.capture.assembly), not held in memory."""

    data: bytes | memoryview = b""
    #: bytes the capture holds after the first hole (a segment it lacks), in ``runs``
    after_hole: int = 0
    #: where the first hole is (the byte of this direction's stream), None: none
    hole_at: int | None = None
    #: what the capture holds after the first hole: (byte of the stream where a run of bytes begins, its bytes),
    #: each run after a hole of its own; read from their first whole frame (kfmt.protocol.conversation)
    runs: list[tuple[int, bytes | memoryview]] = field(default_factory=list)
    #: segments seen again (retransmissions), their bytes kept once
    repeated: int = 0
    #: where each packet's new bytes begin, in stream order: the byte of this direction's stream, the packet's
    #: number in the capture counting from 1 as Wireshark numbers them, its time in seconds since the epoch (NaN:
    #: none), each an array
    mark_at: array | memoryview = field(default_factory=lambda: array("q"))
    mark_number: array | memoryview = field(default_factory=lambda: array("q"))
    mark_time: array | memoryview = field(default_factory=lambda: array("d"))
    #: the spool files' mappings the bytes and marks are views of (None: in memory), and each run's (stream byte,
    #: file offset, length)
    mapping: object = field(default=None, repr=False, compare=False)
    mark_maps: tuple = field(default=(), repr=False, compare=False)
    extents: list[tuple[int, int, int]] = field(default_factory=list, repr=False, compare=False)

    def release(self, position: int) -> None:
        """The bytes before stream byte ``position`` read: their pages, and their marks', given back
        (kfmt.capture.assembly.release); they are read from the files again if asked for."""
        import bisect

        from kfmt.capture.assembly import release

        if self.mapping is not None:
            at, fo, n = next(x for x in reversed(self.extents) if x[0] <= position)  # the run holding it
            release(self.mapping, fo + min(position - at, n))  # type: ignore[arg-type]
        i = bisect.bisect_right(self.mark_at, position) - 1  # (the mark of the packet holding it is kept)
        for m in self.mark_maps:
            if m is not None and i > 0:
                release(m, i * 8)

    def packet_at(self, position: int) -> tuple[int, float | None] | None:
        """The number and time of the packet holding byte ``position`` of this direction (None: no packet does)."""
        import bisect

        i = bisect.bisect_right(self.mark_at, position) - 1
        inside = position < len(self.data) or any(s <= position < s + len(b) for s, b in self.runs)
        if i < 0 or not inside:
            return None
        t = self.mark_time[i]
        return self.mark_number[i], None if t != t else t


@dataclass
class Connection:
    """A TCP connection of the capture: its client's and server's address (the client opened it, or sent the
    first frame that reads as a request), both directions, and whether the capture saw it opened."""

    client: tuple[str, int]
    server: tuple[str, int]
    to_server: Direction
    to_client: Direction
    opened: bool
    notes: list[str] = field(default_factory=list)


@dataclass
class Capture:
    """A capture file read: its TCP connections, and what could not be read (one line each, with its byte)."""

    connections: list[Connection]
    problems: list[str]


def connections(path: str | Path) -> list[Connection]:
    """Every TCP connection with payload in the capture at ``path`` (pcap or pcapng), in the order first seen."""
    return read(path).connections


def read(path: str | Path) -> Capture:
    """The capture at ``path`` read: its connections, and a capture that ends inside a packet record said. Each
    direction's bytes are put together on disk as the packets come (kfmt.capture.assembly) and mapped."""
    from kfmt.capture.assembly import Assembly, Spool

    problems: list[str] = []
    spool = Spool()
    try:
        flows = _native_flows(Path(path), spool, problems)
        if flows is None:
            flows = _flows(Path(path), spool, problems)
        out, seen = [], set()
        for (a, b), flow in flows.items():
            if (a, b) in seen or (b, a) in seen:
                continue
            seen.add((a, b))
            back = flows.get((b, a)) or Assembly(spool)
            if flow.empty and back.empty:
                continue
            out.append(_connection(a, b, flow, back))
    finally:
        spool.close()
    return Capture(out, problems)


def _flows(path: Path, spool, problems: list[str]) -> dict:
    """Each direction of each TCP connection of the capture put together (kfmt.capture.assembly.Assembly), by its
    two ends, in the order first seen."""
    from kfmt.capture.assembly import Assembly

    flows: dict[tuple, Assembly] = {}
    for src, dst, seq, flags, payload, packet in _segments(path, problems):
        flow = flows.get((src, dst))
        if flow is None:
            flow = flows[(src, dst)] = Assembly(spool)
        if flags & 0x02 and not flags & 0x10:  # SYN without ACK: this side opened the connection
            flow.syn = seq
        elif flags & 0x02:  # SYN-ACK: its sequence number starts the other direction
            flow.synack = seq
        if payload:
            flow.add(seq, payload, packet)
    return flows


def _native_flows(path: Path, spool, problems: list[str]) -> dict | None:
    """What :func:`_flows` gives, put together in C (kfmt.runtime.native._capture, which follows it and hands it
    every frame but an Ethernet frame of a TCP segment over IPv4) for a pcap file where the native backend is
    built; None: read by :func:`_flows` (a pcapng file, or no native backend)."""
    native = _native_capture()
    if native is None:
        return None
    from kfmt.capture.assembly import Finished

    got = native.read(str(path), spool.dir.name, tcp_segment)
    if got is None:
        return None
    flows, cut = got
    if cut is not None:
        unread, done = cut
        problems.append(f"{path}: the capture ends inside a packet record: {unread} byte(s) after byte {done} unread")
    return {(src, dst): Finished(spool, *rest) for src, dst, *rest in flows}


def _native_capture():
    """kfmt.runtime.native._capture where it is built and the native backend is not turned off (nor the Python
    reader asked for: ``KFMT_CAPTURE_PYTHON``, the differential tests' switch), else None."""
    import os

    from kfmt.runtime.native import extension

    return None if os.environ.get("KFMT_CAPTURE_PYTHON") else extension("_capture")


def exchanges_of(conn: Connection, conv, *, backend: str | None = None):
    """The exchanges of a captured connection in their requests' order, one at a time (kfmt.protocol.conversation
    .exchanges): both directions read in the capture's order, a response after its request, so that only the
    exchanges awaiting an answer are held; what else is found goes to ``conv`` (a Conversation)."""
    from kfmt.protocol.conversation import exchanges

    sides = {"client": conn.to_server, "server": conn.to_client}
    released = {"client": 0, "server": 0}

    def packet(side: str, position: int) -> int | None:
        """The packet a frame starts in; the bytes before it are read (frames are read in order): every 4 MiB
        their pages are given back."""
        d = sides[side]
        if position - released[side] > RELEASE:
            d.release(position)
            released[side] = position
        p = d.packet_at(position)
        return None if p is None else p[0]

    yield from exchanges(conv, conn.to_server.data, conn.to_client.data, backend=backend, mid_stream=not conn.opened,
                         client_runs=conn.to_server.runs, server_runs=conn.to_client.runs, packet=packet)  # fmt: skip
    for d in sides.values():  # the connection read: all its pages given back
        d.release(1 << 62)


def _connection(a, b, flow, back) -> Connection:
    one, other = _direction(flow), _direction(back)
    if flow.syn is not None or back.syn is not None:
        a_opened = flow.syn is not None
        opened = True
    elif not one.data or not other.data:  # opened before the capture, one side silent
        a_opened, opened = _talks_first(a, b, one.data, other.data), False
    else:  # opened before the capture
        a_opened, opened = _sends_requests(one.data, other.data), False
    if a_opened:
        return Connection(a, b, one, other, opened)
    return Connection(b, a, other, one, opened)


def _talks_first(a, b, one: Buffer, other: Buffer) -> bool:
    """Whether ``a`` is the client of a connection opened before the capture of which only one side's bytes were
    captured: the talking side when its first frame reads as a request, whole; else (a lone response reads as a
    request too: id 1 as Produce v1, with bytes left over) the side on the higher, ephemeral port."""
    from kfmt.protocol import read_request
    from kfmt.protocol.conversation import first_frame_data

    frame = first_frame_data(one or other)
    try:
        whole = frame is not None and not read_request(frame).trailing
    except CodecError:
        whole = False
    if whole or a[1] == b[1]:
        return bool(one) == whole
    return a[1] > b[1]


def _sends_requests(one: Buffer, other: Buffer) -> bool:
    """Whether ``one`` is the client's side of a connection opened before the capture: the side whose first frame
    reads as a request; where both do (a response with a small correlation id reads as a request too: id 2 as
    Produce v2, whichever side the capture shows first) or neither does (the capture began inside a message), the
    side whose requests the other side's frames answer (by correlation id) the more."""
    from kfmt.protocol.conversation import first_frame_data, looks_like_request

    at_once = [(f := first_frame_data(d)) is not None and looks_like_request(f) for d in (one, other)]
    if at_once[0] != at_once[1]:
        return at_once[0]
    mine, theirs = _answered(one, other), _answered(other, one)
    if mine[0] != theirs[0]:  # both read as requests (a response's small correlation id does), or neither does
        return mine[0] > theirs[0]
    return at_once[0] or (mine > (0, 0) and mine >= theirs)


def _answered(client: Buffer, server: Buffer) -> tuple[int, int]:
    """(how many of ``server``'s frames answer a request of ``client`` by correlation id, how many requests), the
    two read from their first whole frames (each frame's first 8 bytes read, none copied whole)."""
    from kfmt.protocol.conversation import _frame_bounds, first_frame, looks_like_request

    asked = {struct.unpack_from(">i", client, p + 8)[0] for p, e in _frame_bounds(client, first_frame(client, True))
             if looks_like_request(bytes(client[p + 4 : min(e, p + 12)]))}  # fmt: skip
    return sum(e - p >= 8 and struct.unpack_from(">i", server, p + 4)[0] in asked
               for p, e in _frame_bounds(server, first_frame(server, False))), len(asked)  # fmt: skip


def _direction(flow) -> Direction:
    """A direction's bytes put together (kfmt.capture.assembly.Assembly): in sequence order from the SYN's next
    byte (or the lowest sequence number seen), each once; where a segment the capture lacks leaves a hole, the bytes
    up to it are ``data`` and what follows goes on in ``runs``, a run per stretch between holes."""
    m, extents, marks = flow.finish()
    view = memoryview(m) if m is not None else memoryview(b"")
    (_, _, first), *later = extents
    (_, at), (_, number), (_, time) = marks
    d = Direction(view[:first], runs=[(a, view[fo : fo + n]) for a, fo, n in later], repeated=flow.repeated,
                  mark_at=at, mark_number=number, mark_time=time, mapping=m, mark_maps=tuple(x for x, _ in marks),
                  extents=extents)  # fmt: skip
    if d.runs:
        d.hole_at, d.after_hole = len(d.data), sum(len(b) for _, b in d.runs)
    return d


def _segments(path: Path, problems: list[str]):
    """(source, destination, sequence number, flags, payload, (packet number, time)) of each TCP segment of the
    capture (packets numbered from 1 over every packet, as Wireshark numbers them); a file that ends inside a
    record goes to ``problems`` with the byte where the last whole record ends."""
    import dpkt

    with path.open("rb") as f:
        magic = f.read(4)
        f.seek(0)
        if magic not in (PCAPNG, *PCAP):
            raise InvalidValueError(f"{path}: not a pcap or pcapng capture (its first bytes are {magic.hex()})",
                                    offset=0)  # fmt: skip
        done = [0]  # where the last whole record read ends
        packets = _pcapng(f, done) if magic == PCAPNG else _pcap(f, path, magic, done)
        try:
            for number, (link, ts, frame) in enumerate(packets, 1):
                seg = tcp_segment(link, frame)
                if seg is not None:
                    yield (*seg, (number, ts))
            cut = done[0] < path.stat().st_size
        except (dpkt.NeedData, dpkt.UnpackError, struct.error, ValueError, IndexError):
            cut = True
        if cut:
            size = path.stat().st_size
            problems.append(f"{path}: the capture ends inside a packet record: {size - done[0]} byte(s) after byte "
                            f"{done[0]} unread")  # fmt: skip


def _pcap(f, path: Path, magic: bytes, done: list[int]):
    """(link type, time, frame) of each whole record of a pcap file (dpkt's reader: microsecond and nanosecond
    files); ``done[0]``: where the last one read ends."""
    import dpkt

    reader = dpkt.pcap.Reader(f)
    link, whole = reader.datalink(), _whole_records_end(path, magic)
    done[0] = f.tell()
    for ts, frame in reader:
        if f.tell() > whole:
            return  # a cut last record (dpkt's pcap reader gives it as it is, unsaid): not read, said by the caller
        done[0] = f.tell()
        yield link, float(ts), frame


def _pcapng(f, done: list[int]):
    """(link type, time, frame) of each packet of a pcapng file, block by block with dpkt's block classes: every
    section (a file merged from several has one each, each with its byte order) and its interfaces, each with its
    own link type, timestamp resolution and offset (dpkt's own reader takes the first interface's for all);
    ``done[0]``: where the last whole block read ends. Blocks that hold no packet (statistics, names) are passed."""
    from dpkt import pcapng as ng

    le = True
    interfaces: list[tuple[int, float, int]] = []
    while True:
        head = f.read(8)
        if len(head) < 8:
            if head:
                raise ValueError("a block header cut short")
            return
        if head[:4] == PCAPNG:  # a section begins: its byte order mark says how it is written
            bom = f.read(4)
            le, head = bom == b"\x4d\x3c\x2b\x1a", head + bom
            interfaces = []
        kind, size = struct.unpack("<II" if le else ">II", head[:8])
        if size < len(head) or size % 4:
            raise ValueError(f"a block of {size} bytes")
        buf = head + f.read(size - len(head))
        if len(buf) < size:
            raise ValueError("a block cut short")
        done[0] = f.tell()
        if kind == ng.PCAPNG_BT_IDB:
            interfaces.append(_interface((ng.InterfaceDescriptionBlockLE if le else ng.InterfaceDescriptionBlock)(buf),
                                         le))  # fmt: skip
        elif kind in (ng.PCAPNG_BT_EPB, ng.PCAPNG_BT_PB):
            cls = {ng.PCAPNG_BT_EPB: (ng.EnhancedPacketBlockLE, ng.EnhancedPacketBlock),
                   ng.PCAPNG_BT_PB: (ng.PacketBlockLE, ng.PacketBlock)}[kind][0 if le else 1]  # fmt: skip
            blk = cls(buf)
            link, divisor, offset = interfaces[blk.iface_id]
            yield link, offset + ((blk.ts_high << 32) | blk.ts_low) / divisor, blk.pkt_data
        elif kind == ng.PCAPNG_BT_SPB:  # no time, no interface id: the section's first interface
            (length,) = struct.unpack_from("<I" if le else ">I", buf, 8)
            yield interfaces[0][0], None, buf[12 : 12 + min(length, size - 16)]


def _interface(idb, le: bool) -> tuple[int, float, int]:
    """An interface's (link type, timestamp units per second, offset in seconds), by its options (microseconds and
    no offset unless it says otherwise)."""
    from dpkt import pcapng as ng

    divisor, offset = 1e6, 0
    for opt in idb.opts:
        if opt.code == ng.PCAPNG_OPT_IF_TSRESOL:
            v = opt.data[0]
            divisor = float((2 if v & 0x80 else 10) ** (v & 0x7F))
        elif opt.code == ng.PCAPNG_OPT_IF_TSOFFSET:
            (offset,) = struct.unpack("<q" if le else ">q", opt.data[:8])
    return idb.linktype, divisor, offset


def _whole_records_end(path: Path, magic: bytes) -> int:
    """Where the last whole packet record of a pcap file ends (its 24-byte header, then records of a 16-byte
    header whose third field is the bytes captured)."""
    order, size = ("<" if magic in PCAP_LE else ">") + "I", path.stat().st_size
    pos = 24
    with path.open("rb") as f:  # record headers only: the packets are not read
        while pos + 16 <= size:
            f.seek(pos + 8)
            (caplen,) = struct.unpack(order, f.read(4))
            if pos + 16 + caplen > size:
                break
            pos += 16 + caplen
    return min(pos, size)


def tcp_segment(link: int, frame: bytes):
    """(source, destination, sequence number, flags, payload) of the TCP segment a captured frame carries, the two
    ends as (address, port); None where it carries none (or one kfmt does not read)."""
    import dpkt

    seg = _ethernet_ipv4_tcp(link, frame)
    if seg is not None:
        return seg
    ip = _ip(link, frame)  # anything else (VLAN tags, IPv6, other links, odd IP headers): dpkt reads it
    if ip is None or not isinstance(ip.data, dpkt.tcp.TCP):
        return None
    tcp, fam = ip.data, socket.AF_INET6 if isinstance(ip, dpkt.ip6.IP6) else socket.AF_INET
    return ((socket.inet_ntop(fam, ip.src), tcp.sport), (socket.inet_ntop(fam, ip.dst), tcp.dport), tcp.seq,
            tcp.flags, bytes(tcp.data))  # fmt: skip


_ADDRESSES: dict[bytes, str] = {}
_IPV4_TCP = struct.Struct(">BxHxxHxB10xHHII")  # version+IHL, total length, flags+fragment, protocol; ports, seq, ack


def _ethernet_ipv4_tcp(link: int, frame: bytes):
    """(source, destination, sequence number, flags, payload) of an unfragmented TCP segment over IPv4 in an
    Ethernet frame without VLAN tags, read with struct (what most captures hold, 5 times faster than dpkt's
    objects); None for anything else, which :func:`_ip` reads. The payload ends where the IP packet's total length
    says (an Ethernet frame is padded to 60 bytes); a frame cut short by the capture's snap length is None too."""
    if link != 1 or frame[12:14] != b"\x08\x00" or len(frame) < 54:
        return None
    vihl, total, frag, proto, sport, dport, seq, _ = _IPV4_TCP.unpack_from(frame, 14)
    ihl = (vihl & 15) * 4
    if vihl >> 4 != 4 or proto != 6 or frag & 0x3FFF or ihl < 20 or len(frame) < 14 + total:
        return None
    at = 14 + ihl
    if len(frame) < at + 20:
        return None
    doff = (frame[at + 12] >> 4) * 4
    if doff < 20 or ihl + doff > total:
        return None
    src, dst = bytes(frame[26:30]), bytes(frame[30:34])
    if ihl != 20:
        sport, dport, seq = struct.unpack_from(">HHI", frame, at)
    return ((_ADDRESSES.get(src) or _address(src), sport), (_ADDRESSES.get(dst) or _address(dst), dport), seq,
            frame[at + 13], bytes(frame[at + doff : 14 + total]))  # fmt: skip


def _address(raw: bytes) -> str:
    text = _ADDRESSES[raw] = socket.inet_ntop(socket.AF_INET, raw)
    return text


LINUX_SLL2 = 276  # the Linux cooked capture v2 link type (tcpdump.org's LINKTYPE_LINUX_SLL2)


def _ip(link: int, frame: bytes):
    """The IP packet of a captured frame, by the capture's link type (None: not IP, or not one kfmt knows)."""
    import dpkt

    try:
        if link == dpkt.pcap.DLT_EN10MB:
            pkt = dpkt.ethernet.Ethernet(frame).data
        elif link == dpkt.pcap.DLT_LINUX_SLL:
            pkt = dpkt.sll.SLL(frame).data
        elif link == LINUX_SLL2:  # what `tcpdump -i any` writes since libpcap 1.10
            pkt = dpkt.sll2.SLL2(frame).data
        elif link in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
            family = struct.unpack("<I" if link == dpkt.pcap.DLT_NULL else ">I", frame[:4])[0]
            pkt = (dpkt.ip6.IP6 if family in (10, 24, 28, 30) else dpkt.ip.IP)(frame[4:])
        elif link in (dpkt.pcap.DLT_RAW, 12, 14, 101):
            pkt = (dpkt.ip6.IP6 if frame[:1] and frame[0] >> 4 == 6 else dpkt.ip.IP)(frame)
        else:
            return None
    except (dpkt.UnpackError, struct.error, IndexError):
        return None
    return pkt if isinstance(pkt, (dpkt.ip.IP, dpkt.ip6.IP6)) else None
