"""`kfmt explain --api`: a request or response of Kafka's protocol at one version, drawn as the tree of its fields
in wire order (Kafka's names, wire types), or a real frame's bytes annotated field by field (the header's and the
body's, traced through the Construct backend as for record batches)."""

from __future__ import annotations

import importlib
import re
import sys

import kfmt
from kfmt.protocol import PACKAGE
from kfmt.protocol.apis import Api, apis, proposals
from kfmt.protocol.paths import struct_of


def find_api(name: str) -> Api:
    """An API by Kafka's name (``Produce``, any case) or key, or a proposal by its name (``schemas/protocol_proposals``)."""
    for a in apis() + proposals():
        if name.isdigit() and a.key == int(name) and a.proposal is None or a.name.lower() == name.lower():
            return a
    names = ", ".join(a.name for a in apis()[:6])
    raise kfmt.InvalidValueError(f"{name!r}: Kafka has no such API (a key 0-{apis()[-1].key}, or a name: {names}, ...)")


def _schema(a: Api, kind: str) -> str:
    schema = a.request if kind == "request" else a.response
    if not schema:
        raise kfmt.InvalidValueError(
            f"{a.name} is a proposal of a {'response' if kind == 'request' else 'request'} only"
        )
    return schema


def layout(a: Api, kind: str, version: int) -> list[str]:
    """The message's fields at ``version``, one line each, nested fields indented under their array or struct."""
    if version not in a.versions:
        lo, hi = a.versions.start, a.versions.stop - 1
        raise kfmt.InvalidValueError(f"{a.name} v{version}: not a version of the {a.name} {kind} (v{lo}-v{hi})")
    schema = _schema(a, kind)
    pkg = importlib.import_module(f"{a.package}.{schema}")
    model = importlib.import_module(f"{a.package}.{schema}.model")
    cls = a.classes[kind][version]
    header = a.request_header_version(version) if kind == "request" else a.response_header_version(version)
    flexible = "flexible" if a.flexible(version) else "not flexible"
    lines = [f"{a.name} {kind} v{version} (key {a.key}; {flexible}; {kind} header v{header}): {cls}"]
    if a.proposal:
        lines[0] += f" [a proposal, not Kafka's: {a.proposal}]"
    _fields(pkg.FIELDS, model, cls, version, 1, lines)
    return lines


def _fields(fields: dict, model, cls_name: str, version: int, depth: int, lines: list[str]) -> None:
    cls = getattr(model, cls_name)
    kafka = {name: (orig, kind, versions) for name, orig, kind, versions in cls._kafka_fields}
    pad = max(40 - 2 * depth, 8)
    for f in fields[struct_of(cls_name)]:
        orig, kind, versions = kafka.get(f.name, (f.orig_name or f.name, "", None))
        if versions is not None and not versions[0] <= version <= versions[1]:
            continue
        wire = f.wire.split(" if ", 1)[0]
        if kind == "tags":  # the tagged-field section: the tags the spec names at this version, then the others
            lines.append(f"{'  ' * depth}{'(tagged fields)':<{pad}} uvarint count, then each tag, size, bytes")
            for tag, name, tagged_wire in re.findall(r"(\d+): (\w+) ([^,}]+)", wire):
                orig, kind, versions = kafka.get(name, (name, "", None))
                if versions is None or versions[0] <= version <= versions[1]:
                    lines.append(f"{'  ' * (depth + 1)}{'tag ' + tag + ': ' + orig:<{pad - 2}} {tagged_wire}")
                    _nested(fields, model, kind, version, depth + 2, lines)
            lines.append(f"{'  ' * (depth + 1)}{'_unknownTaggedFields':<{pad - 2}} any other tag, kept")
            continue
        lines.append(f"{'  ' * depth}{orig:<{pad}} {wire}")
        _nested(fields, model, kind, version, depth + 1, lines)


def _nested(fields: dict, model, kind: str, version: int, depth: int, lines: list[str]) -> None:
    if kind.startswith(("struct:", "struct[]:")):
        _fields(fields, model, kind.split(":", 1)[1], version, depth, lines)


def annotate(a: Api, kind: str, version: int, frame: bytes, out=None) -> None:
    """Every byte of a frame (without its 4-byte size) with its field, hexdump style: the header, then the body."""
    from kfmt.log.measure import byte_values
    from kfmt.tools.hexrows import write_rows

    out = out or sys.stdout
    if a.proposal:
        raise kfmt.InvalidValueError(f"{a.name} is a proposal: Kafka sends no such frame (draw it without --bytes)")
    hv = a.request_header_version(version) if kind == "request" else a.response_header_version(version)
    head_mod = importlib.import_module(f"{PACKAGE}.{kind}_header")
    body_mod = importlib.import_module(f"{PACKAGE}.{_schema(a, kind)}")
    m = kfmt.protocol.read_request(frame) if kind == "request" else kfmt.protocol.read_response(frame, a.key, version)
    body_at = len(m.encode_header())
    parts = [("header", head_mod, frame[:body_at], 0, {"header_version": hv}),
             ("body", body_mod, frame[body_at : len(frame) - len(m.trailing)], body_at, {"api_version": m.api_version})]  # fmt: skip
    for part, mod, data, base, params in parts:
        write_rows(data, byte_values(mod, data, **params), base, out,
                   lambda label, part=part: f"{part}.{without_switch(label)}" if label else "?", 40)  # fmt: skip
    if m.trailing:
        out.write(f"{len(frame) - len(m.trailing):08x}  {m.trailing[:16].hex(' '):<47}  (after the body: "
                  f"{len(m.trailing)} byte(s) Kafka's parser leaves unread)\n")  # fmt: skip


def without_switch(label: str) -> str:
    """A field label as the Construct trace gives it, without the version switch's own level (``message.``)."""
    return label.replace("message.", "", 1) if label.startswith("message.") else label
