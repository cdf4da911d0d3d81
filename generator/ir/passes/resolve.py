"""Pass 1, resolve: after validating the schema's structure (:mod:`generator.ir.passes.validate`), the
structs reachable from the root, in dependency order, with typed wire types, bit views, conditions as
expression trees and every reference bound to the struct that owns it."""

from __future__ import annotations

import generator.ir.nodes as n
from generator.ir.passes.validate import Validator
from generator.loader.spec import BLOBS, COMPACT, PRIMITIVES, SCALARS, TAGGED, VARINTS, Cond, Schema, SchemaError
from generator.loader.spec import Field as SpecField
from generator.loader.spec import Struct as SpecStruct

#: the owner of a schema parameter's Ref (a value the caller passes, not a struct's field)
PARAMS = "<params>"

_VARINT = {"varint": n.Varint(32, True), "varlong": n.Varint(64, True), "uvarint": n.Varint(32, False)}


def int_type(name: str) -> n.Int:
    return n.Int(PRIMITIVES[name][1], not name.startswith("u"))  # type: ignore[arg-type]


class Scope:
    """Which struct owns a name: the struct itself, else the nearest enclosing struct that has it."""

    def __init__(self, schema: Schema, order: list[str]):
        self.s = schema
        self.parents: dict[str, list[str]] = {}
        for name in order:
            for f in schema.structs[name].fields:
                for inner in [c for _, c in f.cases] or [t.type for t in f.tags] or [f.type]:
                    if inner in schema.structs:
                        self.parents.setdefault(inner, []).append(name)

    def names(self, st: SpecStruct) -> set[str]:
        out = {f.name for f in st.fields}
        out |= {b.name for f in st.fields for b in f.bits}
        out |= {f.wraps.field for f in st.fields if f.wraps}
        return out

    def owner(self, struct: str, name: str) -> str:
        seen, todo = set(), [struct]
        while todo:
            cur = todo.pop(0)
            if cur in seen:
                continue
            seen.add(cur)
            if name in self.names(self.s.structs[cur]):
                return cur
            todo.extend(self.parents.get(cur, []))
        if name in dict(self.s.params):
            return PARAMS
        raise SchemaError(f"{self.s.file}: struct {struct!r} refers to {name!r}, which neither it nor a struct "
                          "enclosing it has")  # fmt: skip

    def ref(self, struct: str, name: str) -> n.Ref:
        return n.Ref(name, self.owner(struct, name))

    def bit(self, owner: str, name: str):
        if owner == PARAMS:
            return None
        return next((b for f in self.s.structs[owner].fields for b in f.bits if b.name == name), None)

    def const(self, ref: n.Ref, value) -> n.Const | n.EnumConst:
        bit = self.bit(ref.owner, ref.name)
        if isinstance(value, str) and bit is not None and bit.enum:
            ids = {v: k for k, v in self.s.enums[bit.enum].values}
            return n.EnumConst(bit.enum, value, ids[value])
        return n.Const(value)

    def cond(self, struct: str, c: Cond) -> n.Expr:
        ref = self.ref(struct, c.field)
        if c.op is None:
            return n.Truthy(ref)
        parts = [n.Compare(h.op, ref, self.const(ref, h.value)) for h in c.halves()]  # type: ignore[arg-type]
        return parts[0] if len(parts) == 1 else n.All(tuple(parts))


def extent(scope: Scope, struct: str, spec: str) -> n.Extent:
    if spec in PRIMITIVES:
        return int_type(spec)
    if spec in VARINTS:
        return _VARINT[spec]
    if spec == COMPACT:
        return n.Varint(32, False, compact=True)
    if spec == "rest":
        return n.Rest()
    return n.CountFrom(scope.ref(struct, spec))


def wire(scope: Scope, struct: str, f: SpecField) -> n.Wire:
    s = scope.s
    size = None if f.length is None or f.length == "rest" else extent(scope, struct, f.length)
    if f.cases:
        return n.Switch(scope.ref(struct, f.switch), f.cases)  # type: ignore[arg-type]
    if f.type == TAGGED and not f.array:
        return n.Tagged(tuple(
            n.TaggedField(t.tag or 0, t.name, t.type, scope.cond(struct, t.if_) if t.if_ else None, t.absent,
                          t.nullable)
            for t in f.tags))  # fmt: skip
    if f.array:
        role = s.structs[f.type].role
        return n.ArrayType(
            elem=f.type,
            count=extent(scope, struct, f.count or "rest"),
            size=size,  # type: ignore[arg-type]
            nullable=f.nullable,
            compressed_by=scope.ref(struct, f.compressed_by) if f.compressed_by else None,
            limit="max_records" if role in ("record", "batch", "message") else "max_headers",
        )
    if f.type in PRIMITIVES:
        return int_type(f.type)
    if f.type in SCALARS:
        return n.Int(SCALARS[f.type][1], False, f.type)  # type: ignore[arg-type]
    if f.type in VARINTS:
        return _VARINT[f.type]
    if f.type in BLOBS:
        return n.Blob(extent(scope, struct, f.length or "rest"), f.nullable, f.type == "string", f.max, f.records)
    marker = None
    if f.nullable and size is None:
        marker = _VARINT["uvarint"] if f.marker == "uvarint" else int_type("int8")
    return n.StructType(f.type, size, f.nullable, marker)  # type: ignore[arg-type]


def bit_views(scope: Scope, f: SpecField) -> tuple[n.BitView, ...]:
    out = []
    for b in f.bits:
        shift = (b.mask & -b.mask).bit_length() - 1
        kind = "enum" if b.enum else "flag" if b.flag else "int"
        out.append(n.BitView(b.name, b.mask, shift, kind, b.enum, b.const, b.is_null, b.doc))  # type: ignore[arg-type]
    return tuple(out)


def field(scope: Scope, struct: str, f: SpecField) -> n.Field:
    default = None
    if f.default is not None:
        default = scope.const(n.Ref(f.name, struct), f.default)
    return n.Field(
        name=f.name,
        wire=wire(scope, struct, f),
        line=f.line,
        orig_name=f.orig_name,
        doc=f.doc,
        const=f.const,
        default=default,
        condition=scope.cond(struct, f.if_) if f.if_ else None,
        bits=bit_views(scope, f),
    )


def run(schema: Schema) -> tuple[list[n.Struct], Scope]:
    order = Validator(schema).used  # the structure is checked first (pass 0, generator/ir/passes/validate.py)
    scope = Scope(schema, order)
    structs = []
    for name in order:
        st = schema.structs[name]
        structs.append(
            n.Struct(
                name=name,
                role=st.role,  # type: ignore[arg-type]
                repr=st.repr,  # type: ignore[arg-type]
                fields=tuple(field(scope, name, f) for f in st.fields),
                line=st.line,
                orig_name=st.orig_name,
                doc=st.doc,
                views=tuple(
                    n.View(v.name, v.parse, v.as_, scope.cond(name, v.when) if v.when else None, v.keep_raw)
                    for v in st.views
                ),
                requires=scope.cond(name, st.requires) if st.requires else None,
            )
        )
    return structs, scope
