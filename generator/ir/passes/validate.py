"""Pass 0, validate: the checks on the schema's structure that need the whole format (reachable structs,
the kind of every field, references resolved here or in an enclosing struct, lengths, counts, derived
fields, bit views and constants that fit), each a SchemaError naming file, line and path."""

from __future__ import annotations

import struct as _struct

from generator.loader.spec import (
    BLOBS,
    FIXED,
    PRIMITIVES,
    SCALARS,
    TAGGED,
    VAR_PREFIXES,
    VARINTS,
    Field,
    Schema,
    SchemaError,
    Struct,
)


def _err(schema: Schema, s: Struct, f: Field | None, msg: str) -> SchemaError:
    line = f.line if f else s.line
    where = f"structs.{s.name}" + (f".fields[{[x.name for x in s.fields].index(f.name)}]" if f else "")
    return SchemaError(f"{schema.file}:{line} {where}: {msg}")


class Validator:
    """Validates a schema on construction; ``used`` is the reachable structs, dependencies first;
    ``parents`` who embeds whom."""

    def __init__(self, schema: Schema):
        self.s = schema
        self.parents: dict[str, list[str]] = {}
        self.used = self._reachable()
        self._check_refs()

    # ------------------------------------------------------------ pass 1: resolve
    def kind(self, f: Field) -> str:
        if f.cases:
            return "switch"
        if f.type == TAGGED and not f.array:
            return "tagged"
        if f.array:
            return "array"
        if f.type in FIXED:
            return "int"
        if f.type in VARINTS:
            return "varint"
        if f.type in BLOBS:
            return "blob"
        if f.type in self.s.structs:
            return "struct"
        raise SchemaError(f"{self.s.file}:{f.line} field {f.name!r}: unknown type {f.type!r}")

    def _reachable(self) -> list[str]:
        order: list[str] = []
        stack: list[str] = []

        def visit(name):
            if name in stack:
                raise SchemaError(f"{self.s.file}: struct {name!r} contains itself ({' -> '.join(stack + [name])})")
            if name in order:
                return
            stack.append(name)
            st = self.s.structs[name]
            for f in st.fields:
                for inner in self.inner_structs(f):
                    if inner not in self.s.structs:
                        raise _err(self.s, st, f, f"unknown struct {inner!r}")
                    self.parents.setdefault(inner, []).append(name)
                    visit(inner)
            for v in st.views:
                if v.as_ not in self.s.structs:
                    raise _err(self.s, st, None, f"view {v.name!r}: unknown struct {v.as_!r}")
                visit(v.as_)
            for f in st.fields:
                if f.wraps:
                    if f.wraps.as_ not in self.s.structs:
                        raise _err(self.s, st, f, f"wraps: unknown struct {f.wraps.as_!r}")
                    if f.wraps.as_ != name:  # a wrapper may hold its own kind, depth-limited at run time
                        visit(f.wraps.as_)
            stack.pop()
            order.append(name)

        visit(self.s.root)
        return order

    def inner_structs(self, f: Field) -> list[str]:
        """The structs a field holds: its struct, its array's elements, or each case of its switch."""
        k = self.kind(f)
        if k == "switch":
            return list(dict.fromkeys(c for _, c in f.cases))
        if k == "tagged":
            return [t.type for t in f.tags]
        return [f.type] if k in ("array", "struct") else []

    def locals_of(self, st: Struct) -> set[str]:
        names = set()
        for f in st.fields:
            names.add(f.name)
            names.update(b.name for b in f.bits)
            if f.derive and f.derive.func == "delta_of":
                names.add(f.derive.target)
        names.update(v.name for v in st.views)
        names.update(n for n, _ in st.logical)
        names.update(f.wraps.field for f in st.fields if f.wraps)
        return names

    def _check_refs(self):
        for name in self.used:
            st = self.s.structs[name]
            fnames = [f.name for f in st.fields]
            every = fnames + [t.name for f in st.fields for t in f.tags]
            if len(set(every)) != len(every):
                raise _err(self.s, st, None, "duplicate field names")
            loc = self.locals_of(st)
            for f in st.fields:
                k = self.kind(f)
                self._check_extents(st, f, k, fnames, loc)
                self._check_field_kind(st, f, k)
                self._check_values(st, f, k)
                if f.derive:
                    self._check_derive(st, f, k, fnames)
            if st.requires and st.requires.field in loc:
                own = next(f for f in st.fields if f.name == st.requires.field)
                if own.if_ or self.kind(own) not in ("int", "varint"):
                    raise _err(self.s, st, None, f"requires: {st.requires.field!r} is this struct's own; it must be "
                                                 "an unconditional integer (checked once read), or an enclosing "
                                                 "struct's value or a parameter")  # fmt: skip
            for ref in self.refs_of(st):
                if ref not in loc and not self._outer_has(name, ref, set()):
                    raise _err(self.s, st, None, f"reference {ref!r} is not defined here or in an enclosing struct")

    def _check_extents(self, st: Struct, f: Field, k: str, fnames: list[str], loc: set[str]) -> None:
        """A blob's length, an array's count, a struct's or array's length prefix: each of a kind it can be."""
        prefixes = (*PRIMITIVES, *VAR_PREFIXES)
        if k == "blob":
            if not f.length:
                raise _err(self.s, st, f, f"{f.type} needs 'length' (a prefix type, 'rest' or a field)")
            if f.length not in prefixes and f.length != "rest" and f.length not in fnames:
                raise _err(self.s, st, f, f"length {f.length!r} is neither a prefix type, 'rest' nor a field")
        elif (f.length is not None or f.nullable) and k not in ("struct", "array"):
            raise _err(self.s, st, f, "'length'/'nullable' apply to bytes, strings, structs and arrays")
        elif f.length is not None and f.length not in prefixes:
            raise _err(self.s, st, f, f"length {f.length!r} of a struct or array must be a prefix type")
        if k == "array":
            if not f.count:
                raise _err(self.s, st, f, "an array needs 'count' (a prefix type, a field, or 'rest')")
            if f.count not in prefixes and f.count != "rest" and f.count not in fnames:
                raise _err(self.s, st, f, f"count {f.count!r} is neither a prefix type, 'rest' nor a field")
            if f.compressed_by and f.compressed_by not in loc:
                raise _err(self.s, st, f, f"compressed_by {f.compressed_by!r} is not a field or bit view here")
        elif f.count or f.compressed_by:
            raise _err(self.s, st, f, "'count'/'compressed_by' apply to arrays only")

    def _check_field_kind(self, st: Struct, f: Field, k: str) -> None:
        """What applies to one kind of field only: wraps, bits, const, markers; a switch's selector and cases."""
        if k == "switch":
            self._check_switch(st, f)
        if f.marker is not None and not (k == "struct" and f.nullable and f.length is None):
            raise _err(self.s, st, f, "'marker' is for a nullable struct without a length")
        if f.wraps and k != "blob":
            raise _err(self.s, st, f, "'wraps' applies to bytes fields only")
        if f.bits and k != "int":
            raise _err(self.s, st, f, "'bits' apply to fixed-width integers only")
        for b in f.bits:
            if b.enum and b.enum not in self.s.enums:
                raise _err(self.s, st, f, f"bit view {b.name!r}: unknown enum {b.enum!r}")
        if f.const is not None and k != "int":
            raise _err(self.s, st, f, "'const' applies to fixed-width integers only")

    def _check_derive(self, st: Struct, f: Field, k: str, fnames: list[str]) -> None:
        d = f.derive
        assert d is not None
        tgt = d.target.split(".")[0]
        if d.func in ("length_of", "crc32", "crc32c") and tgt not in fnames:
            raise _err(self.s, st, f, f"{d.func}: no field {tgt!r} in this struct")
        if d.func in ("count_of", "last_of", "first_of", "max_of"):
            if tgt not in fnames or self.kind(st.fields[fnames.index(tgt)]) != "array":
                raise _err(self.s, st, f, f"{d.func}: {tgt!r} is not an array of this struct")
        if d.func in ("length_of", "count_of") and k not in ("int", "varint"):
            raise _err(self.s, st, f, f"{d.func} needs an integer field")
        if d.func in ("crc32", "crc32c") and f.type != "uint32":
            raise _err(self.s, st, f, f"{d.func} needs a uint32 field")
        if d.func == "length_of" and fnames.index(tgt) <= fnames.index(f.name):
            raise _err(self.s, st, f, "length_of must name a field after the length")

    def _check_switch(self, st: Struct, f: Field) -> None:
        """A switch's selector is an integer (here, or in an enclosing struct, checked with the references);
        its cases are structs decoded to objects (the encoder checks the value's class against the case)."""
        sel = next((x for x in st.fields if x.name == f.switch), None)
        if sel is None and f.switch in dict(self.s.params):
            return self._check_cases(st, f)
        if sel is not None and (self.kind(sel) not in ("int", "varint") or sel.type in SCALARS):
            raise _err(self.s, st, f, f"switch: {f.switch!r} is not an integer field")
        if sel is not None and st.fields.index(sel) > st.fields.index(f):
            raise _err(self.s, st, f, f"switch: {f.switch!r} comes after the switch; it must be read before")
        self._check_cases(st, f)

    def _check_cases(self, st: Struct, f: Field) -> None:
        if f.length is not None or f.nullable or f.default is not None:
            raise _err(self.s, st, f, "a switch takes no 'length', 'nullable' or 'default'")
        for value, case in f.cases:
            cs = self.s.structs[case]
            union = cs.repr == "value" and self.kind(cs.fields[0]) == "switch"  # a switch by another selector
            if cs.repr != "object" and not union:
                raise _err(self.s, st, f, f"switch case {value}: struct {case!r} must have repr 'object' (or be a "
                                          "repr 'value' struct whose one field is a switch)")  # fmt: skip

    def _check_values(self, st, f, k: str) -> None:
        """A field's const and default are values it can hold."""
        if k == "int" and f.const is not None:
            self._check_fits(st, f, f.const)
        if f.type in SCALARS:
            self._check_scalar(st, f)
        elif k in ("int", "varint") and f.default is not None and type(f.default) is not int:
            raise _err(self.s, st, f, f"'default' of an integer field must be an integer, not {f.default!r}")
        if k == "int" and f.default is not None and f.type in PRIMITIVES:
            self._check_fits(st, f, f.default)

    def _check_scalar(self, st, f) -> None:
        """bool, float64 and uuid: a value field, never a length, count, CRC, bit field or constant; a default
        of its own kind (uuid: none, the all-zero Uuid)."""
        if f.bits or f.derive or f.const is not None:
            raise _err(self.s, st, f, f"a {f.type} field cannot have bits, derive or const")
        ok = {"bool": (bool,), "float64": (int, float), "uuid": ()}[f.type]
        if f.default is not None and (type(f.default) not in ok or (f.type == "float64" and type(f.default) is bool)):
            want = {"bool": "true or false", "float64": "a number", "uuid": "left out (the zero uuid)"}[f.type]
            raise _err(self.s, st, f, f"'default' of a {f.type} field must be {want}, not {f.default!r}")

    def _check_fits(self, st, f, v):
        fmt, _ = PRIMITIVES[f.type]
        try:
            _struct.pack(">" + fmt, v)
        except _struct.error:
            raise _err(self.s, st, f, f"value {v} does not fit {f.type}") from None

    def refs_of(self, st: Struct) -> list[str]:
        """Every name a struct's conditions, derived fields, switches, views, wrappers and logical values read."""
        refs: list[str] = []
        for x in self._refs(st):
            if x and x not in refs:
                refs.append(x)
        return refs

    @staticmethod
    def _refs(st: Struct):
        for f in st.fields:
            yield f.if_.field if f.if_ else None
            if f.derive:
                yield from (f.derive.base, f.derive.replaced_by, f.derive.when.field if f.derive.when else None)
            yield f.switch
            yield from (tf.if_.field for tf in f.tags if tf.if_)
        yield from (v.when.field for v in st.views if v.when)
        yield st.requires.field if st.requires else None
        for f in st.fields:
            if f.wraps:
                w = f.wraps
                yield from (w.when.field, w.compressed_by, w.timestamp_field)
                yield w.timestamps_when.field if w.timestamps_when else None
        for _, terms in st.logical:
            yield from terms

    def _outer_has(self, name, ref, seen) -> bool:
        parents = self.parents.get(name, [])
        if not parents:
            return ref in dict(self.s.params)  # the root: what the caller passes
        for p in parents:
            if p in seen:
                continue
            pst = self.s.structs[p]
            if ref not in self.locals_of(pst) and not self._outer_has(p, ref, seen | {p}):
                return False
        return True
