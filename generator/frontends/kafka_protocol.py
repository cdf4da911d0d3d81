"""Kafka's network protocol lowered into the schema language: every request and response spec
(``clients/src/main/resources/common/message/*Request.json``, ``*Response.json``) and the two header specs,
a schema each, with the message's version a parameter (``api_version``; a header's is ``header_version``):
the frame does not carry the body's version, the header (or, for a response, the request it answers) does.

A body's versions can come from two sources: a Kafka source tree (the pinned commit, which still holds the old
versions Kafka 4.0 removed) and a folder of newer specs (Kafka 4.1's, as kafka-python 3.0.12 ships them), which
gives the versions the tree lacks and the version the tree marks unstable. Each part is lowered alone (its
classic and its flexible versions each their own struct, :class:`~generator.frontends.kafka_spec.Lowering`), and
the root reads the one the version names. The schema's ``api:`` says which versions come from which source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.frontends.kafka_spec import Lowering, SpecError, Versions, parse, snake

#: where a Kafka source tree keeps the protocol's specs
FOLDER = "clients/src/main/resources/common/message"
#: the headers' specs, and the parameter their versions are
HEADERS = {"RequestHeader": "header_version", "ResponseHeader": "header_version"}
#: the parameter a body's version is
VERSION = "api_version"


@dataclass(frozen=True)
class Source:
    """A folder of specs and how schemas name it (``apache/kafka <commit>``, ``Kafka 4.1 (kafka-python ...)``)."""

    folder: Path
    label: str


@dataclass(frozen=True)
class Part:
    """The versions ``lo``..``hi`` of a message, read from one source's spec."""

    spec: dict
    where: str
    label: str
    lo: int
    hi: int


def protocol_files(folder: Path) -> set[str]:
    """The spec files of ``folder`` the protocol's schemas are lowered from (their names)."""
    return {name for name, _ in _files(folder)}


def _files(folder: Path):
    for f in sorted(folder.glob("*.json")):
        if f.stem.endswith(("Request", "Response")) or f.stem in HEADERS:
            yield f.name, f


def _specs(src: Source) -> dict[str, tuple[dict, str]]:
    """The protocol's specs in ``src``, by key: ``<apiKey>-request`` / ``<apiKey>-response``, or the header's name."""
    out: dict[str, tuple[dict, str]] = {}
    for _, f in _files(src.folder):
        spec = parse(f.read_text(encoding="utf-8"), f"{src.label}: {f.name}")
        if spec.get("type") not in ("request", "response", "header"):
            raise SpecError(
                f"{src.label}: {f.name} is named as a protocol message but its type is {spec.get('type')!r}"
            )
        key = spec["name"] if spec["type"] == "header" else f"{spec.get('apiKey')}-{spec['type']}"
        if key in out:
            raise SpecError(f"{src.label}: {f.name} and {out[key][1]} are both {key}")
        out[key] = (spec, f.name)
    return out


def _range(spec: dict, where: str) -> tuple[int, int]:
    v = Versions.parse(spec.get("validVersions"), f"{where}: validVersions")
    if v.lo is None or v.hi is None:
        raise SpecError(f"{where}: {spec.get('name')} has no closed range of valid versions")
    return v.lo, v.hi


def parts(base: tuple[dict, str] | None, newer: tuple[dict, str] | None, labels: tuple[str, str]) -> list[Part]:
    """Which source gives which versions: the base every version it has that it does not mark unstable; the
    newer source the versions above those (an unstable version's layout may have changed since)."""
    out: list[Part] = []
    top = -1
    if base is not None:
        lo, hi = _range(*base)
        if base[0].get("latestVersionUnstable") and newer is not None and _range(*newer)[1] >= hi:
            hi -= 1  # the newer source knows what became of it
        if hi >= lo:
            out.append(Part(base[0], base[1], labels[0], lo, hi))
            top = hi
    if newer is not None:
        lo, hi = _range(*newer)
        lo = max(lo, top + 1)
        if hi >= lo:
            out.append(Part(newer[0], newer[1], labels[1], lo, hi))
    return out


def _narrowed(p: Part) -> dict:
    return {**p.spec, "validVersions": f"{p.lo}-{p.hi}"}


