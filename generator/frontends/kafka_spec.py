"""Kafka's JSON message specs lowered into the schema language (the same loader model the YAML files give).

A spec (``clients/src/main/resources/common/message/*.json``, the coordinator, KRaft metadata and raft
records...) is JSON with ``//`` comments: a message ``name``, ``validVersions``, ``flexibleVersions`` and
``fields``, each with a ``type`` (``int8``..``int64``, ``uint16``, ``float64``, ``bool``, ``uuid``,
``string``, ``bytes``, ``records``, ``[]T`` and struct types, inline or in ``commonStructs``),
``versions``, ``nullableVersions`` and ``default``. The struct this gives starts with the record's
``version`` (an int16, as Kafka writes a coordinator record's version before its data) and declares
every field under a condition on it, so nested structs and array elements see it too.

A spec whose every version is flexible (KRaft's metadata records) is lowered with compact lengths and
counts, and every struct ends with its tagged-field section kept raw (``tagged_fields``: each tag with
its bytes, so a record decodes with nothing left over and re-encodes byte-exact; known tagged fields are
not decoded by name yet). A KRaft record (``"type": "metadata"``) starts with MetadataRecordSerde's frame:
a frame version, the apiKey and the version, unsigned varints. A spec with classic and flexible versions
is lowered for its classic versions only (OffsetCommitValue 0-3, GroupMetadataValue 0-3: what brokers
write before KIP-915 records), since the schema language cannot switch prefix kinds by version yet.
What it cannot say at all (arrays of primitives, nullable structs in flexible versions) is refused with
one line rather than approximated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

INTS = {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "uuid"}


class SpecError(ValueError):
    """A spec kfmt cannot lower (one line: which file, which field, why)."""


@dataclass(frozen=True)
class Versions:
    """A Kafka version range: ``lo``..``hi`` inclusive (``hi`` None: open), or none at all."""

    lo: int | None
    hi: int | None

    @classmethod
    def parse(cls, text: str | None, where: str) -> Versions:
        t = (text or "none").strip()
        if t == "none":
            return cls(None, None)
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", t)
        if not m:
            raise SpecError(f"{where}: versions {text!r} is not N, N+, N-M or none")
        lo = int(m[1])
        return cls(lo, None if m[2] == "+" else int(m[3]) if m[3] else lo)

    def within(self, valid: Versions) -> Versions:
        """This range cut to ``valid``."""
        if self.lo is None or valid.lo is None:
            return Versions(None, None)
        lo = max(self.lo, valid.lo)
        hi = valid.hi if self.hi is None else self.hi if valid.hi is None else min(self.hi, valid.hi)
        return Versions(None, None) if hi is not None and hi < lo else Versions(lo, hi)

    def condition(self, valid: Versions) -> dict | None:
        """The ``if:`` this range needs within ``valid`` (None: every valid version); the range must meet
        ``valid`` (fields of no valid version are left out before)."""
        r = self.within(valid)
        lower = r.lo is not None and r.lo > (valid.lo or 0)
        upper = r.hi is not None and (valid.hi is None or r.hi < valid.hi)
        if lower and upper and r.lo == r.hi:
            return {"field": "version", "eq": r.lo}
        cond: dict = {"field": "version"}
        if lower:
            cond["ge"] = r.lo
        if upper:
            cond["le"] = r.hi
        return cond if len(cond) > 1 else None


def strip_comments(text: str) -> str:
    """JSON without Kafka's ``//`` line comments (a ``//`` inside a string stays)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def snake(name: str) -> str:
    """Kafka's camelCase as a schema identifier (``groupInstanceId`` -> ``group_instance_id``)."""
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


