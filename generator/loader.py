"""Load and validate schema files.

YAML is composed with the safe loader only (no tags, no objects) and every
value keeps the line it came from, so that every error names file, line and
path: ``schemas/kafka_v2.yaml:41 structs.batch.fields[3].derive: unknown
function 'lenght_of' (did you mean 'length_of'?)``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PRIMITIVES = {
    # name: (struct format char, size, signed)
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint8": ("B", 1),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
}
#: fixed-width values that are not integers (Kafka's message encoding): never a length, count or bit field
SCALARS = {
    "bool": ("?", 1),  # one byte; any non-zero byte reads true (Kafka's readByte() != 0), written as 1
    "float64": ("d", 8),  # IEEE 754 double, big-endian
    "uuid": ("16s", 16),  # 16 bytes (Kafka's Uuid: two longs), decoded as bytes
}
#: every fixed-width field type: its struct format and size
FIXED = {**PRIMITIVES, **SCALARS}
VARINTS = ("varint", "varlong", "uvarint")
#: Kafka's compact length or count (flexible versions): an unsigned varint holding N + 1, 0 for null
COMPACT = "compact"
#: what a length or a count may be besides the fixed-width integers
VAR_PREFIXES = (*VARINTS, COMPACT)
BLOBS = ("bytes", "string")
#: a field's type when it is a switch (its struct chosen by an integer read before it)
SWITCH = "switch"
#: the type of a struct's tagged-field section (Kafka's flexible versions): the struct's fields with a
#: ``tag`` are read from it by tag; the section field itself holds the tags no field names, kept raw
TAGGED = "tagged_fields"
ROLES = ("batch", "record", "message", "struct")
OFFSET_MODES = ("absolute", "relative_to_last", "relative_to_first")
REPRS = ("object", "tuple", "value")  # value: a one-field struct decoded as that field's value
DERIVE_FUNCS = ("length_of", "count_of", "crc32", "crc32c", "last_of", "first_of", "max_of", "delta_of")
COMPARATORS = ("eq", "ne", "ge", "gt", "le", "lt")
IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
# generated code keeps its own locals under these prefixes (n_key, p_attributes, e_0, body_0 ...)
RESERVED_PREFIX = re.compile(r"^(n|p|q|e|i|s|body|append)_|_$")
MAX_INT = 2**63 - 1
RESERVED = {
    "buf", "pos", "end", "out", "opts", "obj", "index", "items", "data", "start", "self",
    "cls", "path", "exc", "dpos", "dend", "c", "this", "value_",
    # builtins the generated code calls
    "len", "bytes", "str", "getattr", "max", "enumerate", "range", "bytearray", "type", "list", "tuple",
    "int", "bool", "dict", "object", "super", "property", "isinstance",
}  # fmt: skip
# module-level names of the generated modules (entry points, Construct objects' neighbours) and the
# model's methods: a struct or field of that name would shadow them
ENTRY_POINTS = {"decode", "decode_from", "decode_run", "encode", "encode_all", "encoded_size", "as_dict"}
MAX_DEPTH = 32  # YAML nesting (a format needs about 6)
MAX_SCALAR = 10_000  # characters in one YAML scalar (docs are capped at 4,000 after loading)
MAX_INT_DIGITS = 25  # an int64 in decimal, hex or binary fits; anything longer is a mistake or an attack


class SchemaError(Exception):
    """A schema is invalid; the message names file, line and YAML path."""


# ---------------------------------------------------------------- YAML with lines
class _Located:
    __slots__ = ("value", "line")

    def __init__(self, value, line):
        self.value = value
        self.line = line


def _construct(node, file):
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = _construct(k, file)
            if not isinstance(key.value, (str, int)) or isinstance(key.value, bool):
                raise SchemaError(f"{file}:{key.line}: mapping keys must be strings or integers")
            if key.value in out:
                raise SchemaError(f"{file}:{key.line}: duplicate key {key.value!r}")
            out[key.value] = _construct(v, file)
        return _Located(out, line)
    if isinstance(node, yaml.SequenceNode):
        return _Located([_construct(v, file) for v in node.value], line)
    if isinstance(node, yaml.ScalarNode):
        if node.tag and node.tag.startswith("!") and not node.tag.startswith("tag:yaml.org"):
            raise SchemaError(f"{file}:{line}: YAML tags are not allowed ({node.tag})")
        try:
            value = yaml.SafeLoader("").construct_object(node, deep=True)
        except yaml.YAMLError as e:
            raise SchemaError(f"{file}:{line}: {getattr(e, 'problem', e)}") from None
        return _Located(value, line)
    raise SchemaError(f"{file}:{line}: unsupported YAML node")


class _Ctx:
    """Where we are in a file: produces located errors."""

    def __init__(self, file: str, path: str = "", line: int = 1):
        self.file, self.path, self.line = file, path, line

    def sub(self, key, located: _Located | None = None) -> _Ctx:
        p = f"{self.path}[{key}]" if isinstance(key, int) else (f"{self.path}.{key}" if self.path else str(key))
        return _Ctx(self.file, p, located.line if located is not None else self.line)

    def error(self, msg: str) -> SchemaError:
        where = f"{self.file}:{self.line}"
        return SchemaError(f"{where} {self.path}: {msg}" if self.path else f"{where}: {msg}")


def _suggest(word, options) -> str:
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _mapping(loc: _Located, ctx: _Ctx, allowed: Mapping[str, Any], required=()) -> dict[str, _Located]:
    if not isinstance(loc.value, dict):
        raise ctx.error(f"expected a mapping, got {type(loc.value).__name__}")
    for k, v in loc.value.items():
        if k not in allowed:
            raise ctx.sub(k, v).error(f"unknown key {k!r}{_suggest(k, allowed)}; allowed: {', '.join(allowed)}")
        want = allowed[k]
        if want is not Any and not _is(v.value, want):
            raise ctx.sub(k, v).error(f"expected {_tname(want)}, got {type(v.value).__name__}")
    for k in required:
        if k not in loc.value:
            raise ctx.error(f"missing required key {k!r}")
    return loc.value


def _is(value, want) -> bool:
    wants = want if isinstance(want, tuple) else (want,)
    if isinstance(value, bool) and bool not in wants:
        return False
    return isinstance(value, wants)


def _tname(want) -> str:
    wants = want if isinstance(want, tuple) else (want,)
    names = {str: "a string", int: "an integer", bool: "a boolean", dict: "a mapping", list: "a list"}
    return " or ".join(names.get(w, w.__name__) for w in wants)


def _ident(name, ctx: _Ctx, what="name", *, reserved: bool = True) -> str:
    if not isinstance(name, str) or not IDENT.match(name) or keyword.iskeyword(name) or name.startswith("_"):
        raise ctx.error(f"{what} {name!r} is not a valid lower_snake Python identifier")
    if len(name) > 64:
        raise ctx.error(f"{what} {name!r} is longer than 64 characters")
    if reserved and (name in RESERVED or RESERVED_PREFIX.match(name)):
        raise ctx.error(f"{what} {name!r} is reserved by the generated code (names of generated locals)")
    if reserved and name in ENTRY_POINTS:
        raise ctx.error(f"{what} {name!r} is reserved: generated modules define {name}()")
    return name


def _enum_value(name, ctx: _Ctx) -> str:
    """An enum value: a name as the source spells it (``gzip``, Kafka's ``CompleteCommit``), letters, digits
    and underscores, at most 64 characters; it is data (a string), never a Python name."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name):
        raise ctx.error(f"enum value {name!r} must be letters, digits and underscores (at most 64), a letter first")
    return name


def _text(value, ctx: _Ctx, limit=4000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ctx.error("expected a string")
    if len(value) > limit:
        raise ctx.error(f"text longer than {limit} characters")
    return value


def _int(value, ctx: _Ctx, lo=-(2**63), hi=MAX_INT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.error(f"expected an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ctx.error(f"{value} is out of range [{lo}, {hi}]")
    return value


# ---------------------------------------------------------------- spec dataclasses
@dataclass(frozen=True)
class Cond:
    field: str
    op: str | None = None  # None: truthy
    value: int | str | None = None
    op2: str | None = None  # a range: the upper bound (le/lt) with ``op`` the lower one (ge/gt)
    value2: int | str | None = None

    def halves(self) -> tuple[Cond, ...]:
        """The comparisons it holds: itself, or a range's two."""
        if self.op2 is None:
            return (self,)
        return (Cond(self.field, self.op, self.value), Cond(self.field, self.op2, self.value2))


@dataclass(frozen=True)
class Bit:
    name: str
    mask: int
    doc: str = ""
    enum: str | None = None
    flag: bool = False
    const: int | None = None  # always written, checked on read
    is_null: str | None = None  # flag set when this field is None


@dataclass(frozen=True)
class Derive:
    func: str
    target: str  # field (or array.field) it is computed from
    base: str | None = None
    default: int | None = None
    overridable: bool = False
    replaced_by: str | None = None
    when: Cond | None = None
    to: str | None = None  # end of a crc range (a field name) instead of the end of the struct


@dataclass(frozen=True)
class Wraps:
    """A bytes field that, when ``when`` holds, is a compressed set of ``as_`` entries (a wrapper message)."""

    field: str  # name of the decoded list in the model
    as_: str
    when: Cond
    compressed_by: str
    offsets: str = "absolute"
    offset_field: str = "offset"
    timestamp_field: str | None = None  # inner timestamps replaced by this wrapper field...
    timestamps_when: Cond | None = None  # ...under this condition


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # primitive, varint kind, bytes/string, or a struct name
    line: int
    array: bool = False
    orig_name: str = ""
    doc: str = ""
    length: str | None = None  # bytes/string: a prefix type, 'rest' or a field name
    nullable: bool = False
    count: str | None = None  # array: a prefix type, a field name, or 'rest'
    default: Any = None
    const: int | None = None
    derive: Derive | None = None
    bits: tuple[Bit, ...] = ()
    compressed_by: str | None = None
    if_: Cond | None = None
    max: int | None = None
    wraps: Wraps | None = None
    switch: str | None = None  # type SWITCH: the integer field choosing the struct
    cases: tuple[tuple[int, str], ...] = ()  # (selector value, struct), by value
    tag: int | None = None  # a tagged field: read from its struct's tagged-field section
    tags: tuple[Field, ...] = ()  # type TAGGED: the struct's tagged fields, by tag (type: their value struct)
    absent: Any = None  # a tagged field: its value when its tag is not written (never written when equal)
    marker: str | None = None  # a nullable struct without a length: its null marker, int8 (-1/1) or uvarint (0/1)
    enum: str | None = None  # an enum-typed whole field: read as its one bit view <name> over every bit


@dataclass(frozen=True)
class View:
    name: str
    parse: str
    as_: str
    when: Cond | None
    keep_raw: bool = False  # on_error: raw (the parse failing leaves the bytes, its error in <name>_error)


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]
    line: int
    orig_name: str = ""
    doc: str = ""
    role: str = "struct"
    repr: str = "object"
    logical: tuple[tuple[str, tuple[str, ...]], ...] = ()
    views: tuple[View, ...] = ()
    requires: Cond | None = None  # decoded and encoded only when this holds (a message's valid versions)


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[tuple[int, str], ...]
    doc: str = ""


@dataclass
class Schema:
    id: str
    file: str
    doc: str
    doc_ref: str
    magic: int | None
    auto_detect: bool
    root: str | None
    structs: dict[str, Struct] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    sha256: str = ""
    fingerprint: str = ""
    sources: tuple[bytes, ...] = ()
    params: tuple[tuple[str, str], ...] = ()  # (name, integer type): values the caller passes to decode and encode
    trailing: str = "exact"  # bytes after the root: an error (exact), or what Kafka's reader ignores (ignore)


# ---------------------------------------------------------------- parsing
LIBRARY_KEYS = {"library": bool, "doc": str, "doc_ref": str, "types": dict, "enums": dict, "structs": dict}
_TOP_KEYS = {
    "doc": str, "doc_ref": str, "magic": int, "auto_detect": bool, "imports": list, "root": str,
    "structs": dict, "types": dict, "enums": dict, "extends": str, "override": dict, "params": dict,
    "trailing": str,
}  # fmt: skip
_FIELD_KEYS = {
    "name": str, "type": (str, dict), "orig_name": str, "doc": str, "length": str, "nullable": bool,
    "count": str, "default": (int, str, bool, float), "const": int, "derive": dict, "bits": list,
    "compressed_by": str, "if": dict, "max": int, "wraps": dict, "tag": int, "marker": str, "enum": str,
}  # fmt: skip
_TYPE_KEYS = {"type": str, "doc": str, "length": str, "nullable": bool, "max": int}
_STRUCT_KEYS = {
    "orig_name": str, "doc": str, "role": str, "repr": str, "fields": list, "logical": dict, "views": dict,
    "requires": dict,
}  # fmt: skip
_BIT_KEYS = {"name": str, "mask": int, "doc": str, "enum": str, "flag": bool, "const": int, "is_null": str}
_COND_KEYS = {"field": str, **{c: (int, str, bool) for c in COMPARATORS}}


def _cond(loc: _Located, ctx: _Ctx) -> Cond:
    m = _mapping(loc, ctx, _COND_KEYS, required=("field",))
    ops = [c for c in COMPARATORS if c in m]
    lower, upper = [o for o in ops if o in ("ge", "gt")], [o for o in ops if o in ("le", "lt")]
    if len(ops) > 1 and not (len(ops) == 2 and len(lower) == 1 and len(upper) == 1):
        raise ctx.error(f"a condition takes one comparison, or a range (ge or gt with le or lt), got {ops}")
    f = _ident(m["field"].value, ctx.sub("field", m["field"]), "field reference")
    if len(ops) == 2:  # a version range such as Kafka's "1-3": ge 1 and le 3
        return Cond(f, lower[0], m[lower[0]].value, upper[0], m[upper[0]].value)
    if ops:
        return Cond(f, ops[0], m[ops[0]].value)
    return Cond(f)


def _derive(loc: _Located, ctx: _Ctx) -> Derive:
    m = loc.value
    if not isinstance(m, dict):
        raise ctx.error("expected a mapping")
    funcs = [k for k in m if k in DERIVE_FUNCS]
    unknown = [k for k in m if k not in DERIVE_FUNCS and k not in
               ("base", "default", "overridable", "replaced_by", "when", "to")]  # fmt: skip
    if unknown:
        k = unknown[0]
        raise ctx.sub(k, m[k]).error(f"unknown function {k!r}{_suggest(k, DERIVE_FUNCS)}")
    if len(funcs) != 1:
        raise ctx.error(f"exactly one of {', '.join(DERIVE_FUNCS)} is required")
    func = funcs[0]
    allowed_extra = {
        "length_of": (), "count_of": (), "crc32": ("to",), "crc32c": ("to",),
        "last_of": ("default", "overridable"), "first_of": ("default", "overridable"),
        "max_of": ("default", "overridable"), "delta_of": ("base", "replaced_by", "when"),
    }[func]  # fmt: skip
    for k in m:
        if k != func and k not in allowed_extra:
            raise ctx.sub(k, m[k]).error(f"{func!r} does not take {k!r}")
    target = m[func].value
    if not isinstance(target, str):
        raise ctx.sub(func, m[func]).error("expected a field name")
    parts = target.split(".")
    for p in parts:
        _ident(p, ctx.sub(func, m[func]), "field reference")
    if func in ("last_of", "first_of", "max_of") and len(parts) != 2:
        raise ctx.sub(func, m[func]).error(f"{func} takes '<array>.<field>'")
    if func not in ("last_of", "first_of", "max_of") and len(parts) != 1:
        raise ctx.sub(func, m[func]).error(f"{func} takes a field name")
    if func == "delta_of" and "base" not in m:
        raise ctx.error("delta_of needs 'base'")
    if ("replaced_by" in m) != ("when" in m):
        raise ctx.error("'replaced_by' and 'when' go together")

    def opt_ident(k):
        return _ident(m[k].value, ctx.sub(k, m[k]), "field reference") if k in m else None

    return Derive(
        func=func,
        target=target,
        base=opt_ident("base"),
        default=_int(m["default"].value, ctx.sub("default", m["default"])) if "default" in m else None,
        overridable=bool(m["overridable"].value) if "overridable" in m else False,
        replaced_by=opt_ident("replaced_by"),
        when=_cond(m["when"], ctx.sub("when", m["when"])) if "when" in m else None,
        to=opt_ident("to"),
    )


def _wraps(loc: _Located, ctx: _Ctx) -> Wraps:
    keys = {"field": str, "as": str, "when": dict, "compressed_by": str, "offsets": str, "offset_field": str,
            "timestamps": dict}  # fmt: skip
    m = _mapping(loc, ctx, keys, required=("field", "as", "when", "compressed_by"))
    offsets = m["offsets"].value if "offsets" in m else "absolute"
    if offsets not in OFFSET_MODES:
        raise ctx.sub("offsets", m["offsets"]).error(
            f"unknown offsets mode {offsets!r}{_suggest(offsets, OFFSET_MODES)}"
        )
    ts_field = ts_when = None
    if "timestamps" in m:
        tc = ctx.sub("timestamps", m["timestamps"])
        tm = _mapping(m["timestamps"], tc, {"replaced_by": str, "when": dict}, required=("replaced_by", "when"))
        ts_field = _ident(tm["replaced_by"].value, tc.sub("replaced_by", tm["replaced_by"]), "field reference")
        ts_when = _cond(tm["when"], tc.sub("when", tm["when"]))
    return Wraps(
        field=_ident(m["field"].value, ctx.sub("field", m["field"])),
        as_=_ident(m["as"].value, ctx.sub("as", m["as"]), "struct reference"),
        when=_cond(m["when"], ctx.sub("when", m["when"])),
        compressed_by=_ident(m["compressed_by"].value, ctx.sub("compressed_by", m["compressed_by"]), "field reference"),
        offsets=offsets,
        offset_field=_ident(m["offset_field"].value, ctx, "field reference") if "offset_field" in m else "offset",
        timestamp_field=ts_field,
        timestamps_when=ts_when,
    )


def _item_struct(owner: str, name: str, elem: dict, m: dict, line: int, synth: dict, ctx: _Ctx) -> str:
    """An array of values (``{array: int32}``, Kafka's ``[]int32``, ``[]string``): its elements are a one-field
    struct ``<owner>_<field>_item`` of repr ``value`` (decoded as the value itself), made here; a string or
    bytes element takes the array field's ``length`` (its prefix) and ``max``."""
    length = m["length"].value if "length" in m else elem.get("length")
    cap = m["max"].value if "max" in m else elem.get("max")
    elem_field = Field(name="value", type=elem["type"], line=line, length=length,
                       max=_int(cap, ctx, 0, 2**31 - 1) if cap is not None else None)  # fmt: skip
    return _value_struct(f"{owner}_{name}_item", elem_field, f"the elements of {owner}.{name}", synth, ctx)


def _value_struct(name: str, inner: Field, what: str, synth: dict, ctx: _Ctx) -> str:
    """A one-field struct of repr ``value`` the loader makes (``what`` it holds), added to ``synth``."""
    if name in synth:
        raise ctx.error(f"struct {name!r} ({what}) is defined twice")
    synth[name] = Struct(name=name, fields=(inner,), line=inner.line, doc=what, repr="value")
    return name


def _field(loc: _Located, ctx: _Ctx, types: dict, owner: str = "", synth: dict | None = None) -> Field:
    m = _mapping(loc, ctx, _FIELD_KEYS, required=("name", "type"))
    name = _ident(m["name"].value, ctx.sub("name", m["name"]))
    t = m["type"].value
    array = False
    synth = {} if synth is None else synth
    props: dict[str, Any] = {}
    switch: tuple[str, tuple[tuple[int, str], ...]] | None = None
    if isinstance(t, dict) and "switch" in t:
        switch = _switch(m["type"], ctx.sub("type", m["type"]))
        t = SWITCH
    elif isinstance(t, dict):
        tctx = ctx.sub("type", m["type"])
        tm = _mapping(m["type"], tctx, {"array": str}, required=("array",))
        t = tm["array"].value
        if t in FIXED or t in VARINTS or t in BLOBS or t in types:  # elements that are values, not structs
            t = _item_struct(owner, name, types.get(t, {"type": t}), m, loc.line, synth, tctx.sub("array", tm["array"]))
        else:
            t = _ident(t, tctx.sub("array", tm["array"]), "struct reference")
        array = True
    elif t in types:
        named = types[t]
        props.update(named)
        t = named["type"]
    get = {k: v.value for k, v in m.items()}
    of_values = array and t in synth  # an array of values: its length and max are its elements'
    props.update({k: v for k, v in get.items() if k in (("nullable",) if of_values else ("length", "nullable", "max"))})
    bits: list[Bit] = []
    if "bits" in m:
        for i, b in enumerate(m["bits"].value):
            bctx = ctx.sub("bits", m["bits"]).sub(i, b)
            bm = _mapping(b, bctx, _BIT_KEYS, required=("name", "mask"))
            mask = _int(bm["mask"].value, bctx.sub("mask", bm["mask"]), 1, 2**32 - 1)
            clash = next((x for x in bits if x.mask & mask), None)
            if clash is not None:
                raise bctx.sub("mask", bm["mask"]).error(
                    f"mask {mask:#x} overlaps bit {clash.name!r} (mask {clash.mask:#x}); "
                    "each bit of a bit field belongs to one name"
                )
            bits.append(
                Bit(
                    name=_ident(bm["name"].value, bctx.sub("name", bm["name"])),
                    mask=mask,
                    doc=_text(bm["doc"].value if "doc" in bm else "", bctx),
                    enum=bm["enum"].value if "enum" in bm else None,
                    flag=bool(bm["flag"].value) if "flag" in bm else False or "is_null" in bm,
                    const=_int(bm["const"].value, bctx.sub("const", bm["const"]), 0, mask) if "const" in bm else None,
                    is_null=_ident(bm["is_null"].value, bctx.sub("is_null", bm["is_null"]), "field reference")
                    if "is_null" in bm
                    else None,
                )
            )
    if "enum" in m:
        name, bits = _enum_field(name, t, array, m, ctx)
    return Field(
        name=name,
        type=t,
        line=loc.line,
        array=array,
        orig_name=_text(get.get("orig_name", ""), ctx, 200),
        doc=_text(get.get("doc", ""), ctx.sub("doc", m.get("doc"))),
        length=props.get("length"),
        nullable=bool(props.get("nullable", False)),
        count=get.get("count"),
        default=get.get("default"),
        const=_int(get["const"], ctx.sub("const", m["const"])) if "const" in get else None,
        derive=_derive(m["derive"], ctx.sub("derive", m["derive"])) if "derive" in m else None,
        bits=tuple(bits),
        compressed_by=get.get("compressed_by"),
        if_=_cond(m["if"], ctx.sub("if", m["if"])) if "if" in m else None,
        max=_int(props["max"], ctx, 0, 2**31 - 1) if "max" in props else None,
        wraps=_wraps(m["wraps"], ctx.sub("wraps", m["wraps"])) if "wraps" in m else None,
        switch=switch[0] if switch else None,
        cases=switch[1] if switch else (),
        tag=_int(get["tag"], ctx.sub("tag", m["tag"]), 0, 2**31 - 1) if "tag" in get else None,
        marker=_marker(get, ctx),
        enum=get.get("enum"),
    )


def _enum_field(name: str, t: str, array: bool, m: dict, ctx: _Ctx) -> tuple[str, list[Bit]]:
    """An enum-typed whole field (``enum: <enum>`` on an integer field): the wire field ``<name>_id`` with one
    bit view ``<name>`` over all its bits, so that every backend reads the enum's name (an unknown id is an
    error) and writes its id, as for an enum in part of a field."""
    ectx = ctx.sub("enum", m["enum"])
    if t not in PRIMITIVES or t in ("int64",) or array:
        raise ectx.error(f"'enum' is for an integer field of at most 32 bits, not {'an array' if array else t}")
    if any(k in m for k in ("bits", "const", "derive", "tag", "default")):
        raise ectx.error("an enum field cannot have bits, const, derive, tag or default (its default is the id 0)")
    mask = (1 << (8 * PRIMITIVES[t][1])) - 1
    return f"{name}_id", [Bit(name=name, mask=mask, enum=_ident(m["enum"].value, ectx, "enum reference"))]


#: the null markers a nullable struct without a length may have (Kafka: int8 -1/1; uvarint 0/1 when tagged)
MARKERS = ("int8", "uvarint")


def _marker(get: dict, ctx: _Ctx) -> str | None:
    m = get.get("marker")
    if m is not None and m not in MARKERS:
        raise ctx.sub("marker").error(f"unknown null marker {m!r}{_suggest(m, MARKERS)}; allowed: int8, uvarint")
    return m


#: a tagged field's value when its tag is absent and the schema gives no default (Kafka's defaults by type)
_ABSENT = {"bool": False, "float64": 0.0, "uuid": bytes(16), "string": "", "bytes": b""}


def _tagged(owner: str, fields: tuple[Field, ...], ctx: _Ctx, synth: dict) -> tuple[Field, ...]:
    """The fields with a ``tag`` moved into the struct's one ``tagged_fields`` section, in tag order, each
    decoded through a one-field struct ``<owner>_<field>_tag`` of repr ``value`` (made here)."""
    tagged = sorted((f for f in fields if f.tag is not None), key=lambda f: f.tag or 0)
    sections = [f for f in fields if f.type == TAGGED and not f.array]
    if len(sections) > 1:
        raise ctx.error("a struct has at most one tagged_fields section")
    if tagged and not sections:
        raise ctx.error(f"tagged field {tagged[0].name!r} needs a field of type tagged_fields (the section it is in)")
    if not sections:
        return fields
    seen: dict[int, str] = {}
    out = []
    for f in tagged:
        if f.tag in seen:
            raise ctx.error(f"tagged fields {seen[f.tag]!r} and {f.name!r} share tag {f.tag}")
        seen[f.tag] = f.name  # type: ignore[index]
        marker = "uvarint" if f.nullable and not f.array and f.length is None and f.type not in BLOBS else None
        inner = Field(name="value", type=f.type, line=f.line, array=f.array, length=f.length, nullable=f.nullable,
                      count=f.count, max=f.max, marker=marker)  # fmt: skip
        item = _value_struct(f"{owner}_{f.name}_tag", inner, f"the value of tagged field {owner}.{f.name}", synth, ctx)
        out.append(Field(name=f.name, type=item, line=f.line, orig_name=f.orig_name, doc=f.doc, default=f.default,
                         if_=f.if_, tag=f.tag, nullable=f.nullable, absent=_absent(f)))  # fmt: skip
    sec = sections[0]
    return tuple(
        Field(name=sec.name, type=TAGGED, line=sec.line, orig_name=sec.orig_name, doc=sec.doc, tags=tuple(out))
        if f is sec
        else f
        for f in fields
        if f.tag is None
    )


def _absent(f: Field):
    """A tagged field's value when its tag is not written: its default, else Kafka's default for its type
    (FieldSpec.fieldDefault): the empty array for an array that is not nullable, null for a nullable field
    (Kafka's spec default "null"), else the type's zero; ``default: empty`` on a struct field, the struct with
    each field at its default (Kafka's spec default JSON null: ``new Type()``)."""
    if f.default == "empty":  # Kafka's new Type(): each field at its default (a struct field only)
        from generator.ir.nodes import EmptyStruct

        return EmptyStruct(f.type)
    if f.default is not None:
        return f.default
    if f.array and not f.nullable:
        return []
    if f.nullable or f.array:
        return None
    return _ABSENT.get(f.type, 0 if f.type in PRIMITIVES or f.type in VARINTS else None)


def _switch(loc: _Located, ctx: _Ctx) -> tuple[str, tuple[tuple[int, str], ...]]:
    """``{switch: <integer field>, cases: {<value>: <struct>, ...}}``: the struct a value decodes to chosen by
    an integer read before it (here or in an enclosing struct)."""
    m = _mapping(loc, ctx, {"switch": str, "cases": dict}, required=("switch", "cases"))
    sel = _ident(m["switch"].value, ctx.sub("switch", m["switch"]), "field reference")
    cctx = ctx.sub("cases", m["cases"])
    cases = []
    for k, v in m["cases"].value.items():
        c = cctx.sub(k, v)
        cases.append((_int(k, c), _ident(v.value, c, "struct reference")))
    if not cases:
        raise cctx.error("a switch needs at least one case")
    return sel, tuple(sorted(cases))


def _struct(name, loc: _Located, ctx: _Ctx, types: dict, synth: dict | None = None) -> Struct:
    m = _mapping(loc, ctx, _STRUCT_KEYS, required=("fields",))
    role = m["role"].value if "role" in m else "struct"
    if role not in ROLES:
        raise ctx.sub("role", m["role"]).error(f"unknown role {role!r}{_suggest(role, ROLES)}")
    rep = m["repr"].value if "repr" in m else "object"
    if rep not in REPRS:
        raise ctx.sub("repr", m["repr"]).error(f"unknown repr {rep!r}{_suggest(rep, REPRS)}")
    fields = tuple(_field(f, ctx.sub("fields", m["fields"]).sub(i, f), types, name, synth)
                   for i, f in enumerate(m["fields"].value))  # fmt: skip
    if not fields:
        raise ctx.error("a struct needs at least one field")
    if rep == "value" and len(fields) != 1:
        raise ctx.sub("repr", m["repr"]).error(f"repr 'value' is for a struct of one field, not {len(fields)}")
    fields = _tagged(name, fields, ctx, synth if synth is not None else {})
    logical = []
    if "logical" in m:
        lctx = ctx.sub("logical", m["logical"])
        for lname, lv in m["logical"].value.items():
            c = lctx.sub(lname, lv)
            _ident(lname, c)
            lm = _mapping(lv, c, {"add": list}, required=("add",))
            terms = tuple(_ident(t.value, c.sub("add", lm["add"]), "field reference") for t in lm["add"].value)
            logical.append((lname, terms))
    views = []
    if "views" in m:
        vctx = ctx.sub("views", m["views"])
        for vname, vv in m["views"].value.items():
            c = vctx.sub(vname, vv)
            _ident(vname, c)
            vm = _mapping(vv, c, {"parse": str, "as": str, "when": dict, "on_error": str}, required=("parse", "as"))
            on_error = vm["on_error"].value if "on_error" in vm else "fail"
            if on_error not in ("fail", "raw"):
                raise c.sub("on_error", vm["on_error"]).error(f"'on_error' must be fail or raw, not {on_error!r}")
            if on_error == "raw" and any(f.name == f"{vname}_error" for f in fields):
                raise c.error(f"on_error: raw keeps the error in {vname}_error, which is a field's name")
            views.append(
                View(
                    name=vname,
                    parse=_ident(vm["parse"].value, c.sub("parse", vm["parse"]), "field reference"),
                    as_=_ident(vm["as"].value, c.sub("as", vm["as"]), "struct reference"),
                    when=_cond(vm["when"], c.sub("when", vm["when"])) if "when" in vm else None,
                    keep_raw=on_error == "raw",
                )
            )
    return Struct(
        name=name,
        fields=fields,
        line=loc.line,
        orig_name=_text(m["orig_name"].value if "orig_name" in m else "", ctx, 200),
        doc=_text(m["doc"].value if "doc" in m else "", ctx),
        role=role,
        repr=rep,
        logical=tuple(logical),
        views=tuple(views),
        requires=_cond(m["requires"], ctx.sub("requires", m["requires"])) if "requires" in m else None,
    )


def _read(path: Path, display: str) -> _Located:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SchemaError(f"{display}: cannot read: {e.strerror or e}") from None
    if len(raw) > 1_000_000:
        raise SchemaError(f"{display}: schema file larger than 1 MB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SchemaError(f"{display}:{line}: not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})") from None
    try:
        _prescan(text, display)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise SchemaError(f"{display}:{line}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if node is None:
        raise SchemaError(f"{display}:1: empty schema")
    return _construct(node, display)


_INT_LIKE = re.compile(r"[-+]?(0[xob])?[0-9a-fA-F_]+")


def _prescan(text: str, display: str) -> None:
    """Refuse what would make composing the YAML itself costly, before any node is built: anchors and
    aliases (a few lines of aliases expand to billions of nodes; a recursive one never ends), nesting
    deeper than MAX_DEPTH (the composer recurses), and overlong scalars and integer literals."""
    depth = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        line = ev.start_mark.line + 1
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
            name = getattr(ev, "anchor", None) or ""
            raise SchemaError(f"{display}:{line}: YAML anchors and aliases are not allowed (&{name} / *{name})")
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise SchemaError(f"{display}:{line}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(ev, yaml.ScalarEvent):
            if len(ev.value) > MAX_SCALAR:
                raise SchemaError(
                    f"{display}:{line}: value too long ({len(ev.value)} characters, at most {MAX_SCALAR})"
                )
            if ev.implicit[0] and len(ev.value) > MAX_INT_DIGITS and _INT_LIKE.fullmatch(ev.value):
                raise SchemaError(f"{display}:{line}: integer literal too long ({len(ev.value)} digits)")


def _types(loc: _Located | None, ctx: _Ctx) -> dict:
    out: dict[str, dict] = {}
    if loc is None:
        return out
    for tname, tv in loc.value.items():
        c = ctx.sub(tname, tv)
        _ident(tname, c, "type name")
        tm = _mapping(tv, c, _TYPE_KEYS, required=("type",))
        out[tname] = {k: v.value for k, v in tm.items() if k != "doc"}
    return out


def _params(loc: _Located | None, ctx: _Ctx) -> tuple[tuple[str, str], ...]:
    """``params: {name: <integer type>}``: values a decoder is given rather than reads (a value's record type,
    known from its key); every struct sees them, as it sees an enclosing struct's fields."""
    if loc is None:
        return ()
    out = []
    for pname, pv in loc.value.items():
        c = ctx.sub(pname, pv)
        _ident(pname, c, "parameter name")
        if pv.value not in PRIMITIVES and pv.value not in VARINTS:
            raise c.error(f"a parameter is an integer type, not {pv.value!r}")
        out.append((pname, pv.value))
    return tuple(out)


def _enums(loc: _Located | None, ctx: _Ctx) -> dict[str, Enum]:
    out: dict[str, Enum] = {}
    if loc is None:
        return out
    for ename, ev in loc.value.items():
        c = ctx.sub(ename, ev)
        _ident(ename, c, "enum name")
        em = _mapping(ev, c, {"doc": str, "values": dict}, required=("values",))
        values = []
        for k, v in em["values"].value.items():
            vc = c.sub("values", em["values"]).sub(k, v)
            _int(k, vc, 0, 2**32 - 1)
            values.append((k, _enum_value(v.value, vc)))
        out[ename] = Enum(ename, tuple(sorted(values)), _text(em["doc"].value if "doc" in em else "", c))
    return out


DEFAULT_SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def display_dir(schema_dir: Path) -> str:
    """How error messages and generated headers name a schema directory: ``schemas`` for the project's own,
    otherwise the directory as the user gave it (so an error points at the files actually read)."""
    try:
        inside = schema_dir.resolve().relative_to(DEFAULT_SCHEMAS.resolve())  # the project's own, or a folder of it
        return "schemas" if inside == Path(".") else f"schemas/{inside.as_posix()}"
    except (OSError, ValueError):
        pass
    return str(schema_dir).rstrip("/") or "/"


@dataclass
class _Parts:
    """What a schema file is built from before it is validated: its own and inherited definitions."""

    types: dict = field(default_factory=dict)
    enums: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # struct name -> (located mapping, context), validated last
    imports: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    inherited: dict = field(default_factory=dict)


def _imports(m: dict, ctx0: _Ctx, schema_dir: Path, sdir: str, parts: _Parts) -> None:
    for i, imp in enumerate(m["imports"].value if "imports" in m else []):
        ictx = ctx0.sub("imports", m["imports"]).sub(i, imp)
        iname = _ident(imp.value, ictx, "import")
        ipath = schema_dir / f"{iname}.yaml"
        if not ipath.is_file():
            raise ictx.error(f"imported schema {iname!r} not found in {schema_dir}")
        iloc = _read(ipath, f"{sdir}/{ipath.name}")
        ic = _Ctx(f"{sdir}/{ipath.name}")
        im = _mapping(iloc, ic, LIBRARY_KEYS)
        if "library" not in im or im["library"].value is not True:
            raise ictx.error(f"imported schema {iname!r} is not a library (it needs 'library: true')")
        parts.types.update(_types(im.get("types"), ic.sub("types")))
        parts.enums.update(_enums(im.get("enums"), ic.sub("enums")))
        for sname, sv in (im["structs"].value if "structs" in im else {}).items():
            sc = ic.sub("structs").sub(sname, sv)
            parts.raw[_ident(sname, sc, "struct name")] = (sv, sc)
        parts.imports.append(iname)
        parts.sources.append(ipath.read_bytes())


def _extends(m: dict, ctx0: _Ctx, sid: str, schema_dir: Path, chain: tuple[str, ...], parts: _Parts) -> None:
    """The schema this one extends: everything inherited, then overridden struct by struct or field by field."""
    ectx = ctx0.sub("extends", m["extends"])
    ename = _ident(m["extends"].value, ectx, "extends")
    epath = schema_dir / f"{ename}.yaml"
    if ename == sid or ename in chain:
        raise ectx.error(f"extends cycle: {' -> '.join((*chain, sid, ename))}")
    if not epath.is_file():
        raise ectx.error(f"extended schema {ename!r} not found")
    parent = load(epath, schema_dir, (*chain, sid))
    parts.types.update(parent._types)  # type: ignore[attr-defined]
    parts.enums.update(parent.enums)
    parts.raw.update(parent._raw_structs)  # type: ignore[attr-defined]
    parts.imports.extend(x for x in parent.imports if x not in parts.imports)
    parts.sources.extend(parent.sources)
    parts.inherited = {"doc": parent.doc, "doc_ref": parent.doc_ref, "magic": parent.magic,
                       "auto_detect": parent.auto_detect, "root": parent.root, "trailing": parent.trailing}  # fmt: skip


def _structs(m: dict, ctx0: _Ctx, parts: _Parts) -> dict[str, Struct]:
    """The file's own structs and overrides over the inherited ones, validated, with the structs the loader
    makes (the elements of arrays of values, the values of tagged fields)."""
    raw = dict(parts.raw)
    for sname, sv in (m["structs"].value if "structs" in m else {}).items():
        sc = ctx0.sub("structs").sub(sname, sv)
        raw[_ident(sname, sc, "struct name")] = (sv, sc)
    if "override" in m:
        octx = ctx0.sub("override", m["override"])
        for sname, ov in m["override"].value.items():
            sc = octx.sub(sname, ov)
            if sname not in raw:
                raise sc.error(f"override of unknown struct {sname!r}{_suggest(sname, raw)}")
            raw[sname] = (_apply_override(raw[sname][0], ov, sc), sc)
    parts.raw = raw
    structs: dict[str, Struct] = {}
    synth: dict[str, Struct] = {}  # the element structs of arrays of values
    for sname, (sv, sc) in raw.items():
        structs[sname] = _struct(sname, sv, sc, parts.types, synth)
    for sname, st in synth.items():
        if sname in structs:
            raise SchemaError(f"{ctx0.file}:{st.line}: struct {sname!r} is defined, and is also the name of a struct "
                              f"the loader makes ({st.doc}); rename one")  # fmt: skip
        structs[sname] = st
    return structs


def _check_root(schema: Schema, m: dict, ctx0: _Ctx) -> None:
    if schema.magic is not None:
        _int(schema.magic, ctx0.sub("magic"), 0, 127)
    if not schema.doc:
        raise ctx0.error("a schema needs a top-level 'doc'")
    if schema.root is None:
        raise ctx0.error("a format schema needs 'root' (the struct a buffer decodes to)")
    structs = schema.structs
    if schema.root not in structs:
        raise ctx0.sub("root", m.get("root")).error(
            f"root struct {schema.root!r} is not defined{_suggest(schema.root, structs)}"
        )
    root_magic = next((f.const for f in structs[schema.root].fields if f.name == "magic" and f.const is not None), None)
    if root_magic is not None and schema.magic is not None and root_magic != schema.magic:
        raise ctx0.sub("magic").error(
            f"top-level magic {schema.magic} differs from the root struct's magic const {root_magic}"
        )


def load(path: str | Path, schema_dir: str | Path | None = None, _chain: tuple[str, ...] = ()) -> Schema:
    """Load, merge imports, and validate one schema file."""
    path = Path(path)
    schema_dir = Path(schema_dir) if schema_dir else path.parent
    sdir = display_dir(schema_dir)
    display = f"{sdir}/{path.name}" if path.parent.resolve() == schema_dir.resolve() else str(path)
    sid = path.stem
    ctx0 = _Ctx(display)
    _ident(sid, ctx0, "format id (file stem)")
    m = _mapping(_read(path, display), ctx0, _TOP_KEYS)
    parts = _Parts(sources=[path.read_bytes()])
    _imports(m, ctx0, schema_dir, sdir, parts)
    if "extends" in m:
        _extends(m, ctx0, sid, schema_dir, _chain, parts)
    parts.types.update(_types(m.get("types"), ctx0.sub("types")))
    parts.enums.update(_enums(m.get("enums"), ctx0.sub("enums")))
    structs = _structs(m, ctx0, parts)

    def top_value(k, default):
        return m[k].value if k in m else parts.inherited.get(k, default)

    schema = Schema(
        id=sid,
        file=display,
        doc=_text(top_value("doc", ""), ctx0.sub("doc")),
        doc_ref=_text(top_value("doc_ref", ""), ctx0.sub("doc_ref")),
        magic=top_value("magic", None),
        auto_detect=bool(top_value("auto_detect", False)),
        root=top_value("root", None),
        structs=structs,
        enums=parts.enums,
        imports=tuple(parts.imports),
        sources=tuple(parts.sources),
        params=_params(m.get("params"), ctx0.sub("params", m.get("params"))),
        trailing=_trailing(top_value("trailing", "exact"), ctx0.sub("trailing", m.get("trailing"))),
    )
    schema._types = parts.types  # type: ignore[attr-defined]
    schema._raw_structs = parts.raw  # type: ignore[attr-defined]
    _check_root(schema, m, ctx0)
    _check_conditions(schema)
    h = hashlib.sha256()
    for s in schema.sources:
        h.update(hashlib.sha256(s).digest())
    schema.sha256 = h.hexdigest()
    schema.fingerprint = wire_fingerprint(schema)
    return schema


_VARINT_RANGES = {"varint": (-(2**31), 2**31 - 1), "varlong": (-(2**63), 2**63 - 1), "uvarint": (0, 2**32 - 1)}


def _int_range(t: str) -> tuple[int, int] | None:
    if t in PRIMITIVES:
        fmt, size = PRIMITIVES[t]
        bits = size * 8
        return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if fmt.islower() else (0, 2**bits - 1)
    return _VARINT_RANGES.get(t)


def _conditions(st: Struct):
    """(field index, YAML path, comparison) of every condition in a struct; a range gives both its halves."""
    for i, where, c in _each_condition(st):
        for half in c.halves():
            yield i, where, half


def _each_condition(st: Struct):
    for i, f in enumerate(st.fields):
        if f.if_:
            yield i, "if", f.if_
        if f.derive and f.derive.when:
            yield i, "derive.when", f.derive.when
        if f.wraps:
            yield i, "wraps.when", f.wraps.when
            if f.wraps.timestamps_when:
                yield i, "wraps.timestamps.when", f.wraps.timestamps_when
    for v in st.views:
        if v.when:
            yield None, f"views.{v.name}.when", v.when
    if st.requires:
        yield None, "requires", st.requires


def _check_conditions(schema: Schema) -> None:
    """A condition's value must be one its field can hold: an enum value by name (or id), a flag's
    true/false, an integer in the field's range. Anything else would compile into code that never (or
    always) matches, and both backends would then reject every message."""
    for st in schema.structs.values():
        fields = {f.name: f for f in st.fields}
        bits = {b.name: b for f in st.fields for b in f.bits}
        for i, where, c in _conditions(st):
            line = st.fields[i].line if i is not None else st.line
            at = f"structs.{st.name}" + (f".fields[{i}]" if i is not None else "") + f".{where}"

            def bad(msg: str, line: int = line, at: str = at) -> SchemaError:
                return SchemaError(f"{schema.file}:{line} {at}: {msg}")

            if c.op is None:
                continue
            if c.field in bits:
                _check_bit_condition(schema, bits[c.field], c, bad)
            elif c.field in fields:
                _check_int_condition(fields[c.field], c, bad)
            # else: an unknown reference is reported, with suggestions, where references resolve


def _check_bit_condition(schema: Schema, b: Bit, c: Cond, bad) -> None:
    v = c.value
    if b.enum:
        enum = schema.enums.get(b.enum)
        names = dict((n, k) for k, n in enum.values) if enum else {}
        if isinstance(v, str):
            if v not in names:
                raise bad(f"{v!r} is not a value of enum {b.enum!r}{_suggest(v, names)} (values: {', '.join(names)})")
            if c.op not in ("eq", "ne"):
                raise bad(f"enum values compare with eq or ne, not {c.op}")
            return
        if isinstance(v, int) and not isinstance(v, bool) and enum and v in dict(enum.values):
            return
        raise bad(f"compares enum {b.enum!r} with {v!r}; use one of: {', '.join(names)}")
    if b.flag:
        if not (isinstance(v, bool) or v in (0, 1)) or c.op not in ("eq", "ne"):
            raise bad(f"flag {c.field!r} compares with eq/ne true or false, not {c.op} {v!r}")
        return
    hi = b.mask >> ((b.mask & -b.mask).bit_length() - 1)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
        raise bad(f"{v!r} does not fit bit field {c.field!r} (0..{hi})")


def _check_int_condition(f: Field, c: Cond, bad) -> None:
    rng = _int_range(f.type)
    v = c.value
    if rng is None:
        return
    if isinstance(v, str):
        raise bad(f"compares {f.type} field {c.field!r} with a string ({v!r})")
    if isinstance(v, bool):
        if v not in (0, 1) or c.op not in ("eq", "ne"):
            raise bad(f"compares {f.type} field {c.field!r} with {v!r}")
        return
    if not rng[0] <= v <= rng[1]:  # type: ignore[operator]
        raise bad(f"{v} does not fit {f.type} (field {c.field!r})")


def _apply_override(base: _Located, ov: _Located, ctx: _Ctx) -> _Located:
    """Field-level override: ``{remove: [names], replace: {name: field}, doc: ...}``."""
    om = _mapping(ov, ctx, {"remove": list, "replace": dict, "doc": str, "orig_name": str})
    value = dict(base.value)
    fields = list(value["fields"].value)
    names = [f.value["name"].value for f in fields]
    for r in om["remove"].value if "remove" in om else []:
        if r.value not in names:
            raise ctx.sub("remove", om["remove"]).error(f"no field {r.value!r} to remove{_suggest(r.value, names)}")
        i = names.index(r.value)
        del fields[i], names[i]
    for rname, rv in (om["replace"].value if "replace" in om else {}).items():
        if rname not in names:
            raise ctx.sub("replace", om["replace"]).error(f"no field {rname!r} to replace{_suggest(rname, names)}")
        fields[names.index(rname)] = rv
    value["fields"] = _Located(fields, base.value["fields"].line)
    for k in ("doc", "orig_name"):
        if k in om:
            value[k] = om[k]
    return _Located(value, base.line)


def _trailing(value: str, ctx) -> str:
    if value not in ("exact", "ignore"):
        raise ctx.error(f"'trailing' must be exact or ignore, not {value!r}")
    return value


def wire_fingerprint(schema: Schema) -> str:
    """sha256 of the wire-relevant canonical form (docs and original names stripped)."""

    def strip(o):
        if isinstance(o, (Struct, Field, Bit, Derive, Cond, View, Enum, Wraps)):
            d = {k: strip(v) for k, v in o.__dict__.items() if k not in ("doc", "orig_name", "line")}
            if isinstance(o, Cond) and o.op2 is None:  # fingerprints from before ranges existed stay
                d.pop("op2"), d.pop("value2")
            if isinstance(o, Field) and not o.cases:  # ...and from before switches
                d.pop("switch"), d.pop("cases")
            if isinstance(o, Field) and o.tag is None and not o.tags:  # ...and tagged fields
                d.pop("tag"), d.pop("tags"), d.pop("absent")
            if isinstance(o, Field) and o.marker is None:
                d.pop("marker")
            if isinstance(o, Struct) and o.requires is None:
                d.pop("requires")
            if isinstance(o, View) and not o.keep_raw:
                d.pop("keep_raw")
            if isinstance(o, Field) and o.enum is None:
                d.pop("enum")
            return d
        if isinstance(o, bytes):
            return o.hex()
        if type(o).__name__ == "EmptyStruct":
            return {"empty": o.struct}
        if isinstance(o, (list, tuple)):
            return [strip(x) for x in o]
        if isinstance(o, dict):
            return {str(k): strip(v) for k, v in sorted(o.items())}
        return o

    canon = {
        **({"params": [list(p) for p in schema.params]} if schema.params else {}),
        **({"trailing": schema.trailing} if schema.trailing != "exact" else {}),
        "magic": schema.magic,
        "root": schema.root,
        "structs": strip(schema.structs),
        "enums": strip(schema.enums),
    }
    return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()
