"""`kfmt dump --summary CAPTURE` counted in one pass in C where the capture is plain (kfmt.runtime.native._capture's
summarize: the connections seen opened, no hole, every frame whole, every response paired): each message's header
and body walked by its format's generated check walk, which tells its error codes, record sets (checked by their
batches' CRC-32C) and the names the summary reads (kfmt.protocol.facts), no value built. What the walk does not
answer for (a message it declines, a record set that is not whole sound v2 batches, ApiVersions, whose answer the
summary reads whole) is read here as the definition reads it (kfmt.tools.dump.capture, Summary.count). Anything
else, and any message that says something of itself (a note, a problem), and the whole capture is the
definition's: the counts are the same either way (tests/test_capture_summary.py holds them so)."""

from __future__ import annotations

import functools
import struct
from array import array
from collections import Counter

from kfmt.tools.dump.summary import Summary


def summarized(path, summary: Summary, args) -> bool:
    """The capture at ``path`` counted into ``summary`` (``--port``: the connections of that port only); False: not
    here (nothing counted), the definition reads it (``--deep``, a backend other than the native one, or a capture
    that is not plain)."""
    from kfmt.capture import _native_capture, tcp_segment
    from kfmt.payloads import backend_env
    from kfmt.runtime.options import DEFAULT_OPTIONS

    native = _native_capture()
    if args.deep or native is None or backend_env() not in (None, "native"):
        return False
    here = Summary()
    port = -1 if args.port is None else args.port
    got = native.summarize(
        str(path), tcp_segment, _plan_for, functools.partial(_read_here, here), DEFAULT_OPTIONS, port
    )
    if got is None:
        return False
    conns, rows, names, sealed = got
    links = [(f"{c[0]}:{c[1]}", f"{b[0]}:{b[1]}") if c is not None else None for c, b, _ in conns]
    here.connections = sum(1 for *_, carried in conns if carried)
    for row in rows:
        _absorb_row(here, row, links)
    for key in names:
        _named(here, key)
    here.batches["crc_checked"] += sealed
    summary.absorb(here.state())
    summary.connections += here.connections
    return True


def _plan_for(kind: str, key: int, version: int):
    """What summarize does with a ``kind`` of API ``key`` at ``version``: a walk (kfmt.protocol.facts.walk_plan and
    whether the summary reads names from the body), False: hand it here, None: hand the capture back (not an API
    and version Kafka has, or raw SASL tokens follow it: the definition says what)."""
    from kfmt.protocol.apis import API_VERSIONS, api
    from kfmt.protocol.conversation import raw_sasl_follows
    from kfmt.protocol.facts import walk_plan

    a = api(key)
    if a is None or version not in a.versions or (kind == "request" and raw_sasl_follows(key, version)):
        return None
    if key == API_VERSIONS:
        return False
    wanted = Summary.NAMED_PATHS.get(a.name, ()) if kind == "request" else ()
    plan = walk_plan(kind, key, version, wanted)
    return False if plan is None else (*plan[:6], bool(wanted))


def _absorb_row(here: Summary, row, links) -> None:
    """A row of summarize's counts (a connection's messages of an API at a version) added as Summary.absorb adds."""
    from kfmt.protocol.apis import api

    conn, key, version, requests, responses, size, errors, latencies = row
    name = api(key).name  # type: ignore[union-attr]  # (summarize counts only APIs Kafka has)
    lat = array("d")
    lat.frombytes(latencies)
    counts = {"requests": requests, "responses": responses, "bytes": size, "errors": Counter(dict(errors)),
              "latencies": lat}  # fmt: skip
    here.absorb({"apis": {name: counts | {"versions": {version}}},
                 "links": {links[conn]: counts | {"versions": {(name, version)}}},
                 "sets": [{}, {}, {}], "supported": {}, "batches": {}})  # fmt: skip


_HEAD = struct.Struct("=ii")


def _named(here: Summary, key: bytes) -> None:
    """The names one or more requests told (summarize's bytes: API and version, client id, then each fact id with
    its bytes) counted as Summary.named counts them."""
    from kfmt.protocol.apis import api
    from kfmt.protocol.facts import body_of, walk_plan

    both, n = _HEAD.unpack_from(key)
    api_key, version, pos = both >> 16, both & 0xFFFF, 8
    client_id = key[pos : pos + n].decode("ascii") if n >= 0 else None
    pos += max(n, 0)
    told = []
    while pos < len(key):
        i, n = _HEAD.unpack_from(key, pos)
        pos += 8
        told.append((i, key[pos : pos + n] if n >= 0 else None))
        pos += max(n, 0)
    name = api(api_key).name  # type: ignore[union-attr]  # (summarize keeps names of APIs Kafka has)
    plan = walk_plan("request", api_key, version, Summary.NAMED_PATHS[name])
    assert plan is not None  # (it walked the request)
    here.named("request", name, client_id, body_of(told, plan[6]), "", 0)


def _read_here(here: Summary, client, broker, at: int, response: int, key: int, version: int, frame: bytes,
               latency: float | None) -> bool:  # fmt: skip
    """A message summarize hands here (the connection's two ends, its place, the API and version, its frame, a
    response's latency) read and counted as the definition counts it; False where it says anything of itself (a
    note, a problem: the definition says it, in its place)."""
    from kfmt.protocol import read_request, read_response
    from kfmt.protocol.records import RecordSets
    from kfmt.runtime.errors import CodecError

    try:
        m = read_response(frame, key, version) if response else read_request(frame)
    except CodecError:
        return False
    sets = RecordSets(m.backend, records="crc", hex=False)
    here.count(m, sets, f"{client[0]}:{client[1]}", f"{broker[0]}:{broker[1]}", latency, at)
    return not m.notes and not sets.problems
