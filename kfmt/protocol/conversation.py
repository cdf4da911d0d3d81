"""One TCP connection to a Kafka broker, both directions, read as Kafka's peers read it: size-prefixed frames,
requests in the client's order, each response paired with its request by correlation id (a response does not
say its API), and the raw SASL tokens that follow a SaslHandshake v0 request recognised as tokens, not misread as
frames (Kafka before KIP-152 sends them with a 4-byte size and no header, until the mechanism is done).

Every byte is accounted for: a direction is its whole frames and what follows the last one (a capture that ends
mid-frame); a frame that does not read is a problem with its direction and byte, and the frames after it are
still read."""

from __future__ import annotations

import heapq
import struct
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kfmt.protocol.apis import api
from kfmt.runtime.errors import CodecError

if TYPE_CHECKING:
    from kfmt.protocol import Message

SASL_HANDSHAKE = 17
#: a direction's bytes: in memory, or a view (of a capture's spool file, kfmt.capture.assembly)
Buffer = bytes | memoryview


@dataclass
class Frame:
    """A frame of one direction: where its 4-byte size starts, and its bytes after the size."""

    position: int
    data: bytes


@dataclass
class Exchange:
    """A request and its response (None: none came before the connection's bytes end), with where each starts."""

    request: Message
    response: Message | None
    request_position: int
    response_position: int | None = None


@dataclass
class Conversation:
    exchanges: list[Exchange] = field(default_factory=list)
    #: raw SASL tokens after a SaslHandshake v0: ("client" or "server", position, bytes)
    tokens: list[tuple[str, int, bytes]] = field(default_factory=list)
    #: one line per thing that did not read, each with its direction and byte
    problems: list[str] = field(default_factory=list)
    #: bytes after the last whole frame of each direction (a connection or capture cut mid-frame)
    tails: dict[str, Buffer] = field(default_factory=dict)
    #: where each direction's bytes end (its last run's end, after holes)
    ends: dict[str, int] = field(default_factory=dict)
    #: how many whole frames each direction holds
    frames: dict[str, int] = field(default_factory=dict)
    #: bytes before the first whole frame of each direction of a stream read from its middle (``mid_stream``)
    skipped: dict[str, int] = field(default_factory=dict)
    #: where a direction with holes (bytes a capture lacks) went on: (side, byte where the hole begins, byte where the
    #: bytes after it begin, bytes of the message cut by the hole before it, bytes after it up to the next whole frame)
    resumed: list[tuple[str, int, int, int, int]] = field(default_factory=list)


#: the largest frame the search for the first whole frame of a stream read from its middle believes (Kafka's
#: socket.request.max.bytes defaults to 100 MiB; a fetch answer is bounded by fetch.max.bytes, 50 MiB)
LARGEST_FRAME = 100 << 20


def split_frames(data: Buffer, start: int = 0) -> tuple[list[Frame], bytes]:
    """The whole frames of one direction from byte ``start``, and the bytes after the last one (copies)."""
    out, pos = [], start
    for pos, end in _frame_bounds(data, start):
        out.append(Frame(pos, bytes(data[pos + 4 : end])))
        pos = end
    return out, bytes(data[pos:])


def _frame_bounds(data: Buffer, pos: int):
    """(where it starts, where it ends) of each whole frame from byte ``pos`` on, without copying one."""
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            return
        yield pos, pos + 4 + size
        pos += 4 + size


def first_frame_data(data: Buffer) -> Buffer | None:
    """The first frame of a direction when it is whole (its bytes after the size), else None."""
    bounds = next(_frame_bounds(data, 0), None)
    return None if bounds is None else data[bounds[0] + 4 : bounds[1]]


def first_frame(data: Buffer, requests: bool) -> int:
    """Where the first whole frame of a direction read from its middle begins (a capture that began inside a
    message): the first byte from which whole frames follow one another to the end of the bytes (the last one may
    be cut where the capture ends), at least one of them, each of a size Kafka takes (a header's 4 bytes at least,
    :data:`LARGEST_FRAME` at most), and, for the client's side (``requests``), the first reading as a request of an
    API and version Kafka has.
    ``len(data)`` where none does."""
    for k in range(len(data) - 3):
        (size,) = struct.unpack_from(">i", data, k)
        if not 4 <= size <= LARGEST_FRAME or k + 4 + size > len(data):
            continue
        if requests and not looks_like_request(data[k + 4 : k + 4 + min(size, 8)]):  # (its first 8 bytes say)
            continue
        end = k
        for start, end in _frame_bounds(data, k):  # the frames from k on, without copying them
            if end - start < 8:
                break
        else:
            tail = data[end : end + 4]
            if len(tail) < 4 or 4 <= struct.unpack_from(">i", tail)[0] <= LARGEST_FRAME:
                return k
    return len(data)


