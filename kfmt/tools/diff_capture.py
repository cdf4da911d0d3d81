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
from collections import Counter, defaultdict

import kfmt
import kfmt.protocol as P
from kfmt.payloads import kafka_json
from kfmt.protocol.apis import Api


def messages(paths: list[str], problems: list[str]):
    """Every message of the captures, in order (what does not read goes to ``problems``, as kfmt dump says it)."""
    from kfmt.capture import exchanges_of, read
    from kfmt.protocol.conversation import Conversation

    for path in paths:
        cap = read(path)
        problems += cap.problems
        for c in cap.connections:
            conv = Conversation()
            for x in exchanges_of(c, conv):
                yield x.request
                if x.response is not None:
                    yield x.response
            problems += [f"{c.client} -> {c.server}: {p}" for p in conv.problems if "which no request" not in p]
            problems += [f"{c.client} -> {c.server}: the {side}'s bytes lack {at - hole} byte(s) from byte {hole}"
                         for side, hole, at, _, _ in conv.resumed]  # fmt: skip


def written_at(a: Api, m, version: int, body: dict) -> tuple[bytes, bytes] | str:
    """Message ``m`` (its body's JSON ``body``) written at ``version`` of ``a``: (header, body) as Kafka frames
    them (the 4-byte size left out), or why not: ``"not representable"`` (a value that version has no field for,
    or cannot hold), ``"lacks"`` (a field that version requires and the message has not, with no default kfmt
    knows: an array Kafka would write empty)."""
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
        return head, P.write_body(a, m.kind, version, fitted)
    except kfmt.CodecError as e:  # a field left null (fit's fill where kfmt knows no default), or a value too large
        return "lacks" if "may not be null" in str(e) or "NoneType" in str(e) else "not representable"


def size_at(a: Api, m, version: int, body: dict) -> int | str:
    """The bytes of message ``m`` framed at ``version`` of ``a`` (with its 4-byte size), or why not (as
    :func:`written_at` says it)."""
    w = written_at(a, m, version, body)
    return w if isinstance(w, str) else 4 + len(w[0]) + len(w[1])


def field_bytes(a: Api, kind: str, version: int, head: bytes, body: bytes) -> Counter:
    """The bytes of a message written at ``version`` by field (the body's, as `kfmt diff API@V` labels them: a
    string's length and its payload apart, an array's count, a tagged section), the header and size as one."""
    import importlib

    from kfmt.log.measure import label_counts
    from kfmt.tools.explain_protocol import without_switch

    mod = importlib.import_module(f"{a.package}.{a.request if kind == 'request' else a.response}")
    out: Counter = Counter({"(size and header)": 4 + len(head)})
    for label, n in label_counts(mod, body, api_version=version).items():
        out[without_switch(label)] += n
    return out


def tally(msgs, extra: list[tuple[Api, int]], fields: bool = False) -> dict:
    """``{(api, kind): {"messages": n, "captured": bytes, "versions": {label: {"carried", "bytes", "captured",
    "not_representable", "lacks"}}}}``: each message written at every version of its API and at each of ``extra``;
    with ``fields``, each version's bytes by field too (``"fields"``), and the messages' own (re-encoded at the
    version they were captured at) under ``"captured_fields"``."""
    out: dict = defaultdict(lambda: {"messages": 0, "captured": 0, "captured_fields": Counter(),
                                     "versions": defaultdict(lambda: {"carried": 0, "bytes": 0, "captured": 0,
                                                                      "not_representable": 0, "lacks": 0,
                                                                      "fields": Counter()})})  # fmt: skip
    for m in msgs:
        a = P.api(m.api_key)
        assert a is not None  # (a message read is of an API Kafka has)
        row = out[(m.api_name, m.kind)]
        row["messages"] += 1
        row["captured"] += len(m.frame) + 4
        body = {} if m.body is None else kafka_json(m.body, m.api_version)  # (record sets as their bytes: not decoded)
        if fields and m.body is not None:
            row["captured_fields"] += field_bytes(a, m.kind, m.api_version, m.encode_header(),
                                                  P.write_body(a, m.kind, m.api_version, body))  # fmt: skip
        targets = [(a, v) for v in a.versions] + [(p, v) for p, v in extra if p.key == m.api_key and (
            p.request if m.kind == "request" else p.response)]  # fmt: skip
        for t, v in targets:
            label = f"v{v}" if t is a else f"{t.name} v{v}"
            cell = row["versions"][label]
            w = written_at(t, m, v, body)
            if isinstance(w, str):
                cell[w.replace(" ", "_")] += 1
                continue
            cell["carried"] += 1
            cell["bytes"] += 4 + len(w[0]) + len(w[1])
            cell["captured"] += len(m.frame) + 4
            if fields:
                cell["fields"] += field_bytes(t, m.kind, v, *w)
    return out


