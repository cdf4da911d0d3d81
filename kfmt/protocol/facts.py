"""What a protocol message's check walk tells as it passes its bytes, no value built (generator.ir.walk's facts):
its error codes other than 0, where its record sets are, and the strings, uuids and array elements asked for by
their Kafka paths (``TopicData[].Name``). A C reader of traffic (kfmt.runtime.native._capture's summarize) calls the
walks through the generated modules' ``WALK`` capsules with what :func:`walk_plan` gives it, and :func:`body_of`
puts what a walk told back into the shape of the message's JSON (``to_json()["body"]``), those paths only."""

from __future__ import annotations

import functools

from kfmt.runtime.errors import CodecError

#: a request header's client id, by its Kafka path
CLIENT_ID = "ClientId"


@functools.lru_cache(maxsize=None)
def walk_plan(kind: str, key: int, version: int, wanted: tuple[str, ...] = ()) -> tuple | None:
    """How C walks a ``kind`` ("request" or "response") of API ``key`` at ``version``: (header walk, header
    version, its wanted ids, body walk, body wanted ids, the largest frame walked, the body's fact table), the
    walks capsules and the wanted ids a byte per id (1: tell it); the header's client id wanted in a request, the
    body's ``wanted`` paths and the arrays they are in. None: no walk in C for it (no native walk, or a path that
    is found at several places), or not an API and version Kafka has (:class:`CodecError` from kfmt.protocol)."""
    from kfmt.protocol import _plan

    try:
        p = _plan(kind, key, version, None)
    except CodecError:
        return None
    if p is None or p.walk_max < 0:
        return None
    header, body = getattr(p.header, "WALK", None), getattr(p.body, "WALK", None)
    if header is None or body is None:
        return None
    head_want = _wanted(p.header.FACTS, (CLIENT_ID,) if kind == "request" else ())
    body_want = _wanted(p.body.FACTS, wanted)
    if head_want is None or body_want is None:
        return None
    return header, p.header_version, head_want, body, body_want, p.walk_max, p.body.FACTS


def _wanted(facts: dict, paths: tuple[str, ...]) -> bytes | None:
    """A byte per fact id, 1 where the id is found at one of ``paths`` or is an array one of them is in; None: a
    wanted id found at more than one path (what it tells could not be placed)."""
    arrays = {p[: i + 2] for p in paths for i in range(len(p)) if p.startswith("[]", i)}
    out = bytearray(max(facts, default=-1) + 1)
    for i, (_kind, where) in facts.items():
        if any(w in paths or w in arrays for w in where):
            if len(where) > 1:
                return None
            out[i] = 1
    return bytes(out)


def body_of(told, facts: dict) -> dict:
    """The JSON of a body as far as its walk told it (``told``: (fact id, its bytes) in the order passed, None for
    a null; ``facts``: the body's fact table): each wanted string (ASCII: a walk passes only those) and uuid (as
    Kafka writes one) at its place, each element of an array on the way a dict."""
    from kfmt.payloads import _uuid

    body: dict = {}
    current = {"": body}  # the element each array path is at
    for i, raw in told:
        kind, (path,) = facts[i]
        if kind == "array":
            parent, name = _split(path[:-2])
            element: dict = {}
            current[path] = element
            current[parent].setdefault(name, []).append(element)
            continue
        parent, name = _split(path)
        current[parent][name] = None if raw is None else _uuid(raw) if kind == "uuid" else raw.decode("ascii")
    return body


def _split(path: str) -> tuple[str, str]:
    """("Groups[]", "GroupId") of "Groups[].GroupId"; ("", "GroupId") of "GroupId"."""
    at = path.rfind(".")
    return (path[:at], path[at + 1 :]) if at >= 0 else ("", path)
