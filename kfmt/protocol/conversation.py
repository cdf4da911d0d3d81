"""One TCP connection to a Kafka broker, both directions, read as Kafka's peers read it: size-prefixed frames,
requests in the client's order, each response paired with its request by correlation id (a response does not
say its API), and the raw SASL tokens that follow a SaslHandshake v0 request recognised as tokens, not misread as
frames (Kafka before KIP-152 sends them with a 4-byte size and no header, until the mechanism is done).

Every byte is accounted for: a direction is its whole frames and what follows the last one (a capture that ends
mid-frame); a frame that does not read is a problem with its direction and byte, and the frames after it are
still read."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kfmt.protocol.apis import api
from kfmt.runtime.errors import CodecError

if TYPE_CHECKING:
    from kfmt.protocol import Message

SASL_HANDSHAKE = 17


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
    tails: dict[str, bytes] = field(default_factory=dict)
    #: bytes before the first whole frame of each direction of a stream read from its middle (``mid_stream``)
    skipped: dict[str, int] = field(default_factory=dict)
    #: where a direction with holes (bytes a capture lacks) went on: (side, byte where the hole begins, byte where the
    #: bytes after it begin, bytes of the message cut by the hole before it, bytes after it up to the next whole frame)
    resumed: list[tuple[str, int, int, int, int]] = field(default_factory=list)


#: the largest frame the search for the first whole frame of a stream read from its middle believes (Kafka's
#: socket.request.max.bytes defaults to 100 MiB; a fetch answer is bounded by fetch.max.bytes, 50 MiB)
LARGEST_FRAME = 100 << 20


def split_frames(data: bytes, start: int = 0) -> tuple[list[Frame], bytes]:
    """The whole frames of one direction from byte ``start``, and the bytes after the last one."""
    out, pos = [], start
    for pos, end in _frame_bounds(data, start):
        out.append(Frame(pos, data[pos + 4 : end]))
        pos = end
    return out, data[pos:]


def _frame_bounds(data: bytes, pos: int):
    """(where it starts, where it ends) of each whole frame from byte ``pos`` on, without copying one."""
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            return
        yield pos, pos + 4 + size
        pos += 4 + size


def first_frame_data(data: bytes) -> bytes | None:
    """The first frame of a direction when it is whole (its bytes after the size), else None."""
    bounds = next(_frame_bounds(data, 0), None)
    return None if bounds is None else data[bounds[0] + 4 : bounds[1]]


def first_frame(data: bytes, requests: bool) -> int:
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


def looks_like_request(data: bytes) -> bool:
    """Whether a frame starts as a request of an API and version Kafka has (a raw SASL token does not: PLAIN's
    starts with a NUL and a letter, SCRAM's with "n,", GSSAPI's with an ASN.1 tag)."""
    if len(data) < 8:
        return False
    key, version = struct.unpack_from(">hh", data)
    a = api(key)
    return a is not None and version in a.versions


def _raw_sasl_follows(request: Message) -> bool:
    """Whether raw SASL tokens follow this request (and its response): a SaslHandshake v0 (before KIP-152)."""
    return request.api_key == SASL_HANDSHAKE and request.api_version == 0


def read_conversation(client: bytes, server: bytes, *, backend: str | None = None, mid_stream: bool = False,
                      client_runs: Sequence[tuple[int, bytes]] = (),
                      server_runs: Sequence[tuple[int, bytes]] = ()) -> Conversation:  # fmt: skip
    """Both directions of one connection read: ``client`` the bytes the client sent, ``server`` the broker's.
    ``mid_stream``: the bytes may begin inside a message (a capture that began after the connection opened): each
    direction is read from its first whole frame (:func:`first_frame`), the bytes before it counted in
    ``skipped``. ``client_runs``, ``server_runs``: what a capture holds after holes in a direction (``(byte where
    the run begins, its bytes)``, kfmt.capture.Direction.runs), each run read from its first whole frame, what the
    hole cut said in ``resumed``."""
    from kfmt.protocol import read_request

    conv = Conversation()
    frames: dict[str, list[Frame]] = {}
    for side, data, runs in (("client", client, client_runs), ("server", server, server_runs)):
        conv.skipped[side] = first_frame(data, side == "client") if mid_stream else 0
        frames[side], tail = split_frames(data, conv.skipped[side])
        reach = len(data)
        for at, run in runs:  # the message the hole cut is unread: its bytes before and after the hole counted
            k = first_frame(run, side == "client")
            conv.resumed.append((side, reach, at, len(tail), k))
            more, tail = split_frames(run, k)
            frames[side] += [Frame(at + f.position, f.data) for f in more]
            reach = at + len(run)
        conv.tails[side] = tail
    sasl_raw = False
    for f in frames["client"]:
        if sasl_raw and not looks_like_request(f.data):
            conv.tokens.append(("client", f.position, f.data))
            continue
        try:
            m = read_request(f.data, backend=backend)
        except CodecError as e:
            conv.problems.append(f"client byte {f.position + 4}: {e}")
            continue
        sasl_raw = _raw_sasl_follows(m)
        conv.exchanges.append(Exchange(m, None, f.position))
    _pair(conv, frames["server"], backend)
    for side, tail in conv.tails.items():
        if tail:
            data, runs = (client, client_runs) if side == "client" else (server, server_runs)
            end = runs[-1][0] + len(runs[-1][1]) if runs else len(data)
            conv.problems.append(f"{side} byte {end - len(tail)}: {len(tail)} byte(s) after the last whole frame (the "
                                 "connection ends mid-frame)")  # fmt: skip
    return conv


def _pair(conv: Conversation, answered: list[Frame], backend: str | None) -> None:
    from kfmt.protocol import read_response

    pending = {x.request.correlation_id: x for x in conv.exchanges}
    sasl_raw = False
    for f in answered:
        cid = struct.unpack_from(">i", f.data)[0] if len(f.data) >= 4 else None
        x = pending.pop(cid, None) if cid is not None else None
        if x is None:
            if sasl_raw:
                conv.tokens.append(("server", f.position, f.data))
            else:
                conv.problems.append(f"server byte {f.position + 4}: a response to correlation id {cid}, which no "
                                     "request of this connection carries")  # fmt: skip
            continue
        req = x.request
        try:
            x.response = read_response(f.data, req.api_key, req.api_version, backend=backend)
            x.response_position = f.position
        except CodecError as e:
            conv.problems.append(f"server byte {f.position + 4}: {req.api_name} v{req.api_version} response "
                                 f"(correlation id {cid}): {e}")  # fmt: skip
        sasl_raw = _raw_sasl_follows(req)
