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
from dataclasses import dataclass, field
from pathlib import Path

from kfmt.runtime.errors import InvalidValueError

SEQ = 1 << 32
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
    """One direction of a connection: its bytes in order up to the first hole, and what is known after it."""

    data: bytes = b""
    #: bytes the capture holds after a hole (a segment it lacks): not framed, counted
    after_hole: int = 0
    #: where the first hole is (the byte of this direction's stream), None: none
    hole_at: int | None = None
    #: segments seen again (retransmissions), their bytes kept once
    repeated: int = 0


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
    """The capture at ``path`` read: its connections, and a capture that ends inside a packet record said."""
    problems: list[str] = []
    flows: dict[tuple, dict] = {}
    for src, dst, seq, flags, payload in _segments(Path(path), problems):
        key = (src, dst)
        flow = flows.setdefault(key, {"segments": [], "syn": None})
        if flags & 0x02 and not flags & 0x10:  # SYN without ACK: this side opened the connection
            flow["syn"] = seq
        elif flags & 0x02:  # SYN-ACK: its sequence number starts the other direction
            flow["synack"] = seq
        if payload:
            flow["segments"].append((seq, payload))
    out, seen = [], set()
    for (a, b), flow in flows.items():
        if (a, b) in seen or (b, a) in seen:
            continue
        seen.add((a, b))
        back = flows.get((b, a), {"segments": [], "syn": None})
        if not flow["segments"] and not back["segments"]:
            continue
        out.append(_connection(a, b, flow, back))
    return Capture(out, problems)


def _connection(a, b, flow: dict, back: dict) -> Connection:
    from kfmt.protocol.conversation import looks_like_request, split_frames

    one, other = _reassemble(flow), _reassemble(back)
    if flow["syn"] is not None or back["syn"] is not None:
        a_opened = flow["syn"] is not None
        opened = True
    else:  # opened before the capture: the client is the side whose first frame reads as a request
        frames = split_frames(one.data)[0]
        a_opened = bool(frames) and looks_like_request(frames[0].data)
        opened = False
    if a_opened:
        return Connection(a, b, one, other, opened)
    return Connection(b, a, other, one, opened)


def _reassemble(flow: dict) -> Direction:
    """The bytes of one direction in sequence order (from the SYN's next byte, or the lowest sequence number the
    capture holds), each once; a hole stops the stream, what follows it counted."""
    segs = flow["segments"]
    if not segs:
        return Direction()
    start = (flow["syn"] + 1) % SEQ if flow.get("syn") is not None else (
        (flow["synack"] + 1) % SEQ if flow.get("synack") is not None else min(s for s, _ in segs))  # fmt: skip
    d = Direction()
    buf = bytearray()
    beyond: list[tuple[int, int]] = []  # what the capture holds after the first hole
    for off, payload in sorted(((s - start) % SEQ, p) for s, p in segs):
        end = off + len(payload)
        if d.hole_at is None and end <= len(buf):
            d.repeated += 1
        elif d.hole_at is None and off <= len(buf):
            buf += payload[len(buf) - off :]
        else:
            if d.hole_at is None:
                d.hole_at = len(buf)
            beyond.append((off, end))
    reach = 0
    for off, end in sorted(beyond):  # each byte after the hole counted once
        d.after_hole += max(0, end - max(off, reach))
        reach = max(reach, end)
    d.data = bytes(buf)
    return d


def _segments(path: Path, problems: list[str]):
    """(source, destination, sequence number, flags, payload) of each TCP segment of the capture; a file that
    ends inside a record goes to ``problems`` with the byte where the last whole record ends."""
    import dpkt

    with path.open("rb") as f:
        magic = f.read(4)
        f.seek(0)
        if magic == PCAPNG:
            reader = dpkt.pcapng.Reader(f)
        elif magic in PCAP:
            reader = dpkt.pcap.Reader(f)
        else:
            raise InvalidValueError(f"{path}: not a pcap or pcapng capture (its first bytes are {magic.hex()})",
                                    offset=0)  # fmt: skip
        link = reader.datalink()
        size, done = path.stat().st_size, f.tell()
        whole = size if magic == PCAPNG else _whole_records_end(path, magic)
        try:
            for _, frame in reader:
                if f.tell() > whole:
                    break  # a cut last record (dpkt's pcap reader gives it as it is, unsaid): not read, said below
                done = f.tell()
                ip = _ip(link, frame)
                if ip is None or not isinstance(ip.data, dpkt.tcp.TCP):
                    continue
                tcp = ip.data
                fam = socket.AF_INET6 if isinstance(ip, dpkt.ip6.IP6) else socket.AF_INET
                yield (socket.inet_ntop(fam, ip.src), tcp.sport), (socket.inet_ntop(fam, ip.dst), tcp.dport), tcp.seq, \
                    tcp.flags, bytes(tcp.data)  # fmt: skip
            # a pcap's records end where its last whole one does; a pcapng reader raises at a cut block instead
            # (and blocks after the last packet, interface statistics, are not a cut)
            cut = magic != PCAPNG and (done < whole or whole < size)
        except (dpkt.NeedData, dpkt.UnpackError, struct.error, ValueError):
            cut = True
        if cut:
            problems.append(f"{path}: the capture ends inside a packet record: {size - done} byte(s) after byte {done} "
                            "unread")  # fmt: skip


def _whole_records_end(path: Path, magic: bytes) -> int:
    """Where the last whole packet record of a pcap file ends (its 24-byte header, then records of a 16-byte
    header whose third field is the bytes captured)."""
    data = path.read_bytes()
    order = "<" if magic in PCAP_LE else ">"
    pos = 24
    while pos + 16 <= len(data):
        (caplen,) = struct.unpack_from(order + "I", data, pos + 8)
        if pos + 16 + caplen > len(data):
            break
        pos += 16 + caplen
    return min(pos, len(data))


def _ip(link: int, frame: bytes):
    """The IP packet of a captured frame, by the capture's link type (None: not IP, or not one kfmt knows)."""
    import dpkt

    try:
        if link == dpkt.pcap.DLT_EN10MB:
            pkt = dpkt.ethernet.Ethernet(frame).data
        elif link == dpkt.pcap.DLT_LINUX_SLL:
            pkt = dpkt.sll.SLL(frame).data
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