def looks_like_request(data: Buffer) -> bool:
    """Whether a frame starts as a request of an API and version Kafka has (a raw SASL token does not: PLAIN's
    starts with a NUL and a letter, SCRAM's with "n,", GSSAPI's with an ASN.1 tag)."""
    if len(data) < 8:
        return False
    key, version = struct.unpack_from(">hh", data)
    a = api(key)
    return a is not None and version in a.versions


def raw_sasl_follows(api_key: int, api_version: int) -> bool:
    """Whether raw SASL tokens follow a request of this API and version (and its response): a SaslHandshake v0
    (before KIP-152)."""
    return api_key == SASL_HANDSHAKE and api_version == 0


def _raw_sasl_follows(request: Message) -> bool:
    return raw_sasl_follows(request.api_key, request.api_version)


def read_conversation(client: bytes, server: bytes, *, backend: str | None = None, mid_stream: bool = False,
                      client_runs: Sequence[tuple[int, bytes]] = (),
                      server_runs: Sequence[tuple[int, bytes]] = ()) -> Conversation:  # fmt: skip
    """Both directions of one connection read: ``client`` the bytes the client sent, ``server`` the broker's, every
    exchange kept (:func:`exchanges` gives them one at a time). ``mid_stream``: the bytes may begin inside a message
    (a capture that began after the connection opened): each direction is read from its first whole frame
    (:func:`first_frame`), the bytes before it counted in ``skipped``. ``client_runs``, ``server_runs``: what a
    capture holds after holes in a direction (``(byte where the run begins, its bytes)``,
    kfmt.capture.Direction.runs), each run read from its first whole frame, what the hole cut said in ``resumed``."""
    conv = Conversation()
    conv.exchanges = list(exchanges(conv, client, server, backend=backend, mid_stream=mid_stream,
                                    client_runs=client_runs, server_runs=server_runs))  # fmt: skip
    return conv


#: how many exchanges awaiting their answer, and how many bytes of them, a reader in the capture's order keeps at
#: most: Kafka answers a connection's requests in order with a few in flight (max.in.flight.requests.per.connection,
#: 5 by default), so an older request still unanswered is one that gets no answer (a Produce with acks=0)
WINDOW = (1000, 64 << 20)


def exchanges(conv: Conversation, client, server, *, backend: str | None = None, mid_stream: bool = False,
              client_runs: Sequence[tuple[int, Buffer]] = (), server_runs: Sequence[tuple[int, Buffer]] = (),
              packet: Callable[[str, int], int | None] | None = None):  # fmt: skip
    """The exchanges of one connection in the order of their requests, each given once it is settled (answered, or
    known to get no answer), what else is found going to ``conv`` (tokens, problems, tails, skipped, resumed:
    complete once the last exchange is given); the arguments as :func:`read_conversation`'s, ``client`` and
    ``server`` any bytes-like. ``packet(side, position)``: the number of the capture's packet where a frame of
    ``side`` starts: the two directions are then read in the capture's order (a response after its request) and at
    most :data:`WINDOW` exchanges are held (memory bounded by the window, not by the connection); None: every
    request is read before the first response, and every exchange is held until the end."""
    events: dict[str, Iterator[tuple[int, str, Frame]]] = {}
    for side, data, runs in (("client", client, client_runs), ("server", server, server_runs)):
        events[side] = _keyed(side, _side_frames(conv, side, data, runs, mid_stream), packet)
    reader = _Pairing(conv, backend, WINDOW if packet is not None else None)
    for _, side, f in heapq.merge(events["client"], events["server"]):
        if side == "client":
            reader.request(f)
        else:
            reader.response(f)
        yield from reader.settled()
    yield from reader.rest()
    for side, tail in conv.tails.items():
        if tail:
            end = conv.ends[side]
            conv.problems.append(f"{side} byte {end - len(tail)}: {len(tail)} byte(s) after the last whole frame (the "
                                 "connection ends mid-frame)")  # fmt: skip


def _keyed(side: str, frames: Iterator[Frame], packet) -> Iterator[tuple[int, str, Frame]]:
    """``(key, side, frame)``: the key the capture's packet number of the frame's start (never less than the one
    before it), or 0 for the client's frames and 1 for the server's when there is no capture (``packet`` None)."""
    if packet is None:
        order = 0 if side == "client" else 1
        for f in frames:
            yield order, side, f
        return
    last = 0
    for f in frames:
        last = max(last, packet(side, f.position) or last)
        yield last, side, f


def _side_frames(conv: Conversation, side: str, data, runs, mid_stream: bool) -> Iterator[Frame]:
    """The whole frames of one direction, one at a time (each a copy of its bytes), then of each run after a hole;
    ``conv`` told what was skipped before the first, what each hole cut, and the bytes after the last whole frame
    (``tails``; ``ends``: where the direction's bytes end)."""
    conv.skipped[side] = first_frame(data, side == "client") if mid_stream else 0
    conv.frames[side] = 0
    tail = yield from _frames_of(conv, side, data, conv.skipped[side], 0)
    reach = len(data)
    for at, run in runs:  # the message the hole cut is unread: its bytes before and after the hole counted
        k = first_frame(run, side == "client")
        conv.resumed.append((side, reach, at, len(tail), k))
        tail = yield from _frames_of(conv, side, run, k, at)
        reach = at + len(run)
    conv.tails[side], conv.ends[side] = tail, reach


