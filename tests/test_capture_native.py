"""A pcap file put back together in C (kfmt.runtime.native._capture) is what kfmt.capture puts together in Python
(the definition: `_flows` and kfmt.capture.assembly.Assembly): every connection's ends, sides, both directions'
bytes, holes, runs after them, retransmissions counted, and where each packet's bytes begin (stream byte, packet
number, time), and the same problems; on the public captures, one behind every link layer (frames the C code hands
to the definition), captures made here, damaged copies, each pcap byte order and time resolution, a stream whose
sequence numbers wrap, and one that waits past PENDING bytes for a segment the capture lacks. pcapng files too:
their sections and interfaces (what the C code does not read exactly as dpkt does, such as an option cut short,
hands the whole file back to the definition, as some damaged copies are)."""

import math
import os
import random
import socket
import struct
from pathlib import Path

import pytest

import kfmt.capture as C
from kfmt.capture.assembly import PENDING

pytestmark = pytest.mark.skipif(C._native_capture() is None, reason="the native backend is not built here")


def _described(path: Path, monkeypatch, python: bool):
    """Everything kfmt.capture.read gives of a capture, as plain values (C's, or with ``python`` the definition's)."""
    if python:
        monkeypatch.setenv("KFMT_CAPTURE_PYTHON", "1")
    else:
        monkeypatch.delenv("KFMT_CAPTURE_PYTHON", raising=False)
    native, read_natively = C._native_flows, []
    monkeypatch.setattr(C, "_native_flows", lambda *a: read_natively.append(native(*a)) or read_natively[-1])
    cap = C.read(path)
    if not python and not path.name.startswith("damaged-"):  # read in C (a damaged pcapng file may be handed back)
        assert read_natively[0] is not None, path
    conns = []
    for c in cap.connections:
        sides = [(bytes(d.data), d.hole_at, d.after_hole, [(a, bytes(r)) for a, r in d.runs], d.repeated,
                  list(d.mark_at), list(d.mark_number), [None if math.isnan(t) else t for t in d.mark_time])
                 for d in (c.to_server, c.to_client)]  # fmt: skip
        conns.append((c.client, c.server, c.opened, sides))
    return conns, cap.problems


def _same(path: Path, monkeypatch) -> list:
    python = _described(path, monkeypatch, True)
    assert _described(path, monkeypatch, False) == python, path
    return python[0]


def test_every_capture_of_the_corpus_reads_alike(tmp_path, monkeypatch):
    from test_capture_spark import corpus

    paths = corpus(tmp_path, 30)
    assert sum(p.suffix == ".pcap" for p in paths) > 100 and sum(p.suffix == ".pcapng" for p in paths) > 5
    for p in paths:
        _same(p, monkeypatch)


def _rewritten(src: Path, dst: Path, big_endian: bool, nano: bool) -> Path:
    """``src`` (a pcap file) written again in another byte order and time resolution."""
    from fuzz.capture import packets

    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, 1)]
    for _, ts, frame in packets(src):
        sec = int(ts)
        frac = round((ts - sec) * (1e9 if nano else 1e6))
        out.append(struct.pack(order + "IIII", sec, frac, len(frame), len(frame)) + frame)
    dst.write_bytes(b"".join(out))
    return dst


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("nano", [False, True])
def test_each_byte_order_and_time_resolution(tmp_path, monkeypatch, big_endian, nano):
    from fuzz.capture import synthetic

    src = synthetic(tmp_path / "s.pcap", 3)
    conns = _same(_rewritten(src, tmp_path / "x.pcap", big_endian, nano), monkeypatch)
    assert conns and conns[0][3][0][0]


