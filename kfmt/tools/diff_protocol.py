"""`kfmt diff API@V1 API@V2 --message BODY.json`: one request or response of Kafka's protocol written at several
versions of its API (e.g. ``Metadata@8 Metadata@12``: what the flexible versions save), or of a proposal
(``Metadata@13 MetadataByTopicId@14``, schemas/protocol_proposals), bytes by field, measured by encoding with the
protocol schemas' codecs and traced through the Construct backend.

The body is Kafka's JSON of the message (``Message.to_json()["body"]``). A field a version does not have is left
out of that version's message: when it held a value other than its default, that version cannot carry it, and
the diff says so, field by field, rather than dropping it unsaid."""

from __future__ import annotations

import importlib
import json
import sys

import kfmt
import kfmt.protocol as P
from kfmt.protocol.apis import Api
from kfmt.protocol.values import at_default


def parse(specs: list[str]) -> list[tuple[Api, int]] | None:
    """``API@VERSION`` arguments, each naming a protocol API or proposal (None: they name none, e.g. Kafka's own
    topics' schemas)."""
    from kfmt.tools.explain_protocol import find_api

    out = []
    for s in specs:
        name, _, v = s.partition("@")
        try:
            a = find_api(name)
        except kfmt.CodecError:
            return None
        if not v.isdigit() or int(v) not in a.versions:
            lo, hi = a.versions.start, a.versions.stop - 1
            raise kfmt.InvalidValueError(f"{s!r}: give {a.name}@VERSION with a version of {a.name} (v{lo}-v{hi})")
        out.append((a, int(v)))
    return out


def fit(cls, data: dict, version: int, path: str, dropped: list[str]) -> dict:
    """``data`` (Kafka's JSON of a ``cls``) without the fields ``version`` lacks, and with those it has and ``data``
    does not (a message of another version) at their defaults, as Kafka's ``new Xxx()`` has them; fields that held
    a value other than their default and ``version`` lacks go to ``dropped`` (with their path)."""
    from kfmt.payloads import _value

    module = sys.modules[cls.__module__]
    out = {}
    tagged = {name for name, _ in getattr(cls, "_kafka_tagged", ())}
    blank = cls()  # each field at its default
    for name, kafka, kind, versions in cls._kafka_fields:
        if kafka not in data:
            present = versions is None or versions[0] <= version <= versions[1]
            default = _value(getattr(blank, name), kind)
            if present and kind != "tags" and name not in tagged:  # (None: null, or no default kfmt knows)
                out[kafka] = [] if default is None and kind.startswith("struct[]:") else default
            continue
        value, where = data[kafka], f"{path}.{kafka}"
        if versions is not None and not versions[0] <= version <= versions[1]:
            if not at_default(cls, name, kind, value):
                dropped.append(where)
            continue
        if kind.startswith("struct:") and isinstance(value, dict):
            value = fit(getattr(module, kind[7:]), value, version, where, dropped)
        elif kind.startswith("struct[]:") and isinstance(value, list):
            elem = getattr(module, kind[9:])
            value = [fit(elem, x, version, f"{where}[{i}]", dropped) if isinstance(x, dict) else x
                     for i, x in enumerate(value)]  # fmt: skip
        out[kafka] = value
    known = {kafka for _, kafka, _, _ in cls._kafka_fields}
    for k, v in data.items():
        if k.startswith("_") and k != "_unknownTaggedFields":
            out[k] = v  # kfmt's own keys (_batches...): what it shows beside a field
        elif k not in known and not _default_elsewhere(cls, k, v):  # a field this version's struct has not at all
            dropped.append(f"{path}.{k}")
    return out


def _default_elsewhere(cls, kafka: str, value) -> bool:
    """Whether ``value`` is the default of field ``kafka`` where another version's struct of the message has it."""
    module = sys.modules[cls.__module__]
    for other in vars(module).values():
        if isinstance(other, type) and getattr(other, "_kafka_name", None) == cls._kafka_name:
            for name, k, kind, _ in getattr(other, "_kafka_fields", ()):
                if k == kafka:
                    return at_default(other, name, kind, value)
    return value in (None, [], "")


def measure(pairs: list[tuple[Api, int]], kind: str, body: dict) -> dict:
    """``{"API vN": {"bytes": total, "fields": {label: bytes}, "cannot_carry": [paths]}}``: the body's bytes at each
    (API or proposal, version), the header left out."""
    from kfmt.log.measure import label_counts

    out = {}
    for a, v in pairs:
        schema = a.request if kind == "request" else a.response
        if not schema:
            raise kfmt.InvalidValueError(f"{a.name} has no {kind} (a proposal of one kind)")
        model = importlib.import_module(f"{a.package}.{schema}.model")
        dropped: list[str] = []
        fitted = fit(getattr(model, a.classes[kind][v]), body, v, "body", dropped)
        data = P.write_body(a, kind, v, fitted)
        mod = importlib.import_module(f"{a.package}.{schema}")
        out[f"{a.name} v{v}"] = {"bytes": len(data), "fields": label_counts(mod, data, api_version=v),
                                 "cannot_carry": dropped}  # fmt: skip
    return out


def render(kind: str, res: dict, markdown: bool) -> str:
    from kfmt.runtime.tables import table
    from kfmt.tools.explain_protocol import without_switch

    labels = sorted(
        {k for r in res.values() for k in r["fields"]}, key=lambda k: -max(r["fields"].get(k, 0) for r in res.values())
    )
    rows = [[without_switch(k), *(r["fields"].get(k, 0) for r in res.values())] for k in labels]
    rows.append(["(total)", *(r["bytes"] for r in res.values())])
    lines = [table(["field", *(f"{name} {kind}" for name in res)], rows, markdown)]
    for name, r in res.items():
        for where in r["cannot_carry"]:
            lines.append(f"{name} cannot carry {where} (no such field there; left out)")
    return "\n".join(lines)


def run(args) -> int:
    try:
        pairs = parse(args.formats)
        if pairs is None:
            return -1  # not a protocol API: the caller tries Kafka's own topics' schemas
        if not args.message:
            raise kfmt.InvalidValueError("give the message to write: --message BODY.json (Kafka's JSON of its body)")
        body = json.loads(open(args.message, encoding="utf-8").read())
        kind = "response" if args.response else "request"
        res = measure(pairs, kind, body)
    except (kfmt.CodecError, OSError, ValueError) as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({name: {**r, "fields": dict(r["fields"])} for name, r in res.items()}, indent=1))
    else:
        print(render(kind, res, args.markdown))
    dropped = sum(len(r["cannot_carry"]) for r in res.values())
    if dropped:  # a version measured without part of the message: said, and not a clean exit
        print(f"kfmt diff: {dropped} field value(s) a version cannot carry were left out of it", file=sys.stderr)
    return 1 if dropped else 0
