"""`kfmt diff API@V1 API@V2 --message BODY.json`: one request or response of Kafka's protocol written at several
versions of its API (e.g. ``Metadata@8 Metadata@12``: what the flexible versions save), bytes by field, measured by
encoding with the protocol schemas' codecs and traced through the Construct backend.

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


def parse(specs: list[str]) -> tuple[Api, list[int]] | None:
    """``API@VERSION`` arguments naming a protocol API (None: they name no API, e.g. Kafka's own topics' schemas)."""
    from kfmt.tools.explain_protocol import find_api

    names = {s.partition("@")[0] for s in specs}
    if len(names) != 1:
        return None
    try:
        a = find_api(names.pop())
    except kfmt.CodecError:
        return None
    versions = []
    for s in specs:
        v = s.partition("@")[2]
        if not v.isdigit() or int(v) not in a.versions:
            lo, hi = a.versions.start, a.versions.stop - 1
            raise kfmt.InvalidValueError(f"{s!r}: give {a.name}@VERSION with a version of {a.name} (v{lo}-v{hi})")
        versions.append(int(v))
    return a, versions


def fit(cls, data: dict, version: int, path: str, dropped: list[str]) -> dict:
    """``data`` (Kafka's JSON of a ``cls``) without the fields ``version`` lacks; those that held a value other than
    their default go to ``dropped`` (with their path)."""
    from kfmt.payloads import _value

    module = sys.modules[cls.__module__]
    out = {}
    for name, kafka, kind, versions in cls._kafka_fields:
        if kafka not in data:
            continue
        value, where = data[kafka], f"{path}.{kafka}"
        if versions is not None and not versions[0] <= version <= versions[1]:
            default = _value(getattr(cls(), name), kind)
            if value != default and not (default is None and value in ([], "")):
                dropped.append(where)
            continue
        if kind.startswith("struct:") and isinstance(value, dict):
            value = fit(getattr(module, kind[7:]), value, version, where, dropped)
        elif kind.startswith("struct[]:") and isinstance(value, list):
            elem = getattr(module, kind[9:])
            value = [fit(elem, x, version, f"{where}[{i}]", dropped) if isinstance(x, dict) else x
                     for i, x in enumerate(value)]  # fmt: skip
        out[kafka] = value
    out.update({k: v for k, v in data.items() if k.startswith("_") and k != "_unknownTaggedFields"})
    return out


def measure(a: Api, kind: str, versions: list[int], body: dict) -> dict:
    """``{version: {"bytes": total, "fields": {label: bytes}, "cannot_carry": [paths]}}`` (the body's bytes, the
    header left out)."""
    from kfmt.log.measure import label_counts

    schema = a.request if kind == "request" else a.response
    model = importlib.import_module(f"{P.PACKAGE}.{schema}.model")
    mod = importlib.import_module(f"{P.PACKAGE}.{schema}")
    out = {}
    for v in versions:
        dropped: list[str] = []
        fitted = fit(getattr(model, a.classes[kind][v]), body, v, "body", dropped)
        write = P.write_request if kind == "request" else P.write_response
        frame = write(a.key, v, fitted)
        m = P.read_request(frame) if kind == "request" else P.read_response(frame, a.key, v)
        data = frame[len(m.encode_header()) :]
        out[v] = {"bytes": len(data), "fields": label_counts(mod, data, api_version=v), "cannot_carry": dropped}
    return out


def render(a: Api, kind: str, res: dict, markdown: bool) -> str:
    from kfmt.log.measure import table

    versions = list(res)
    labels = sorted(
        {k for r in res.values() for k in r["fields"]}, key=lambda k: -max(r["fields"][k] for r in res.values())
    )
    rows = [[k.replace("message.", "", 1), *(res[v]["fields"].get(k, 0) for v in versions)] for k in labels]
    rows.append(["(total)", *(res[v]["bytes"] for v in versions)])
    lines = [table(["field", *(f"{a.name} {kind} v{v}" for v in versions)], rows, markdown)]
    for v in versions:
        for where in res[v]["cannot_carry"]:
            lines.append(f"v{v} cannot carry {where} (no such field at v{v}; left out)")
    return "\n".join(lines)


def run(args) -> int:
    try:
        parsed = parse(args.formats)
        if parsed is None:
            return -1  # not a protocol API: the caller tries Kafka's own topics' schemas
        a, versions = parsed
        if not args.message:
            raise kfmt.InvalidValueError("give the message to write: --message BODY.json (Kafka's JSON of its body)")
        body = json.loads(open(args.message, encoding="utf-8").read())
        kind = "response" if args.response else "request"
        res = measure(a, kind, versions, body)
    except (kfmt.CodecError, OSError, ValueError) as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({f"v{v}": {**r, "fields": dict(r["fields"])} for v, r in res.items()}, indent=1))
    else:
        print(render(a, kind, res, args.markdown))
    dropped = sum(len(r["cannot_carry"]) for r in res.values())
    if dropped:  # a version measured without part of the message: said, and not a clean exit
        print(f"kfmt diff: {dropped} field value(s) a version cannot carry were left out of it", file=sys.stderr)
    return 1 if dropped else 0