def test_nanosecond_times_are_the_definitions_to_the_last_bit(tmp_path, monkeypatch):
    """Each packet's time in a nanosecond pcap is the float dpkt's Decimal gives (C takes the quotient in the x87's
    64-bit significand and, where that lands halfway between two floats, the decimal text): 3,000 packets of
    random seconds and nanoseconds, the extremes, and times that fall halfway after the 64-bit rounding."""
    from fractions import Fraction

    import dpkt

    rng = random.Random(11)
    times = [(0, 0), (0, 1), (2**32 - 1, 999_999_999), (2**32 - 1, 2**32 - 1), (1, 10**9)]
    times += [(rng.randrange(2**32), rng.randrange(10**9)) for _ in range(3000)]
    halfway = []  # times whose 64-bit quotient is exactly halfway between two floats (found by search)
    while len(halfway) < 20:
        sec, frac = rng.randrange(2**31), rng.randrange(10**9)
        q = Fraction(sec * 10**9 + frac, 10**9)
        e = q.numerator.bit_length() - q.denominator.bit_length()
        e -= q < Fraction(2) ** e  # q in [2**e, 2**(e + 1))
        if round(q * Fraction(2) ** (63 - e)) % 2048 == 1024:  # (the 64-bit significand, rounded half to even)
            halfway.append((sec, frac))
    times += halfway
    a, b = socket.inet_aton("10.1.0.1"), socket.inet_aton("10.1.0.2")
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)]
    for i, (sec, frac) in enumerate(times):
        tcp = dpkt.tcp.TCP(sport=50000, dport=9092, seq=1000 + i, flags=dpkt.tcp.TH_ACK, data=b"x")
        ip = dpkt.ip.IP(src=a, dst=b, p=dpkt.ip.IP_PROTO_TCP, data=tcp, len=20 + len(bytes(tcp)))
        frame = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))
        out.append(struct.pack("<IIII", sec, frac, len(frame), len(frame)) + frame)
    path = tmp_path / "times.pcap"
    path.write_bytes(b"".join(out))
    conns = _same(path, monkeypatch)
    assert len(conns[0][3][0][7]) == len(times)  # (every packet's time compared)


def _block(kind: int, body: bytes, order: str) -> bytes:
    body += b"\0" * (-len(body) % 4)
    size = 12 + len(body)
    return struct.pack(order + "II", kind, size) + body + struct.pack(order + "I", size)


def _option(code: int, data: bytes, order: str) -> bytes:
    return struct.pack(order + "HH", code, len(data)) + data + b"\0" * (-len(data) % 4)


