"""Kafka's JSON message specs lowered into the schema language (the same loader model the YAML files give).
One file (past 600 lines) because it is one frontend: each spec construct and its lowering sit together,
so what Kafka's rule is and what kfmt makes of it read side by side.

A spec (``clients/src/main/resources/common/message/*.json``, the coordinator, KRaft metadata and raft
records...) is JSON with ``//`` comments: a message ``name``, ``validVersions``, ``flexibleVersions`` and
``fields``, each with a ``type`` (``int8``..``int64``, ``uint16``, ``float64``, ``bool``, ``uuid``,
``string``, ``bytes``, ``records``, ``[]T`` and struct types, inline or in ``commonStructs``),
``versions``, ``nullableVersions`` and ``default``. The struct this gives starts with the record's
``version`` (an int16, as Kafka writes a coordinator record's version before its data) and declares
every field under a condition on it, so nested structs and array elements see it too.

Flexible versions get compact lengths and counts and, in every struct, a tagged-field section: tagged
fields by name, unknown tags kept (a record decodes with nothing left over and re-encodes byte-exact). A
KRaft record (``"type": "metadata"``) starts with MetadataRecordSerde's frame: a frame version, the apiKey
and the version, unsigned varints. Alone, a spec with classic and flexible versions is lowered for its
classic versions; in a family (:func:`family`) each part is lowered alone and a struct of repr ``value``
reads the one the version names. What the language cannot say is refused with one line rather than
approximated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

INTS = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid"}
INT_RANGES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
              "int64": (-(2**63), 2**63 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1)}  # fmt: skip


class SpecError(ValueError):
    """A spec kfmt cannot lower (one line: which file, which field, why)."""


class SpecInvalid(SpecError):
    """A file that is not a well-formed Kafka message spec (Kafka's own generator would refuse it too)."""


@dataclass(frozen=True)
class Versions:
    """A Kafka version range: ``lo``..``hi`` inclusive (``hi`` None: open), or none at all."""

    lo: int | None
    hi: int | None

    @classmethod
    def parse(cls, text: str | None, where: str) -> Versions:
        if text is not None and not isinstance(text, str):
            raise SpecInvalid(f"{where}: versions {text!r} is not N, N+, N-M or none")
        t = (text or "none").strip()
        if t == "none":
            return cls(None, None)
        m = re.fullmatch(r"([0-9]+)(\+|-([0-9]+))?", t)
        if not m:
            raise SpecInvalid(f"{where}: versions {text!r} is not N, N+, N-M or none")
        lo, hi = int(m[1]), None if m[2] == "+" else int(m[3]) if m[3] else int(m[1])
        if lo > 0x7FFF or (hi is not None and not lo <= hi <= 0x7FFF):
            raise SpecInvalid(f"{where}: versions {text!r} is not a range of int16 versions, low to high")
        return cls(lo, hi)

    def within(self, valid: Versions) -> Versions:
        """This range cut to ``valid``."""
        if self.lo is None or valid.lo is None:
            return Versions(None, None)
        lo = max(self.lo, valid.lo)
        hi = valid.hi if self.hi is None else self.hi if valid.hi is None else min(self.hi, valid.hi)
        return Versions(None, None) if hi is not None and hi < lo else Versions(lo, hi)

    def condition(self, valid: Versions, field: str = "version") -> dict | None:
        """The ``if:`` this range needs within ``valid`` (None: every valid version); the range must meet
        ``valid`` (fields of no valid version are left out before)."""
        r = self.within(valid)
        lower = r.lo is not None and r.lo > (valid.lo or 0)
        upper = r.hi is not None and (valid.hi is None or r.hi < valid.hi)
        if lower and upper and r.lo == r.hi:
            return {"field": field, "eq": r.lo}
        cond: dict = {"field": field}
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


def field_name(name: str) -> str:
    """A Kafka field's name as a schema field: snake case, ``_field`` appended where the generated code keeps
    the name for itself (``index``, ``data``...: Kafka's JSON names the field as Kafka does, ``orig_name``)."""
    from generator.loader.spec import ENTRY_POINTS, RESERVED, RESERVED_PREFIX

    s = snake(name)
    return f"{s}_field" if s in RESERVED or s in ENTRY_POINTS or RESERVED_PREFIX.match(s) else s


class Lowering:
    """One spec file lowered into ``structs`` (shared with the other specs of a family: a struct of the same
    name and body is declared once, one of the same name and another body is prefixed with its message's
    name). :meth:`message` gives the message's own struct; :meth:`run` a standalone schema of it."""

    def __init__(self, spec: dict, where: str, structs: dict[str, dict] | None = None, version: str = "version",
                 flexible_part: bool = False, suffix: str | None = None, implicit_defaults: bool = False):  # fmt: skip
        self.spec, self.where = spec, where
        # a number, boolean or string without a default: Kafka's generated classes start it at 0, false or "" (FieldSpec),
        # which the protocol's schemas say (a message written at a version that has it, from one that had not)
        self.implicit_defaults = implicit_defaults
        self.suffix = (
            suffix  # a struct whose name another body has: suffixed with this (else prefixed with the message)
        )
        self.version = version  # the field conditions on versions read (the family root's, or the record's)
        name = spec.get("name")
        if not isinstance(name, str) or not isinstance(spec.get("fields"), list):
            raise SpecError(f"{where}: not a Kafka message spec (no name and fields)")
        self.name: str = name
        valid = Versions.parse(spec.get("validVersions"), f"{where}: validVersions")
        flexible = Versions.parse(spec.get("flexibleVersions"), f"{where}: flexibleVersions")
        if valid.lo is None:
            raise SpecError(f"{where}: {self.name} has no valid versions")
        self.flexible = flexible.lo is not None and flexible.lo <= valid.lo  # every version flexible
        self.mixed = flexible.lo is not None and not self.flexible and (valid.hi is None or flexible.lo <= valid.hi)
        if self.flexible or flexible.lo is None:
            self.valid = valid
        elif flexible_part:  # the flexible versions of a spec with classic ones too
            self.flexible, self.valid = True, Versions(flexible.lo, valid.hi)
        else:  # the classic versions (a family reads the flexible ones with a Lowering of their own)
            self.valid = Versions(valid.lo, flexible.lo - 1 if valid.hi is None else min(valid.hi, flexible.lo - 1))
        self.common = {c["name"]: c for c in spec.get("commonStructs", []) if isinstance(c, dict) and "name" in c}
        self.structs: dict[str, dict] = {} if structs is None else structs

    @property
    def kind(self) -> str:
        hi = "+" if self.valid.hi is None else f"-{self.valid.hi}" if self.valid.hi != self.valid.lo else ""
        how = "flexible versions" if self.flexible else "classic versions"
        return f"{self.name} v{self.valid.lo}{hi} ({how})"

    def message(self, guard: bool = True) -> str:
        """The message's struct (its fields, conditions on ``self.version`` of an enclosing struct); ``guard``:
        it requires a version it was lowered for (a newer or a flexible version is refused, never misread)."""
        return self.declare_message(snake(self.name), guard)

    def declare_message(self, ident: str, guard: bool = True) -> str:
        body: dict = {"orig_name": self.name}
        lo, hi = self.valid.lo or 0, self.valid.hi
        if guard and (lo > 0 or hi is not None):
            body["requires"] = {"field": self.version, **({"ge": lo} if lo > 0 else {}), **({"le": hi} if hi is not None
                                                                                           else {})}  # fmt: skip
        body["fields"] = self.fields(self.spec["fields"], self.name)
        return self.declare(ident, body)

    def run(self) -> dict:
        """A standalone schema: the record's version (or MetadataRecordSerde's frame), then the message."""
        root = snake(self.name)
        if self.spec.get("type") == "metadata":  # MetadataRecordSerde's frame
            head = frame_fields(int(self.spec.get("apiKey", 0)))
        else:
            head = [{"name": "version", "type": "int16", "doc": "the record's version, written before its data"}]
            if self.valid.lo == self.valid.hi:  # the one version there is: written, and checked when read
                head[0]["const"] = self.valid.lo
        fields = head + self.fields(self.spec["fields"], self.name)
        self.structs[root] = {"orig_name": self.name, "fields": fields}
        lo, hi = self.valid.lo or 0, self.valid.hi
        if self.valid.lo != self.valid.hi and (lo > 0 or hi is not None):  # read only at the versions lowered
            self.structs[root]["requires"] = {"field": "version", **({"ge": lo} if lo > 0 else {}),
                                              **({"le": hi} if hi is not None else {})}  # fmt: skip
        return {
            "doc": f"{self.kind}, from Kafka's message spec",
            "doc_ref": self.where,
            "root": root,
            "structs": self.structs,
        }

    def declare(self, ident: str, body: dict) -> str:
        """``body`` as struct ``ident``, or the struct already declared with that body; another body of the
        same name is declared as ``<message>_<ident>``."""
        if ident not in self.structs:
            self.structs[ident] = body
            return ident
        if _wire(self.structs[ident]) == _wire(body):  # the same struct (its docs may differ): declared once
            return ident
        if self.suffix and not ident.endswith(f"_{self.suffix}"):
            return self.declare(f"{ident}_{self.suffix}", body)
        return self.declare(f"{snake(self.name)}_{ident}", body)

    def fields(self, specs: list, owner: str) -> list[dict]:
        out = [x for x in (self.field(f, owner) for f in specs) if x is not None]
        if self.flexible:  # every struct of a flexible version ends with its tagged-field section
            out.append({"name": "tagged_fields", "type": "tagged_fields",
                        "doc": "the tagged fields this spec does not name, kept as (tag, bytes)"})  # fmt: skip
        return out

    def field(self, f: dict, owner: str) -> dict | None:
        where = f"{self.where}: {owner}.{f.get('name')}"
        versions = Versions.parse(f.get("versions", f.get("taggedVersions")), where)
        if versions.within(self.valid).lo is None:
            return None  # a field of flexible (or no valid) versions only
        out: dict = {"name": field_name(f["name"]), "orig_name": f["name"]}
        out.update(self.wire(str(f.get("type", "")), f, where))
        derived = DERIVED.get((self.name, f["name"]))
        if derived is not None:
            out["derive"] = {func: snake(target) for func, target in derived.items()}
        enum = ENUM_FIELDS.get((self.name, f["name"]))
        if enum is not None:
            out["enum"] = enum
        nullable = Versions.parse(f.get("nullableVersions"), where).within(self.valid)
        if nullable.lo is not None:
            out["nullable"] = True
        if "tag" in f or "taggedVersions" in f:
            versions = self.tagged(f, versions, out, where)
        cond = versions.condition(self.valid, self.version)
        if cond is not None:
            out["if"] = cond
        default = self.default(f, out)
        if default is None and self.implicit_defaults and f.get("default") is None and "tag" not in out:
            kind = out["type"] if isinstance(out["type"], str) else ""
            default = {"bool": False, "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0}.get(kind)
            if kind == "string":  # (nullable or not: FieldSpec takes a missing default as "")
                default = ""
        if default is not None and enum is None:  # an enum field's default is its id 0
            out["default"] = default
        if f.get("about"):
            out["doc"] = str(f["about"])[:4000]
        return out

    def tagged(self, f: dict, versions: Versions, out: dict, where: str) -> Versions:
        """A tagged field: its tag (Kafka writes some as strings, ``"tag": "0"``), present in its tagged
        versions; tagged in some versions and not in others is refused."""
        if not self.flexible:
            raise SpecError(f"{where}: a tagged field in a classic version")
        tagged = Versions.parse(f.get("taggedVersions"), where).within(self.valid)
        if tagged != versions.within(self.valid):
            raise SpecError(f"{where}: tagged in versions {f.get('taggedVersions')} but present in {f.get('versions')}")
        try:
            out["tag"] = int(str(f.get("tag")), 10)
        except ValueError:
            raise SpecError(f"{where}: tag {f.get('tag')!r} is not a number") from None
        return tagged

    def wire(self, t: str, f: dict, where: str) -> dict:
        if t in INTS:
            return {"type": t}
        if t == "string":
            return {"type": "string", "length": self.length(f, "int16")}
        if t in ("bytes", "records"):  # records: a record set, which readers decode with the record formats
            return {"type": "bytes", "length": self.length(f, "int32")} | ({"records": True} if t == "records" else {})
        if t.startswith("[]"):
            elem, count = t[2:], "compact" if self.flexible else "int32"
            if elem in INTS:
                return {"type": {"array": elem}, "count": count}
            if elem in ("string", "bytes"):
                return {"type": {"array": elem}, "count": count, "length": self.length(f, "int16" if elem == "string"
                                                                                      else "int32")}  # fmt: skip
            return {"type": {"array": self.struct(elem, f, where)}, "count": count}
        if t:  # a struct; nullable: behind a null marker (int8, or an unsigned varint when tagged: the loader's)
            return {"type": self.struct(t, f, where)}
        raise SpecError(f"{where}: no type")

    def length(self, f: dict, classic: str) -> str:
        """A string's or bytes' length: compact in flexible versions unless the field says it is not
        (Kafka's field-level ``flexibleVersions``, ``"none"`` in RequestHeader's ClientId)."""
        if not self.flexible:
            return classic
        own = f.get("flexibleVersions")
        return (
            classic if own is not None and Versions.parse(own, self.where).within(self.valid).lo is None else "compact"
        )

    def struct(self, name: str, f: dict, where: str) -> str:
        """The schema struct for Kafka struct ``name``: inline (the field's own ``fields``) or common. Its fields
        are lowered for the versions the field holding it is in (as Kafka's generator reads them), so a field of
        the struct present in all of those has no condition."""
        body = f.get("fields") if isinstance(f.get("fields"), list) else self.common.get(name, {}).get("fields")
        if not isinstance(body, list):
            raise SpecError(f"{where}: struct {name} is neither inline nor in commonStructs")
        outer, inner = self.valid, Versions.parse(f.get("versions", f.get("taggedVersions")), where).within(self.valid)
        self.valid = inner if inner.lo is not None else outer
        try:
            fields = self.fields(body, name)
        finally:
            self.valid = outer
        return self.declare(snake(name), {"orig_name": name, "fields": fields})

    @staticmethod
    def default(f: dict, out: dict):
        """The spec's default in the schema's terms. "null" is None, the schema's own default; so are string and
        bytes defaults (Kafka's, not the wire's: a missing value is the encoder's to refuse). A tagged struct's
        default other than "null" (JSON null, or none) is Kafka's ``new Type()``: ``empty``."""
        d, t = f.get("default"), out["type"]
        kafka_type = str(f.get("type", ""))
        if "tag" in out and d != "null" and kafka_type[:1].isupper():
            return "empty"  # a struct's default other than "null" is new Type() (FieldSpec.fieldDefault)
        if d is None or d == "null":
            return None
        if t == "bool":
            return str(d).lower() == "true" if isinstance(d, str) else bool(d)
        if t == "float64":
            return float(d)
        if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            return int(str(d), 0)
        return None


def _wire(o):
    """A struct body without its docs (what two structs of one name must share to be declared once)."""
    if isinstance(o, dict):
        return {k: _wire(v) for k, v in o.items() if k != "doc"}
    if isinstance(o, list):
        return [_wire(x) for x in o]
    return o


def frame_fields(api_key: int | None = None) -> list[dict]:
    """AbstractApiMessageSerde's frame, unsigned varints: the frame version (1, the only one Kafka reads),
    the record's apiKey and its version."""
    key: dict = {"name": "api_key", "type": "uvarint", "doc": "the record's apiKey"}
    if api_key is not None:
        key["default"] = api_key
    return [{"name": "frame_version", "type": "uvarint", "default": 1, "doc": "AbstractApiMessageSerde's frame version"},
            key, {"name": "version", "type": "uvarint", "doc": "the record's version"}]  # fmt: skip


def parse(text: str, where: str) -> dict:
    """A spec file's JSON (Kafka's ``//`` comments allowed)."""
    try:
        spec = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SpecError(f"{where}:{e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(spec, dict):
        raise SpecInvalid(f"{where}: not a Kafka message spec")
    check_spec(spec, where)
    return spec


#: a name Kafka's generator makes a Java class or field of, and kfmt a file, a struct and a field: a plain
#: CamelCase identifier (never a path, never a Python keyword such as None)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _name(value, where: str, what: str) -> str:
    import keyword

    if not isinstance(value, str) or not _NAME.fullmatch(value) or keyword.iskeyword(value):
        raise SpecInvalid(f"{where}: {what} {value!r} is not a plain identifier (letters and digits)")
    return value


def check_spec(spec: dict, where: str) -> None:
    """What Kafka's generator (MessageSpec, FieldSpec, StructSpec) checks before anything is lowered: a plain
    name, an int16 apiKey, version ranges, each field a name and a type, defaults its type can hold, and no
    struct that holds itself. Each violation is one located SpecInvalid."""
    _name(spec.get("name"), where, "name")
    key = spec.get("apiKey")
    if key is not None and (type(key) is not int or not 0 <= key <= 0x7FFF):
        raise SpecInvalid(f"{where}: apiKey {key!r} is not an int16 of at least 0")
    for k in ("validVersions", "flexibleVersions"):
        if k in spec:
            Versions.parse(spec[k], f"{where}: {k}")
    common = spec.get("commonStructs", [])
    if not isinstance(common, list) or not all(isinstance(c, dict) for c in common):
        raise SpecInvalid(f"{where}: commonStructs is not a list of structs")
    structs = {_name(c.get("name"), where, "common struct name"): c.get("fields") for c in common}
    _check_fields(spec.get("fields"), where, structs, (spec["name"],))
    for c in common:
        _check_fields(c.get("fields"), f"{where}: {c['name']}", structs, (c["name"],))


def _check_fields(fields, where: str, structs: dict, inside: tuple[str, ...]) -> None:
    if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
        raise SpecInvalid(f"{where}: fields is not a list of fields")
    for f in fields:
        at = f"{where}: {'.'.join(inside)}.{f.get('name')}"
        _name(f.get("name"), at, "field name")
        t = f.get("type")
        if not isinstance(t, str) or not t:
            raise SpecInvalid(f"{at}: type {t!r} is not a type name")
        for k in ("versions", "nullableVersions", "taggedVersions", "flexibleVersions"):
            if k in f:
                Versions.parse(f[k], f"{at}: {k}")
        _check_default(f, t, at)
        elem = t[2:] if t.startswith("[]") else t
        if elem in INTS or elem in ("string", "bytes", "records"):
            continue
        if elem in inside:
            raise SpecInvalid(f"{at}: struct {elem} holds itself (Kafka's messages are finite trees)")
        body = f.get("fields") if "fields" in f else structs.get(elem)
        if body is not None:
            _check_fields(body, where, structs, (*inside, elem))


def _check_default(f: dict, t: str, at: str) -> None:
    """A default Kafka's FieldSpec.fieldDefault accepts for type ``t`` (and kfmt can carry)."""
    import base64
    import math

    d = f.get("default")
    if d is None or d == "null" or d == "":
        return
    if isinstance(d, (list, dict)):
        raise SpecInvalid(f"{at}: default {d!r} is not a single value")
    text = str(d)
    ok = True
    if t == "bool":
        ok = text.lower() in ("true", "false")
    elif t in INT_RANGES:
        try:
            ok = INT_RANGES[t][0] <= int(text, 0) <= INT_RANGES[t][1]
        except ValueError:
            ok = False
    elif t == "float64":
        try:
            ok = math.isfinite(float(text))  # Java takes NaN and Infinity; kfmt carries finite defaults only
        except ValueError:
            ok = False
    elif t == "uuid":
        try:
            ok = len(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))) == 16
        except ValueError:
            ok = False
    elif t != "string":
        ok = False  # arrays, bytes, records and structs: only empty or null (Kafka's rule)
    if not ok:
        raise SpecInvalid(f"{at}: default {d!r} is not a {t} value")


def family(specs: list[tuple[dict, str]], name: str, nested=()) -> dict[str, dict]:
    """Specs lowered together into one schema per kind of payload, each a switch over its records:
    ``<name>`` for metadata records (MetadataRecordSerde's frame, the record chosen by its apiKey);
    ``<name>_key`` and ``<name>_value`` for a coordinator's records (CoordinatorRecordSerde: a key's int16
    version is its record type, XKey's valid versions; the value, an int16 version then XValue's fields,
    is chosen by the key's record type, a parameter)."""
    metadata = [(sp, w) for sp, w in specs if sp.get("type") == "metadata"]
    keys = {sp["name"][: -len("Key")]: (sp, w) for sp, w in specs if str(sp.get("name", "")).endswith("Key")}
    values = {sp["name"][: -len("Value")]: (sp, w) for sp, w in specs if str(sp.get("name", "")).endswith("Value")}
    for sp, w in specs:
        base = str(sp.get("name", ""))
        if sp.get("type") != "metadata" and not (base[:-3] in keys and base[:-3] in values or base[:-5] in keys
                                                 and base[:-5] in values):  # fmt: skip
            raise SpecError(f"{w}: {base} is neither a metadata record nor one of a Key/Value pair")
    out: dict[str, dict] = {}
    if metadata:
        out[name] = _metadata_family(metadata, name)
    if keys:
        out[f"{name}_key"], out[f"{name}_value"] = _coordinator_family(keys, values, name)
        for owner, field, spec, where, when in nested:
            _view(out[f"{name}_value"]["structs"], owner, field, Lowering(spec, where, out[f"{name}_value"]["structs"]),
                  when)  # fmt: skip
    return out


def _view(structs: dict, owner: str, field: str, inner: Lowering, when: dict) -> None:
    """A view on bytes field ``field`` of each struct ``owner`` (Kafka's names; a message lowered for its classic
    and its flexible versions has two): the message ``inner``, its own int16 version first, as ConsumerProtocol
    writes it, when ``when`` holds; a blob that does not parse stays bytes (``on_error: raw``)."""

    def named(f):  # GroupMetadataValue spells its fields in lower camelCase ("subscription")
        return str(f.get("orig_name", "")).lower() == field.lower()

    hosts = [s for s in structs.values() if s.get("orig_name") == owner and any(named(f) for f in s["fields"])]
    if not hosts:
        raise SpecError(f"{inner.where}: no struct {owner} with a field {field} to read it from")
    version = {"name": "version", "type": "int16", "doc": f"the {inner.name} version, written before it"}
    name = inner.declare(snake(inner.name), {"orig_name": inner.name, "fields": [version, *inner.fields(
        inner.spec["fields"], inner.name)]})  # fmt: skip
    for host in hosts:
        source = next(f["name"] for f in host["fields"] if named(f))
        # a member's blob that does not parse stays bytes, its error reported beside it (the rest still reads)
        host.setdefault("views", {})[f"{source}_decoded"] = {"parse": source, "as": name, "when": dict(when),
                                                            "on_error": "raw"}  # fmt: skip


def _cases(lowered: list[tuple[int, Lowering, str]], where: str) -> dict[int, str]:
    cases: dict[int, str] = {}
    for value, low, struct in lowered:
        if value in cases:
            raise SpecError(f"{low.where}: record type {value} is also {cases[value]}'s ({where})")
        cases[value] = struct
    return dict(sorted(cases.items()))


def _doc(lowered: list[Lowering], what: str) -> str:
    return f"{what}: " + ", ".join(low.kind for low in lowered)


def _metadata_family(specs: list[tuple[dict, str]], name: str) -> dict:
    structs: dict[str, dict] = {}
    root = f"{name}_record"
    lows = [Lowering(sp, w, structs) for sp, w in specs]
    cases = _cases([(int(low.spec.get("apiKey", -1)), low, low.message()) for low in lows], "apiKey")
    structs[root] = {"doc": "one record: its frame, then the record its apiKey names",
                     "fields": [*frame_fields(), {"name": "record", "type": {"switch": "api_key", "cases": cases}}]}  # fmt: skip
    return {"doc": _doc(lows, "Kafka's metadata records, framed by AbstractApiMessageSerde"),
            "doc_ref": ", ".join(w for _, w in specs), "root": root, "structs": structs}  # fmt: skip


def _coordinator_family(keys: dict, values: dict, name: str) -> tuple[dict, dict]:
    kstructs: dict[str, dict] = {}
    vstructs: dict[str, dict] = {}
    kl, vl, kc, vc = [], [], [], []
    for base in sorted(keys, key=lambda b: Versions.parse(keys[b][0].get("validVersions"), "").lo or 0):
        (kspec, kwhere), (vspec, vwhere) = keys[base], values[base]
        k = Lowering(kspec, kwhere, kstructs, version="record_type")
        v = Lowering(vspec, vwhere, vstructs)
        kl.append(k)
        vl.append(v)
        kname = k.message(guard=False)  # a key's versions are its record types: the switch's
        vname = _by_version(v, vstructs) if v.mixed else v.message()
        for t in range(k.valid.lo or 0, (k.valid.hi if k.valid.hi is not None else k.valid.lo or 0) + 1):
            kc.append((t, k, kname))
            vc.append((t, v, vname))
    kroot, vroot = f"{name}_key", f"{name}_value"
    kstructs[kroot] = {"doc": "a record's key: its type (the version CoordinatorRecordSerde writes first), then the key",
                       "fields": [{"name": "record_type", "type": "int16", "orig_name": "version"},
                                  {"name": "key", "type": {"switch": "record_type", "cases": _cases(kc, "keys")}}]}  # fmt: skip
    refs = ", ".join(k.where for k in kl)
    # CoordinatorRecordSerde reads a key and a value without checking that nothing follows them
    key = {"doc": _doc(kl, "a coordinator's record keys"), "doc_ref": refs, "root": kroot, "trailing": "ignore",
           "structs": kstructs}  # fmt: skip
    value = _by_param(vl, vc, vstructs, vroot, "record_type", "a coordinator's record values", "the key's record type")
    return key, value | {"trailing": "ignore"}


def _by_version(classic: Lowering, structs: dict) -> str:
    """A message with classic and flexible versions: each part lowered alone (its own prefix kinds and tagged
    sections), and a struct of repr value that reads the one its version names (so a value decodes to the
    part's struct, both named as Kafka names the message)."""
    flexible = Lowering(classic.spec, classic.where, structs, classic.version, flexible_part=True)
    if flexible.valid.hi is None:
        raise SpecError(f"{classic.where}: {classic.name} has open-ended flexible versions")
    parts = [(classic, classic.message()), (flexible, flexible.declare_message(f"{snake(flexible.name)}_flexible"))]
    cases = {v: name for low, name in parts for v in range(low.valid.lo or 0, (low.valid.hi or 0) + 1)}
    return classic.declare(f"{snake(classic.name)}_versions", {
        "doc": f"{classic.name}: its classic or its flexible versions, by version", "repr": "value",
        "fields": [{"name": "message", "type": {"switch": classic.version, "cases": cases}}]})  # fmt: skip


def _by_param(lows: list, cases: list, structs: dict, root: str, param: str, what: str, chooser: str) -> dict:
    """A schema of versioned values whose layout a parameter chooses: an int16 version, then a switch."""
    structs[root] = {"doc": f"a value: its version, then the message {chooser} names",
                     "fields": [{"name": "version", "type": "int16"},
                                {"name": "value", "type": {"switch": param, "cases": _cases(cases, "values")}}]}  # fmt: skip
    return {"doc": _doc(lows, what), "doc_ref": ", ".join(x.where for x in lows), "root": root,
            "params": {param: "int16"}, "structs": structs}  # fmt: skip


def control_family(specs: list[tuple[int, dict, str]], name: str) -> dict:
    """The values of control records, the message chosen by the control type the record's key holds (a
    parameter). ControlRecordUtils writes and reads each at version 0 (its ``*_CURRENT_VERSION``), with no
    version before it: so are they lowered, for version 0 alone."""
    structs: dict[str, dict] = {}
    lows = []
    for _, spec, where in specs:
        low = Lowering(spec, where, structs)
        low.valid = Versions(0, 0)
        lows.append(low)
    cases = _cases([(t, low, low.message(guard=False)) for (t, _, _), low in zip(specs, lows)], "control types")
    structs[name] = {"doc": "a control record's value: the message its control type names, at version 0",
                     "fields": [{"name": "value", "type": {"switch": "control_type", "cases": cases}}]}  # fmt: skip
    return {"doc": _doc(lows, "control records' values (ControlRecordUtils, version 0)"),
            "doc_ref": ", ".join(x.where for x in lows), "root": name, "params": {"control_type": "int16"},
            "trailing": "ignore", "structs": structs}  # ControlRecordUtils does not check what follows  # fmt: skip


def lower(text: str, where: str) -> dict:
    """One spec file's text as a schema (a dict in the YAML files' form)."""
    return Lowering(parse(text, where), where).run()


#: the families kfmt ships, lowered from a Kafka source tree: (schema name, the folder of Kafka's tree holding
#: their specs, which of its files): every spec of the folder but those SINGLES ships alone
FAMILIES = (
    ("kraft_metadata", "metadata/src/main/resources/common/metadata", "*.json"),
    ("group_coordinator", "group-coordinator/src/main/resources/common/message", "*.json"),
    ("transaction_coordinator", "transaction-coordinator/src/main/resources/common/message", "*.json"),
    ("share_coordinator", "share-coordinator/src/main/resources/common/message", "*.json"),
    ("remote_log_metadata", "storage/src/main/resources/message", "*.json"),
)
#: control records' values, by control type (ControlRecordType: 0 ABORT and 1 COMMIT are EndTxnMarkers, which
#: have no spec and kfmt.log.txn reads)
CONTROL = ("raft_control", "clients/src/main/resources/common/message", (
    (2, "LeaderChangeMessage.json"), (3, "SnapshotHeaderRecord.json"), (4, "SnapshotFooterRecord.json"),
    (5, "KRaftVersionRecord.json"), (6, "VotersRecord.json")))  # fmt: skip
#: specs kfmt ships alone (a file of its own kind: the producer-state snapshot's records)
SINGLES = ("storage/src/main/resources/message/ProducerSnapshot.json",)
#: what a spec does not say and its reader does, by (message, field) as Kafka names them: ProducerStateManager
#: checks the snapshot's Crc, a CRC-32C of everything after it
DERIVED = {("ProducerSnapshot", "Crc"): {"crc32c": "ProducerEntries"}}
#: integer fields whose ids a Kafka class names, by (message, field) as Kafka names them: the enum they read as
ENUM_FIELDS = {("TransactionLogValue", "TransactionStatus"): "transaction_state"}
#: those enums: what names them in Kafka's source, and the names by id
ENUMS: dict[str, tuple[str, dict[int, str]]] = {
    "transaction_state": ("a transaction's state (core/.../transaction/TransactionMetadata.scala: TransactionState.fromId; "
                          "another id is an error there too)",
                          {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                           5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}),
}  # fmt: skip
#: bytes fields that hold another message, read as it by a view (a family, its struct and field as Kafka names
#: them, the spec of what they hold, and when): GroupMetadataManager reads a consumer group's member metadata
#: with ConsumerProtocol, which reads a newer version with the newest it knows, ignoring what follows
NESTED = (
    ("group_coordinator", "MemberMetadata", "Subscription", "clients/src/main/resources/common/message/"
     "ConsumerProtocolSubscription.json", {"field": "protocol_type", "eq": "consumer"}),
    ("group_coordinator", "MemberMetadata", "Assignment", "clients/src/main/resources/common/message/"
     "ConsumerProtocolAssignment.json", {"field": "protocol_type", "eq": "consumer"}),
)  # fmt: skip


#: spec files of a Kafka tree's folders above that kfmt does not import, and why (none today: a spec file found
#: neither imported nor here fails tests/test_kafka_payloads.py)
LEFT_OUT: dict[str, str] = {}


def imported_specs(tree) -> set[str]:
    """The spec files (paths in Kafka's tree) that :func:`from_tree` reads."""
    from pathlib import Path

    root = Path(tree)
    out = {rel for _, folder, pattern in FAMILIES for rel in _family_files(root, folder, pattern)}
    return out | set(SINGLES) | {f"{CONTROL[1]}/{f}" for _, f in CONTROL[2]} | {rel for *_, rel, _w in NESTED}


def _family_files(root, folder: str, pattern: str) -> list[str]:
    """A family's spec files (paths in Kafka's tree): those of ``folder`` matching ``pattern``, but the ones
    SINGLES ships alone and those LEFT_OUT."""
    found = (f"{folder}/{f.name}" for f in sorted((root / folder).glob(pattern)))
    return [rel for rel in found if rel not in SINGLES and rel not in LEFT_OUT]


def _read(root, rel: str) -> tuple[dict, str]:
    """The spec at ``rel`` in Kafka's tree ``root``, and where it is (what errors and headers name)."""
    f = root / rel
    if not f.is_file():
        raise SpecError(f"{f}: no such spec (is {root} a Kafka source tree?)")
    return parse(f.read_text(encoding="utf-8"), rel), rel


def from_tree(tree, commit: str = "") -> dict[str, tuple[dict, str]]:
    """Every schema kfmt ships, lowered from a Kafka source tree: {file stem: (schema, source for the header)}."""
    from pathlib import Path

    root = Path(tree)
    at = f"apache/kafka {commit} " if commit else ""
    out: dict[str, tuple[dict, str]] = {}
    for name, folder, pattern in FAMILIES:
        files = _family_files(root, folder, pattern)
        if not files:
            raise SpecError(f"{root / folder}: no {pattern} (is {root} a Kafka source tree?)")
        specs = [_read(root, rel) for rel in files]
        nested = [(owner, field, *_read(root, rel), when) for fam, owner, field, rel, when in NESTED if fam == name]
        alone = [rel.rsplit("/", 1)[1] for rel in SINGLES if rel.startswith(f"{folder}/")]
        source = f"{folder}/{pattern}" + (f" (but {', '.join(alone)})" if alone else "")
        for stem, schema in family(specs, name, nested).items():
            srcs = [source, *(rel for *_, rel, _w in nested if stem.endswith("_value"))]
            out[stem] = (_with_enums(schema), at + ", ".join(srcs))
    cname, cfolder, ctypes = CONTROL
    controls = [(t, *_read(root, f"{cfolder}/{f}")) for t, f in ctypes]
    out[cname] = (control_family(controls, cname), at + ", ".join(w for _, _, w in controls))
    for rel in SINGLES:
        schema = Lowering(*_read(root, rel)).run()
        out[schema["root"]] = (schema, f"{at}{rel}")
    return out


def _with_enums(schema: dict) -> dict:
    """The schema with the enums its fields read as (ENUMS) declared."""
    used = sorted({f["enum"] for st in schema["structs"].values() for f in st["fields"] if "enum" in f})
    if not used:
        return schema
    enums: dict[str, dict] = {e: {"doc": ENUMS[e][0], "values": dict(ENUMS[e][1])} for e in used}
    return {k: v for k, v in schema.items() if k != "structs"} | {"enums": enums, "structs": schema["structs"]}


def to_yaml(schema: dict, source: str) -> str:
    """The schema as YAML, with a header naming where it came from and its licence."""
    import yaml

    head = (f"# Generated by `kfmt import-kafka-spec` from {source}\n"
            "# (Apache Kafka's message specs, Apache License 2.0; see NOTICE). Regenerate: make import-kafka-specs\n")  # fmt: skip

    class Plain(yaml.SafeDumper):  # a value used twice is written twice (the loader refuses YAML aliases)
        def ignore_aliases(self, data):
            return True

    return head + yaml.dump(schema, Dumper=Plain, sort_keys=False, allow_unicode=True, width=120)