def _lower_part(p: Part, structs: dict, version: str, first: bool) -> list[tuple[int, int, str]]:
    """One part's structs: (lo, hi, struct) for its classic and its flexible versions."""
    spec, name = _narrowed(p), snake(str(p.spec["name"]))
    suffix = None if first else f"v{p.lo}"
    # a body's fields start at Kafka's defaults; a header's (kfmt.protocol reads a field a header version lacks, the
    # request's client id at v0, as None: there is none)
    implicit = version == "api_version"
    classic = Lowering(spec, p.where, structs, version, suffix=suffix, implicit_defaults=implicit)
    ident = name if first else f"{name}_v{p.lo}"
    out = [(classic.valid.lo or 0, classic.valid.hi or 0, classic.declare_message(ident))]
    if classic.mixed:
        flexible = Lowering(
            spec, p.where, structs, version, flexible_part=True, suffix=suffix or "flexible", implicit_defaults=implicit
        )
        out.append((flexible.valid.lo or 0, flexible.valid.hi or 0, flexible.declare_message(f"{ident}_flexible")))
    return out


def _unstable(ps: list[Part]) -> list[int]:
    """The versions the source that gives them marks unstable (``latestVersionUnstable``: its newest)."""
    return [p.hi for p in ps if p.spec.get("latestVersionUnstable") and p.hi == _range(p.spec, p.where)[1]]


def _flexible(ps: list[Part]) -> str:
    lo = [Versions.parse(p.spec.get("flexibleVersions"), p.where).lo for p in ps]
    first = min((x for x in lo if x is not None), default=None)
    return "none" if first is None else f"{first}+"


def message_schema(ps: list[Part], version: str = VERSION) -> dict:
    """A body (or a header) as a schema: each part lowered, and a root of repr value reading the one the version
    (a parameter) names; bytes after it are what Kafka's parsers leave unread (``trailing: ignore``)."""
    structs: dict[str, dict] = {}
    name = str(ps[-1].spec["name"])
    cases: dict[int, str] = {}
    for i, p in enumerate(ps):
        for lo, hi, ident in _lower_part(p, structs, version, i == 0):
            cases.update({v: ident for v in range(lo, hi + 1)})
    root = f"{snake(name)}_by_version"
    structs[root] = {"doc": f"{name}: the message its version names", "repr": "value",
                     "fields": [{"name": "message", "type": {"switch": version, "cases": cases}}]}  # fmt: skip
    lo, hi = min(cases), max(cases)
    doc = f"{name} v{lo}-{hi}, from Kafka's message specs: " + ", ".join(f"v{p.lo}-{p.hi} from {p.label}" for p in ps)
    schema: dict = {"doc": doc, "doc_ref": ", ".join(f"{p.label}: {p.where}" for p in ps), "root": root,
                    "params": {version: "int16"}}  # fmt: skip
    spec = ps[-1].spec
    body = spec.get("type") in ("request", "response")
    schema["api"] = {
        **({"key": int(spec["apiKey"])} if body else {}), "kind": spec["type"],
        "name": name[: -len(spec["type"])] if body else name, "versions": f"{lo}-{hi}", "flexible": _flexible(ps),
        "unstable": _unstable(ps), "sources": {f"{p.lo}-{p.hi}": p.label for p in ps},
        **({"listeners": list(spec["listeners"])} if isinstance(spec.get("listeners"), list) else {}),
    }  # fmt: skip
    return schema | {"trailing": "ignore", "structs": structs}


def protocol_schemas(base: Source, newer: Source | None = None) -> dict[str, tuple[dict, str]]:
    """Every protocol schema: {file stem: (schema, where it came from)}; the stem is Kafka's newest name of the
    message in snake case (``produce_request``, ``request_header``)."""
    old, new = _specs(base), _specs(newer) if newer is not None else {}
    labels = (base.label, newer.label if newer is not None else "")
    out: dict[str, tuple[dict, str]] = {}
    for key in sorted(set(old) | set(new), key=_order):
        ps = parts(old.get(key), new.get(key), labels)
        if not ps:
            raise SpecError(f"{key}: no versions in either source")
        version = HEADERS.get(str(ps[-1].spec["name"]), VERSION)
        schema = message_schema(ps, version)
        stem = snake(str(ps[-1].spec["name"]))
        out[stem] = (schema, ", ".join(f"{p.label} {p.where} (v{p.lo}-{p.hi})" for p in ps))
    return out


def _order(key: str) -> tuple[int, str]:
    head = key.split("-", 1)[0]
    return (int(head), key) if head.isdigit() else (-1, key)