def _pcapng(pkts, order: str, sections: int = 1, resolution: int | None = None, offset: int = 0) -> bytes:
    """``pkts`` (link type, time, frame) as a pcapng file in ``order``: ``sections`` sections, each with an interface
    for Ethernet and one for raw IP (a frame's IP packet, its Ethernet header cut), ``resolution`` (if_tsresol) and
    an offset (if_tsoffset) ``offset`` seconds before the first packet given to each; packets in enhanced, obsolete and simple packet blocks in turn."""
    shb = struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)
    offset = int(min(ts for _, ts, _ in pkts)) - offset if offset else 0  # (``offset`` seconds before the first)
    per = -(-len(pkts) // sections)
    out = []
    for k in range(sections):
        opts = b""
        if resolution is not None:
            opts += _option(9, bytes([resolution]), order)
        if offset:
            opts += _option(14, struct.pack(order + "q", offset), order)
        opts += _option(0, b"", order) if opts else b""
        out.append(struct.pack(order + "I", 0x0A0D0D0A) + _block(0x0A0D0D0A, shb, order)[4:])
        for link in (1, 101):
            out.append(_block(1, struct.pack(order + "HHI", link, 0, 262144) + opts, order))
        r = 6 if resolution is None else resolution
        units = 2 ** (r & 0x7F) if r & 0x80 else 10**r
        for i, (_, ts, frame) in enumerate(pkts[k * per : (k + 1) * per]):
            iface, data = (1, frame[14:]) if i % 5 == 4 and frame[12:14] == b"\x08\x00" else (0, frame)
            t = round((ts - offset) * units)
            if i % 7 == 6 and iface == 0 and k == 0:
                out.append(_block(3, struct.pack(order + "I", len(data)) + data, order))
            elif i % 3 == 2:
                out.append(_block(2, struct.pack(order + "HHIIII", iface, 0, t >> 32, t & 0xFFFFFFFF, len(data),
                                                 len(data)) + data, order))  # fmt: skip
            else:
                out.append(_block(6, struct.pack(order + "IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(data),
                                                 len(data)) + data, order))  # fmt: skip
    return b"".join(out)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_sections_interfaces_and_blocks(tmp_path, monkeypatch, order):
    """pcapng in both byte orders: sections, two interfaces each (Ethernet, and raw IP: frames handed to the
    definition), time resolutions and offsets, enhanced, obsolete and simple packet blocks; and damaged copies
    (cut at any place, a byte flipped), each read alike (or handed back whole)."""
    from fuzz.capture import packets, synthetic

    pkts = packets(synthetic(tmp_path / "s.pcap", 6))
    variants = [dict(), dict(sections=3, resolution=9, offset=100), dict(sections=2, resolution=0x83)]
    rng = random.Random(len(order))
    for n, how in enumerate(variants):
        data = _pcapng(pkts, order, **how)
        path = tmp_path / f"v{n}.pcapng"
        path.write_bytes(data)
        conns = _same(path, monkeypatch)
        assert conns and all(side[0] for c in conns for side in c[3][:1]), how
        for k in range(40):
            copy = bytearray(data)
            if k % 2:
                copy[rng.randrange(len(copy))] ^= 1 << rng.randrange(8)
            else:
                del copy[rng.randrange(len(copy)) :]
            damaged = tmp_path / f"damaged-{n}-{k}.pcapng"
            damaged.write_bytes(bytes(copy))
            _same(damaged, monkeypatch)


def _stream(path: Path, segments: list[tuple[int, bytes]], isn: int) -> None:
    """A capture of one connection: the client's SYN (sequence number ``isn``), then its segments (offset in the
    stream, payload) as given, in Ethernet frames, a packet each."""
    import dpkt

    a, b = socket.inet_aton("10.1.0.1"), socket.inet_aton("10.1.0.2")

    def frame(seq: int, flags: int, payload: bytes) -> bytes:
        tcp = dpkt.tcp.TCP(sport=50000, dport=9092, seq=seq % (1 << 32), flags=flags, data=payload)
        ip = dpkt.ip.IP(src=a, dst=b, p=dpkt.ip.IP_PROTO_TCP, data=tcp, len=20 + len(bytes(tcp)))
        return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))

    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=1 << 20)
        w.writepkt(frame(isn, dpkt.tcp.TH_SYN, b""), ts=1.0)
        for i, (off, payload) in enumerate(segments):
            w.writepkt(frame(isn + 1 + off, dpkt.tcp.TH_ACK, payload), ts=2.0 + i / 1000)


def test_sequence_numbers_that_wrap_and_segments_out_of_order(tmp_path, monkeypatch):
    rng = random.Random(5)
    data = bytes(rng.getrandbits(8) for _ in range(60_000))
    cuts = sorted(rng.sample(range(1, len(data)), 40))
    segs = [(s, data[s:e]) for s, e in zip([0, *cuts], [*cuts, len(data)])]
    rng.shuffle(segs[5:15])  # out of order
    segs += [segs[3], (100, data[100:900])]  # a retransmission, an overlap
    path = tmp_path / "wrap.pcap"
    _stream(path, segs, (1 << 32) - 30_000)
    conns = _same(path, monkeypatch)
    assert conns[0][3][0][0] == data


def test_a_segment_missing_while_more_than_pending_bytes_wait(tmp_path, monkeypatch):
    block = os.urandom(60_000)
    n = PENDING // len(block) + 3
    segs = [(i * len(block), block) for i in range(n) if i != 1]  # the second comes last, when taken as missing
    path = tmp_path / "hole.pcap"
    _stream(path, segs + [(len(block), block)], 1000)
    conns = _same(path, monkeypatch)
    (_, hole_at, after, runs, repeated, *_), _ = conns[0][3]
    assert hole_at == len(block) and after == (n - 2) * len(block) and len(runs) == 1 and repeated == 1


def test_no_leaks_reading_again_and_again(tmp_path, monkeypatch):
    """Traced memory stays flat over 300 reads of a capture with a hole, and of a capture cut inside a record."""
    import gc
    import tracemalloc

    from fuzz.capture import synthetic

    src = synthetic(tmp_path / "s.pcap", 4)
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src.read_bytes()[:-7])
    monkeypatch.delenv("KFMT_CAPTURE_PYTHON", raising=False)

    def once():
        for p in (src, cut):
            C.read(p).connections.clear()

    for _ in range(20):
        once()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(300):
        once()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 32 * 1024, grown