class Lowering:
    """One spec file lowered: ``structs`` in the schema language's form, the message's struct last."""

    def __init__(self, spec: dict, where: str):
        self.spec, self.where = spec, where
        name = spec.get("name")
        if not isinstance(name, str) or not isinstance(spec.get("fields"), list):
            raise SpecError(f"{where}: not a Kafka message spec (no name and fields)")
        self.name: str = name
        valid = Versions.parse(spec.get("validVersions"), f"{where}: validVersions")
        flexible = Versions.parse(spec.get("flexibleVersions"), f"{where}: flexibleVersions")
        if valid.lo is None:
            raise SpecError(f"{where}: {self.name} has no valid versions")
        self.flexible = flexible.lo is not None and flexible.lo <= valid.lo  # every version flexible
        if self.flexible or flexible.lo is None:
            self.valid = valid
        else:  # classic versions only: prefix kinds cannot switch by version yet
            self.valid = Versions(valid.lo, flexible.lo - 1 if valid.hi is None else min(valid.hi, flexible.lo - 1))
        self.common = {c["name"]: c for c in spec.get("commonStructs", []) if isinstance(c, dict) and "name" in c}
        self.structs: dict[str, dict] = {}

    def run(self) -> dict:
        root = snake(self.name)
        if self.spec.get("type") == "metadata":  # MetadataRecordSerde's frame
            fields = [{"name": "frame_version", "type": "uvarint", "default": 0},
                      {"name": "api_key", "type": "uvarint", "default": int(self.spec.get("apiKey", 0))},
                      {"name": "version", "type": "uvarint", "doc": "the record's version"}]  # fmt: skip
        else:
            fields = [{"name": "version", "type": "int16", "doc": "the record's version, written before its data"}]
        fields += self.fields(self.spec["fields"], self.name)
        self.structs[root] = {"orig_name": self.name, "fields": fields}
        hi = "+" if self.valid.hi is None else f"-{self.valid.hi}"
        kind = "flexible versions, tagged fields kept raw" if self.flexible else "classic versions"
        return {
            "doc": f"{self.name}, versions {self.valid.lo}{hi} (Kafka's message spec; {kind})",
            "doc_ref": self.where,
            "root": root,
            "structs": self.structs,
        }

    def fields(self, specs: list, owner: str) -> list[dict]:
        out = []
        for f in specs:
            field = self.field(f, owner)
            if field is not None:
                out.append(field)
        if self.flexible:  # every struct of a flexible version ends with its tagged-field section
            if "tagged_field" not in self.structs:
                self.structs["tagged_field"] = {"doc": "a tagged field kept as written: its tag and bytes", "fields": [
                    {"name": "tag", "type": "uvarint"}, {"name": "payload", "type": "bytes", "length": "uvarint"}]}  # fmt: skip
            out.append({"name": "tagged_fields", "type": {"array": "tagged_field"}, "count": "uvarint",
                        "doc": "the tagged-field section, kept raw"})  # fmt: skip
        return out

    def field(self, f: dict, owner: str) -> dict | None:
        where = f"{self.where}: {owner}.{f.get('name')}"
        if "tag" in f or "taggedVersions" in f:
            if not self.flexible and Versions.parse(f.get("versions"), where).within(self.valid).lo is not None:
                raise SpecError(f"{where}: a tagged field in a classic version")
            return None  # in flexible versions: kept raw in the struct's tagged_fields
        versions = Versions.parse(f.get("versions"), where)
        if versions.within(self.valid).lo is None:
            return None  # a field of flexible (or no valid) versions only
        out: dict = {"name": snake(f["name"]), "orig_name": f["name"]}
        out.update(self.wire(str(f.get("type", "")), f, where))
        nullable = Versions.parse(f.get("nullableVersions"), where).within(self.valid)
        if nullable.lo is not None:
            out["nullable"] = True
        cond = versions.condition(self.valid)
        if cond is not None:
            out["if"] = cond
        default = self.default(f, out)
        if default is not None:
            out["default"] = default
        if f.get("about"):
            out["doc"] = str(f["about"])[:4000]
        return out

    def wire(self, t: str, f: dict, where: str) -> dict:
        if t in INTS:
            return {"type": t}
        if t == "string":
            return {"type": "string", "length": "compact" if self.flexible else "int16"}
        if t in ("bytes", "records"):
            return {"type": "bytes", "length": "compact" if self.flexible else "int32"}
        if t.startswith("[]"):
            elem = t[2:]
            if elem in INTS or elem in ("string", "bytes"):
                raise SpecError(f"{where}: arrays of {elem} are not in the schema language yet")
            return {"type": {"array": self.struct(elem, f, where)}, "count": "compact" if self.flexible else "int32"}
        if t:
            if self.flexible and f.get("nullableVersions"):
                raise SpecError(f"{where}: a nullable struct in a flexible version is not in the schema language yet")
            return {"type": self.struct(t, f, where)}
        raise SpecError(f"{where}: no type")

    def struct(self, name: str, f: dict, where: str) -> str:
        """The schema struct for Kafka struct ``name``: inline (the field's own ``fields``) or common."""
        ident = snake(name)
        if ident in self.structs:
            return ident
        body = f.get("fields") if isinstance(f.get("fields"), list) else self.common.get(name, {}).get("fields")
        if not isinstance(body, list):
            raise SpecError(f"{where}: struct {name} is neither inline nor in commonStructs")
        self.structs[ident] = {}  # reserved first: a struct that contains itself fails in the loader, named
        self.structs[ident] = {"orig_name": name, "fields": self.fields(body, name)}
        return ident

    @staticmethod
    def default(f: dict, out: dict):
        """The spec's default in the schema's terms. "null" is None, the schema's own default; so are string,
        bytes and struct defaults (Kafka's, not the wire's: a missing value is the encoder's to refuse)."""
        d, t = f.get("default"), out["type"]
        if d is None or d == "null":
            return None
        if t == "bool":
            return str(d).lower() == "true" if isinstance(d, str) else bool(d)
        if t == "float64":
            return float(d)
        if t in ("int8", "int16", "int32", "int64", "uint16"):
            return int(str(d), 0)
        return None


def lower(text: str, where: str) -> dict:
    """One spec file's text as a schema (a dict in the YAML files' form)."""
    try:
        spec = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SpecError(f"{where}:{e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{where}: not a Kafka message spec")
    return Lowering(spec, where).run()


def to_yaml(schema: dict, source: str) -> str:
    """The schema as YAML, with a header naming where it came from and its licence."""
    import yaml

    head = (f"# Generated by `kfmt import-kafka-spec` from {source}\n"
            "# (Apache Kafka's message spec, Apache License 2.0; see NOTICE).\n")  # fmt: skip
    return head + yaml.safe_dump(schema, sort_keys=False, allow_unicode=True, width=120)