def what(label: str, labels: set[str]) -> str:
    """What a field label's bytes are: a string's or bytes' ``length`` (KIP-482 made them compact varints), its
    ``payload``, an array's ``count``, a ``tags`` section (KIP-482), or a ``field``'s value."""
    if label.endswith(" [payload]"):
        return "payload"
    if f"{label} [payload]" in labels:
        return "length"
    if label == "tagged_fields" or label.endswith(".tagged_fields"):
        return "tags"
    if any(other.startswith(f"{label}.") for other in labels):
        return "count"
    return "size, header" if label.startswith("(") else "field"


def render_fields(res: dict, markdown: bool) -> str:
    """Per API and kind, bytes by field at every version beside the captured messages' own: what makes a
    version's difference (the rows whose bytes differ most first)."""
    from kfmt.log.measure import table

    out = []
    for (name, kind), r in sorted(res.items()):
        versions = [(v, c) for v, c in r["versions"].items() if c["carried"]]
        labels = set(r["captured_fields"]).union(*(c["fields"] for _, c in versions))
        if not labels:
            continue

        def spread(k, versions=versions, r=r):
            return max(abs(c["fields"].get(k, 0) - r["captured_fields"].get(k, 0)) for _, c in versions)

        rows = [[k, what(k, labels), r["captured_fields"].get(k, 0), *(c["fields"].get(k, 0) for _, c in versions)]
                for k in sorted(labels, key=lambda k: (-spread(k), k))]  # fmt: skip
        rows.append(["(total)", "", sum(r["captured_fields"].values()), *(c["bytes"] for _, c in versions)])
        rows.append(["(messages)", "", r["messages"], *(c["carried"] for _, c in versions)])
        head = (f"{name} {kind}: bytes by field, as captured (each message re-encoded at its own version) and at "
                "each version (the messages it carries)")  # fmt: skip
        out.append(("### " if markdown else "== ") + head + ("" if markdown else " =="))
        out.append(table(["field", "what", "as captured", *(v for v, _ in versions)], rows, markdown))
    return "\n\n".join(out)


def plot(res: dict, stem: str) -> list[str]:
    """One panel per API and kind: each version's bytes against the captured bytes of the same messages (percent
    change); writes <stem>.png and <stem>.svg."""
    import math

    from kfmt.tools.plotting import pyplot, save_figure

    plt = pyplot()
    keys = sorted(res)
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        cells = [(v, c) for v, c in res[key]["versions"].items() if c["carried"] and c["captured"]]
        changes = [100 * (c["bytes"] - c["captured"]) / c["captured"] for _, c in cells]
        ax.bar([v for v, _ in cells], changes, color=["#c44" if x > 0 else "#48a" for x in changes])
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{key[0]} {key[1]}s ({res[key]['messages']} messages)", fontsize=9)
        ax.set_ylabel("% vs captured", fontsize=8)
        ax.tick_params(axis="x", labelrotation=90, labelsize=7)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    return save_figure(fig, stem, dpi=110)


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


def _json(r: dict, fields: bool) -> dict:
    """A row as --json gives it: bytes by field only with --fields."""
    if not fields:
        return {k: v for k, v in r.items() if k != "captured_fields"} | {
            "versions": {v: {k: x for k, x in c.items() if k != "fields"} for v, c in r["versions"].items()}
        }
    return r


def run(args) -> int:
    from kfmt.capture import is_capture
    from kfmt.tools.diff_protocol import parse

    paths = [f for f in args.formats if is_capture(f)]
    problems: list[str] = []
    try:
        extra = parse([f for f in args.formats if f not in paths]) or []
        res = tally(messages(paths, problems), extra, fields=args.fields)
    except (kfmt.CodecError, OSError, ValueError) as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({f"{n} {k}": _json(r, args.fields) for (n, k), r in sorted(res.items())}, indent=1))
    else:
        print(render(res, args.markdown))
        if args.fields:
            print("\n" + render_fields(res, args.markdown))
    if args.plot:
        from pathlib import Path

        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        for p in plot(res, args.plot):
            print(f"wrote {p}", file=sys.stderr)
    for line in problems:
        print(f"kfmt diff: problem: {line}", file=sys.stderr)
    return 1 if problems else 0
