"""`kfmt diff SCHEMA@V1 SCHEMA@V2 --corpus PATH`: the records of one of Kafka's own topics re-encoded at other
versions of their messages (e.g. ``group_coordinator_value@3 group_coordinator_value@4``: the bytes flexible
versions save on a real ``__consumer_offsets``), measured by encoding with the message schemas' codecs.

Each value is decoded by name, turned into Kafka's JSON and built again, field by field, as the message of
the other version (:func:`kfmt.payloads.from_kafka_json`): a field that version does not have is left out, one
it adds takes its default. A record a version cannot hold is counted apart, never dropped unsaid."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from kfmt.payloads import BINDINGS, _codec, _message, decode_key, from_kafka_json, kafka_json
from kfmt.runtime.errors import CodecError


def parse(specs: list[str]) -> tuple[str, list[int]]:
    """``schema@version`` arguments: the one schema and its versions (ValueError: one line why not)."""
    schemas, versions = set(), []
    for s in specs:
        name, _, v = s.partition("@")
        if not v.isdigit():
            raise ValueError(f"{s!r}: give SCHEMA@VERSION, e.g. group_coordinator_value@4")
        schemas.add(name)
        versions.append(int(v))
    if len(schemas) != 1:
        raise ValueError(f"compare versions of one message schema, not {', '.join(sorted(schemas))}")
    schema = schemas.pop()
    if not any(b.value == schema for b in BINDINGS.values()):
        known = sorted({b.value for b in BINDINGS.values()})
        raise ValueError(f"{schema!r} is not a schema of Kafka's own topics' values (known: {', '.join(known)})")
    return schema, versions


def _classes(codec, name: str) -> list:
    """The generated classes of message ``name`` (Kafka's name): one per part (classic, flexible)."""
    import importlib

    model = importlib.import_module(codec.__name__.rsplit(".", 1)[0] + ".model")
    return [c for c in vars(model).values() if isinstance(c, type) and getattr(c, "_kafka_name", None) == name]


def reencode(codec, root, name: str, data: dict, version: int, params: dict) -> int | None:
    """The size of the value at ``version``, built from Kafka's JSON of message ``name`` (None: that version
    cannot hold it)."""
    fields = type(root)._fields
    for cls in _classes(codec, name):
        try:
            message = from_kafka_json(cls, data)
            again = type(root)(**{f: getattr(root, f) for f in fields[:-1]} | {"version": version, fields[-1]: message})
            return len(codec.encode(again, **params))
        except (CodecError, KeyError, TypeError, ValueError):
            continue
    return None


def measure(schema: str, versions: list[int], paths: list[str]) -> dict:
    """Per message type: records, and the bytes of their values as written and at each version."""
    from kfmt.log.batches import read_batches
    from kfmt.logdir.layout import find_segments

    topic = next(t for t, b in BINDINGS.items() if b.value == schema)
    b = BINDINGS[topic]
    codec = _codec(schema, "python")
    out: dict = {"topic": topic, "versions": versions, "messages": {}, "undecoded": 0, "records": 0}
    for seg in find_segments(paths):
        if seg.topic != topic:
            continue
        for batch in read_batches(seg.path):
            for r in [] if batch.is_control else batch.records:
                out["records"] += 1
                _one(out, codec, b, topic, r, versions)
    return out


def _one(out: dict, codec, b, topic: str, r, versions: list[int]) -> None:
    """One record: its value decoded once (as decode_payload does), then re-encoded at each version."""
    try:
        key = decode_key(topic, r.key)
        if r.value is None:
            return  # a tombstone: no value to re-encode
        if b.param and key is None:
            raise CodecError("the value's layout needs its key")
        params = {b.param: key.version} if b.param and key else {}
        root = codec.decode(bytes(r.value), **params)
        value = _message(root, "value")
    except CodecError:
        out["undecoded"] += 1
        return
    data = kafka_json(value.data, value.version)  # the JSON every version is built from
    row = out["messages"].setdefault(value.type, {"records": 0, "written": 0, "at": Counter(), "cannot": Counter()})
    row["records"] += 1
    row["written"] += len(r.value)
    for v in versions:
        size = reencode(codec, root, value.type, data, v, params)
        if size is None:
            row["cannot"][v] += 1
        else:
            row["at"][v] += size


def render(res: dict, markdown: bool = False) -> str:
    vs = res["versions"]
    head = ["message", "records", "as written", *(f"v{v} bytes" for v in vs), f"v{vs[-1]} vs v{vs[0]}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in sorted(res["messages"].items()):
        cells = [name, f"{row['records']:,}", f"{row['written']:,}"]
        cells += [f"{row['at'][v]:,}" + (f" ({row['cannot'][v]} cannot)" if row["cannot"][v] else "") for v in vs]
        a, z = row["at"][vs[0]], row["at"][vs[-1]]
        cells.append(f"{(z - a) / a:+.1%}" if a and not row["cannot"][vs[0]] and not row["cannot"][vs[-1]] else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\n{res['records']:,} records of {res['topic']}; {res['undecoded']} did not decode")
    return "\n".join(lines)


def run(args) -> int:
    try:
        schema, versions = parse(args.formats)
    except ValueError as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    if not args.corpus:
        print("kfmt diff: versions of a message are compared on a corpus: give --corpus LOGDIR", file=sys.stderr)
        return 2
    missing = [p for p in args.corpus if not Path(p).exists()]
    if missing:
        print(f"kfmt diff: no such file or directory: {missing[0]}", file=sys.stderr)
        return 2
    res = measure(schema, versions, args.corpus)
    if args.json:
        print(json.dumps(res, default=dict))
    else:
        print(render(res, args.markdown))
    if res["undecoded"]:
        print(f"kfmt diff: {res['undecoded']} record(s) did not decode (kfmt dump names them)", file=sys.stderr)
        return 1
    return 0
