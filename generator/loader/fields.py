"""Structs and fields read from a schema file: each key checked against the language (:data:`_FIELD_KEYS`
and the others), conditions, derived values, wrappers, enums as bits, tagged-field sections and their
absent values, switches."""

from __future__ import annotations

from typing import Any

from generator.loader.spec import (
    BLOBS,
    COMPARATORS,
    DERIVE_FUNCS,
    FIXED,
    OFFSET_MODES,
    PRIMITIVES,
    REPRS,
    ROLES,
    SWITCH,
    TAGGED,
    VARINTS,
    Bit,
    Cond,
    Derive,
    Field,
    Struct,
    View,
    Wraps,
)
from generator.loader.yamlread import _Ctx, _ident, _int, _Located, _mapping, _suggest, _text

LIBRARY_KEYS = {"library": bool, "doc": str, "doc_ref": str, "types": dict, "enums": dict, "structs": dict}


_TOP_KEYS = {
    "doc": str, "doc_ref": str, "magic": int, "auto_detect": bool, "imports": list, "root": str,
    "structs": dict, "types": dict, "enums": dict, "extends": str, "override": dict, "params": dict,
    "trailing": str, "api": dict,
}  # fmt: skip


_FIELD_KEYS = {
    "name": str, "type": (str, dict), "orig_name": str, "doc": str, "length": str, "nullable": bool,
    "count": str, "default": (int, str, bool, float), "const": int, "derive": dict, "bits": list,
    "compressed_by": str, "if": dict, "max": int, "wraps": dict, "tag": int, "marker": str, "enum": str,
    "records": bool,
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
        records=_records(t, array, get, ctx),
    )


def _records(t: str, array: bool, get: dict, ctx: _Ctx) -> bool:
    """``records: true``: the bytes hold a record set (Kafka's ``records`` type: message sets or record batches),
    which readers decode with the record formats; only on a bytes field."""
    if not get.get("records", False):
        return False
    if t != "bytes" or array:
        raise ctx.error(
            "records: true is for a bytes field (a record set), not " + (f"an array of {t}" if array else t)
        )
    return True


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
    if not fields and rep != "object":
        raise ctx.error(f"a struct of repr {rep!r} needs a field (only an object may have none: an empty message)")
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
