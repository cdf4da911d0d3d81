"""A captured connection read as it goes (kfmt.protocol.conversation.exchanges): both directions in the capture's
order, each exchange given once it is settled, at most a window of them held, a response captured before its
request still paired with it."""

from __future__ import annotations

import struct

import kfmt.protocol as P
from kfmt.protocol import conversation as C


def _sized(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def _requests(n: int) -> list[bytes]:
    return [P.write_request(18, 3, {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1"}, correlation_id=i,
                            client_id="c") for i in range(n)]  # fmt: skip


def _response(cid: int) -> bytes:
    return P.write_response(18, 3, {"ErrorCode": 0, "ApiKeys": [], "ThrottleTimeMs": 0}, correlation_id=cid)


def _packets(client: bytes, server: bytes, order: dict[str, list[int]]):
    """A ``packet(side, position)`` giving each frame of a side the packet number listed for it, in turn."""
    starts = {side: [p for p, _ in C._frame_bounds(data, 0)] for side, data in (("client", client), ("server", server))}
    return lambda side, pos: order[side][starts[side].index(pos)]


def test_exchanges_are_given_as_the_reading_goes():
    """Ten requests, each answered before the next: the first exchange is given before the last frame is read."""
    reqs, resps = _requests(10), [_response(i) for i in range(10)]
    client, server = _sized(*reqs), _sized(*resps)
    asked: list[int] = []
    numbers = _packets(client, server, {"client": list(range(0, 20, 2)), "server": list(range(1, 20, 2))})

    def packet(side, pos):
        asked.append(pos)
        return numbers(side, pos)

    conv = C.Conversation()
    given = C.exchanges(conv, client, server, packet=packet)
    first = next(given)
    assert first.request.correlation_id == 0 and first.response is not None
    assert len(asked) < 6  # two frames of each side read at most, not twenty
    rest = list(given)
    assert [x.request.correlation_id for x in rest] == list(range(1, 10)) and all(x.response for x in rest)
    assert not conv.problems


def test_requests_never_answered_are_given_once_the_window_is_full(monkeypatch):
    """Kafka answers a connection's requests in order, a few in flight: requests left unanswered (a Produce with
    acks=0) are given unanswered once more than the window's count follow them; nothing is lost or said twice."""
    monkeypatch.setattr(C, "WINDOW", (3, 1 << 20))
    reqs = _requests(10)
    client, server = _sized(*reqs), _sized(_response(9))
    conv = C.Conversation()
    numbers = _packets(client, server, {"client": list(range(10)), "server": [10]})
    given = list(C.exchanges(conv, client, server, packet=numbers))
    assert [x.request.correlation_id for x in given] == list(range(10))
    assert [x.response is not None for x in given] == [False] * 9 + [True] and not conv.problems


def test_a_response_captured_before_its_request_is_paired():
    """Packets out of order between the directions: the response comes first in the capture's order."""
    client, server = _sized(*_requests(2)), _sized(_response(1), _response(0))
    conv = C.Conversation()
    numbers = _packets(client, server, {"client": [5, 6], "server": [1, 7]})
    got = [(x.request.correlation_id, x.response.correlation_id) for x in C.exchanges(conv, client, server,
                                                                                      packet=numbers)]  # fmt: skip
    assert got == [(0, 0), (1, 1)] and not conv.problems


def test_a_response_whose_request_never_comes_is_a_problem():
    client, server = _sized(*_requests(1)), _sized(_response(7), _response(0))
    conv = C.Conversation()
    numbers = _packets(client, server, {"client": [2], "server": [1, 3]})
    got = [x.response is not None for x in C.exchanges(conv, client, server, packet=numbers)]
    assert got == [True]
    assert conv.problems == ["server byte 4: a response to correlation id 7, which no request of this connection "
                             "carries"]  # fmt: skip


def test_memory_stays_flat_as_the_capture_grows(tmp_path):
    """`kfmt dump --summary` and `--json` on captures of 8 MB and 32 MB (bench/bench_capture.py's traffic: Produce
    and Fetch exchanges with compressed batches, 1,460-byte segments): each connection's bytes are put together in
    a spool file and its pages given back as they are read, each exchange printed and dropped: the peak memory of
    the larger is within 12 MB of the smaller's (it grew by the capture's size and more before)."""
    import subprocess
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_capture

    peaks = {}
    for mb in (8, 32):
        path = tmp_path / f"c{mb}.pcap"
        bench_capture.make_capture(path, mb)
        for mode in ("--summary", "--json"):
            code = ("import contextlib, resource\nfrom kfmt.tools.cli import main\n"
                    "with open('/dev/null', 'w') as o, contextlib.redirect_stdout(o):\n"
                    f"    rc = main(['dump', '{mode}', '{path}'])\n"
                    "print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)")  # fmt: skip
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            rc, peak = map(int, r.stdout.split())
            assert rc == 0, r.stderr[-500:]
            peaks[(mb, mode)] = peak
    for mode in ("--summary", "--json"):
        assert peaks[(32, mode)] - peaks[(8, mode)] <= 12, peaks


def test_packet_marks_written_to_spool_files_read_as_those_kept_in_memory(monkeypatch, capsys):
    """A direction's packet marks (where each packet's bytes begin, its number and time) go to spool files once
    kfmt.capture.assembly.MARKS of them are held: with MARKS 3, every public capture's `kfmt dump --json` gives the
    same packet numbers, times and latencies as with the marks in memory."""
    from test_wire_clients import CAPTURES, PUBLIC

    from kfmt.capture import assembly
    from kfmt.tools.cli import main

    for name in PUBLIC:
        outs = []
        for marks in (assembly.MARKS, 3):
            monkeypatch.setattr(assembly, "MARKS", marks)
            main(["dump", "--json", str(CAPTURES / name)])
            outs.append(capsys.readouterr().out)
        assert outs[0] == outs[1] and '"frame":' in outs[0], name