def _frames_of(conv: Conversation, side: str, data: Buffer, start: int, base: int) -> Generator[Frame, None, Buffer]:
    """The whole frames of ``data`` from byte ``start`` (positions counted from ``base``), counted in ``conv``;
    returns the bytes after the last one (a view where ``data`` is one: a size damaged early in a large direction
    copies nothing)."""
    pos = start
    for pos, end in _frame_bounds(data, start):
        conv.frames[side] += 1
        yield Frame(base + pos, bytes(data[pos + 4 : end]))
        pos = end
    return data[pos:]


class _Pairing:
    """Requests and responses of one connection as they come: each response paired with its request by correlation
    id, the exchanges given in their requests' order once settled; the raw SASL tokens after a SaslHandshake v0
    told apart on either side."""

    def __init__(self, conv: Conversation, backend: str | None, window: tuple[int, int] | None):
        self.conv, self.backend, self.window = conv, backend, window
        self.order: deque[Exchange] = deque()  # in request order, not given yet
        self.waiting: dict[int, Exchange] = {}  # by correlation id: awaiting a response
        self.done: set[int] = set()  # (id of) exchanges whose response came (read, or not readable)
        self.early: dict[int, Frame] = {}  # responses read before their requests, by correlation id (a capture's order)
        self.held = 0  # bytes of the frames of the exchanges not given yet, and of the early responses
        self.sasl_client = self.sasl_server = False

    def request(self, f: Frame) -> None:
        from kfmt.protocol import read_request

        if self.sasl_client and not looks_like_request(f.data):
            self.conv.tokens.append(("client", f.position, f.data))
            return
        try:
            m = read_request(f.data, backend=self.backend)
        except CodecError as e:
            self.conv.problems.append(f"client byte {f.position + 4}: {e}")
            return
        self.sasl_client = _raw_sasl_follows(m)
        x = Exchange(m, None, f.position)
        self.order.append(x)
        self.waiting[m.correlation_id] = x
        self.held += len(f.data)
        early = self.early.pop(m.correlation_id, None)
        if early is not None:  # its response was captured first (a capture's packets out of order)
            self.held -= len(early.data)
            self.response(early)

    def response(self, f: Frame) -> None:
        cid = struct.unpack_from(">i", f.data)[0] if len(f.data) >= 4 else None
        x = self.waiting.pop(cid, None) if cid is not None else None
        if x is not None:
            self._answer(x, f, cid)
        elif self.sasl_server:
            self.conv.tokens.append(("server", f.position, f.data))
        elif cid is not None and self.window is not None:  # its request may come later in the capture's order
            self.early[cid] = f
            self.held += len(f.data)
            while len(self.early) > self.window[0] or self.held > self.window[1]:
                self._drop_early()
        else:
            self._unasked(f, cid)

    def _drop_early(self) -> None:
        """The oldest response waiting for its request said: none came."""
        cid = next(iter(self.early))
        f = self.early.pop(cid)
        self.held -= len(f.data)
        self._unasked(f, cid)

    def _unasked(self, f: Frame, cid: int | None) -> None:
        self.conv.problems.append(f"server byte {f.position + 4}: a response to correlation id {cid}, which no "
                                  "request of this connection carries")  # fmt: skip

    def _answer(self, x: Exchange, f: Frame, cid: int | None) -> None:
        from kfmt.protocol import read_response

        req = x.request
        self.done.add(id(x))
        try:
            x.response = read_response(f.data, req.api_key, req.api_version, backend=self.backend)
            x.response_position = f.position
            self.held += len(f.data)
        except CodecError as e:
            self.conv.problems.append(f"server byte {f.position + 4}: {req.api_name} v{req.api_version} response "
                                      f"(correlation id {cid}): {e}")  # fmt: skip
        self.sasl_server = _raw_sasl_follows(req)

    def settled(self) -> Iterator[Exchange]:
        """The exchanges at the front that are answered, and, beyond the window, the oldest unanswered ones."""
        w = self.window
        while self.order and (id(self.order[0]) in self.done or (w is not None and (
                len(self.order) > w[0] or self.held > w[1]))):  # fmt: skip
            yield self._give()

    def rest(self) -> Iterator[Exchange]:
        """Every exchange not given yet, and the responses whose requests never came said."""
        while self.early:
            self._drop_early()
        while self.order:
            yield self._give()

    def _give(self) -> Exchange:
        x = self.order.popleft()
        self.done.discard(id(x))
        if self.waiting.get(x.request.correlation_id) is x:  # given unanswered: a later answer pairs with nothing
            del self.waiting[x.request.correlation_id]
        self.held -= len(x.request.frame or b"") + (len(x.response.frame or b"") if x.response is not None else 0)
        return x
