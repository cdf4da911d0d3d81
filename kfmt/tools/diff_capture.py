"""`kfmt diff CAPTURE [API@V ...]`: what each version of Kafka's protocol would cost on real traffic. Every request
and response of the capture (read as `kfmt dump` reads it) is written again at every version of its API (header
and body, as Kafka frames them), and at each proposal named (``MetadataByTopicId@14``, schemas/protocol_proposals,
for the messages of its API key): bytes per API, kind and version, beside the bytes the capture holds.

A field a version does not have, holding a value other than its default, makes the message "not representable" at
that version (kfmt.tools.diff_protocol.fit's rule); a field a version requires that the message has not takes its
default (Kafka's: 0, false), and where kfmt knows none (an array Kafka would write empty) the message "lacks a
field" there. Both are counted, and that version's bytes are of the messages it can carry (with the same
messages' captured bytes beside them, so the two compare)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict

import kfmt
import kfmt.protocol as P
from kfmt.payloads import kafka_json
from kfmt.protocol.apis import Api


def messages(paths: list[str], problems: list[str]):
    """Every message of the captures, in order (what does not read goes to ``problems``, as kfmt dump says it)."""
    from kfmt.capture import read
    from kfmt.protocol.conversation import read_conversation

    for path in paths:
        cap = read(path)
        problems += cap.problems
        for c in cap.connections:
            conv = read_conversation(c.to_server.data, c.to_client.data, mid_stream=not c.opened,
                                     client_runs=c.to_server.runs, server_runs=c.to_client.runs)  # fmt: skip
            problems += [f"{c.client} -> {c.server}: {p}" for p in conv.problems if "which no request" not in p]
            problems += [f"{c.client} -> {c.server}: the {side}'s bytes lack {at - hole} byte(s) from byte {hole}"
                         for side, hole, at, _, _ in conv.resumed]  # fmt: skip
            for x in conv.exchanges:
                yield x.request
                if x.response is not None:
                    yield x.response


def size_at(a: Api, m, version: int, body: dict) -> int | str:
    """The bytes of message ``m`` (its body's JSON ``body``) framed at ``version`` of ``a`` (with its 4-byte size),
    or why not: ``"not representable"`` (a value that version has no field for, or cannot hold), ``"lacks"`` (a
    field that version requires and the message has not, with no default kfmt knows: an array Kafka would write
    empty)."""
    import importlib

    from kfmt.tools.diff_protocol import fit

    schema = a.request if m.kind == "request" else a.response
    model = importlib.import_module(f"{a.package}.{schema}.model")
    dropped: list[str] = []
    fitted = fit(getattr(model, a.classes[m.kind][version]), body, version, "body", dropped)
    if dropped:
        return "not representable"
    client = m.client_id if m.kind == "request" and a.request_header_version(version) >= 1 else None
    try:
        head = P.write_header(a, m.kind, version, correlation_id=m.correlation_id, client_id=client)
        return 4 + len(head) + len(P.write_body(a, m.kind, version, fitted))
    except kfmt.CodecError as e:  # a field left null (fit's fill where kfmt knows no default), or a value too large
        return "lacks" if "may not be null" in str(e) or "NoneType" in str(e) else "not representable"


def tally(msgs, extra: list[tuple[Api, int]]) -> dict:
    """``{(api, kind): {"messages": n, "captured": bytes, "versions": {label: {"carried", "bytes", "captured",
    "not_representable"}}}}``: each message written at every version of its API and at each of ``extra``."""
    out: dict = defaultdict(lambda: {"messages": 0, "captured": 0, "versions": defaultdict(lambda: {
        "carried": 0, "bytes": 0, "captured": 0, "not_representable": 0, "lacks": 0})})  # fmt: skip
    for m in msgs:
        a = P.api(m.api_key)
        assert a is not None  # (a message read is of an API Kafka has)
        row = out[(m.api_name, m.kind)]
        row["messages"] += 1
        row["captured"] += len(m.frame) + 4
        body = {} if m.body is None else kafka_json(m.body, m.api_version)  # (record sets as their bytes: not decoded)
        targets = [(a, v) for v in a.versions] + [(p, v) for p, v in extra if p.key == m.api_key and (
            p.request if m.kind == "request" else p.response)]  # fmt: skip
        for t, v in targets:
            label = f"v{v}" if t is a else f"{t.name} v{v}"
            cell = row["versions"][label]
            size = size_at(t, m, v, body)
            if isinstance(size, str):
                cell[size.replace(" ", "_")] += 1
                continue
            cell["carried"] += 1
            cell["bytes"] += size
            cell["captured"] += len(m.frame) + 4
    return out


def render(res: dict, markdown: bool) -> str:
    from kfmt.log.measure import table

    rows = []
    for (name, kind), r in sorted(res.items()):
        for label, c in r["versions"].items():
            change = f"{100 * (c['bytes'] - c['captured']) / c['captured']:+.1f}%" if c["captured"] else "-"
            rows.append([f"{name} {kind}", label, f"{c['carried']}/{r['messages']}", c["not_representable"],
                         c["lacks"], c["bytes"], c["captured"], change])  # fmt: skip
    return table(["message", "version", "carried", "not representable", "lacks a field", "bytes",
                  "captured bytes of those", "change"], rows, markdown)  # fmt: skip


def run(args) -> int:
    from kfmt.capture import is_capture
    from kfmt.tools.diff_protocol import parse

    paths = [f for f in args.formats if is_capture(f)]
    problems: list[str] = []
    try:
        extra = parse([f for f in args.formats if f not in paths]) or []
        res = tally(messages(paths, problems), extra)
    except (kfmt.CodecError, OSError, ValueError) as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({f"{n} {k}": r for (n, k), r in sorted(res.items())}, indent=1))
    else:
        print(render(res, args.markdown))
    for line in problems:
        print(f"kfmt diff: problem: {line}", file=sys.stderr)
    return 1 if problems else 0
