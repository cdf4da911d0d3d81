"""Lay out the Construct backend: nested Construct expressions per struct, and the matching wire dicts.

A length field and a leading CRC each open a group (``_g<N>``) holding the
fields they cover, because Construct parses sequentially; a trailing CRC covers
a ``RawCopy`` group.  Everything here is data for ``construct.py.j2``.
"""

from __future__ import annotations

from generator.backends.python import lowering as _ir
from generator.loader import PRIMITIVES, Field, Schema, SchemaError

_CON = {
    "int8": "c.Int8sb", "int16": "c.Int16sb", "int32": "c.Int32sb", "int64": "c.Int64sb",
    "uint8": "c.Int8ub", "uint16": "c.Int16ub", "uint32": "c.Int32ub",
}  # fmt: skip
_VAR = {"varint": "KVarint(32)", "varlong": "KVarint(64)", "uvarint": "KVarint(32, signed=False)"}


def _prefix(t: str) -> str:
    return _CON[t] if t in PRIMITIVES else _VAR[t]


class Layout:
    def __init__(self, b: _ir.Builder, name: str):
        self.b = b
        self.s = b.s
        self.st = b.s.structs[name]
        self.name = name
        self.n = 0
        self.depth_of: dict[str, tuple[int, str | None]] = {}  # name -> (group depth, bits field)
        fields = list(self.st.fields)
        self.trailing = {
            f.derive.target: f
            for f in fields
            if f.derive and f.derive.func in ("crc32", "crc32c") and b._trailing_crc(self.st, f)
        }
        self.opened: set[str] = set()
        self.items, self.wire = self.group(fields, 0, 0)

    def ref(self, name: str, depth: int) -> str:
        if name not in self.depth_of:
            raise SchemaError(
                f"{self.s.file}: the Construct backend supports references within a struct only ({name!r})"
            )
        d, bits = self.depth_of[name]
        return "this" + "._" * (depth - d) + (f".{bits}" if bits else "") + f".{name}"

    def cond(self, cond, depth: int) -> str:
        ref = self.ref(cond.field, depth)
        if cond.op is None:
            return ref
        sym = {"eq": "==", "ne": "!=", "ge": ">=", "gt": ">", "le": "<=", "lt": "<"}[cond.op]
        return f"{ref} {sym} {cond.value!r}"

    def group(self, fields: list[Field], i: int, depth: int):
        # record depths first so references resolve whatever their order
        for f in fields[i:]:
            self.depth_of.setdefault(f.name, (depth, None))
            for bit in f.bits:
                self.depth_of.setdefault(bit.name, (depth, f.name))
        items: list[str] = []
        wire: list[str] = []
        while i < len(fields):
            f = fields[i]
            d = f.derive
            if d and d.func == "length_of" and i + 1 < len(fields) and d.target == fields[i + 1].name:
                gname = f"_g{self.n}"
                self.n += 1
                self._shift(fields, i + 1, depth + 1)
                sub_items, sub_wire = self.group(fields, i + 1, depth + 1)
                minimum = self.b.min_size(self.name, i + 1)
                items.append(
                    f'"{gname}" / Region({f.name!r}, {_prefix(f.type)}, c.Struct({", ".join(sub_items)}), {minimum})'
                )
                wire.append(f'"{gname}": {{{", ".join(sub_wire)}}}')
                return items, wire
            if d and d.func in ("crc32", "crc32c") and not self.b._trailing_crc(self.st, f):
                if i + 1 >= len(fields) or d.target != fields[i + 1].name:
                    raise SchemaError(
                        f"{self.s.file}:{f.line}: the Construct backend needs a leading CRC to cover the fields right after it"
                    )
                gname = f"_g{self.n}"
                self.n += 1
                stop = [x.name for x in fields].index(d.to) if d.to else len(fields)
                covered = fields[:stop]
                self._shift(covered, i + 1, depth + 1)
                sub_items, sub_wire = self.group(covered, i + 1, depth + 1)
                to_end = ", to_end=False" if d.to else ""
                items.append(
                    f'"{gname}" / CrcGuarded({f.name!r}, {d.func!r}, c.Struct({", ".join(sub_items)}){to_end})'
                )
                wire.append(f'"{gname}": {{{", ".join(sub_wire)}}}')
                if not d.to:
                    return items, wire
                i = stop
                continue
            if f.name in self.trailing and f.name not in self.opened:
                self.opened.add(f.name)
                crc = self.trailing[f.name]
                j = [x.name for x in fields].index(crc.name)
                gname = f"_g{self.n}"
                self.n += 1
                self._shift(fields[:j], i, depth + 1)
                sub_items, sub_wire = self.group(fields[:j], i, depth + 1)
                items.append(f'"{gname}" / c.RawCopy(c.Struct({", ".join(sub_items)}))')
                wire.append(f'"{gname}": {{"value": {{{", ".join(sub_wire)}}}}}')
                items.append(f'"{crc.name}" / TrailingCrc({crc.derive.func!r}, this.{gname}.data)')
                i = j + 1
                continue
            con, w = self.field(f, depth)
            items.append(f'"{f.name}" / {con} * {f.doc or f.orig_name or f.name!r}')
            if w is not None:
                wire.append(f'"{f.name}": {w}')
            i += 1
        return items, wire

    def _shift(self, fields, i, depth):
        for f in fields[i:]:
            self.depth_of[f.name] = (depth, None)
            for bit in f.bits:
                self.depth_of[bit.name] = (depth, f.name)

    def field(self, f: Field, depth: int) -> tuple[str, str | None]:
        k = self.b.kind(f)
        w: str | None = f.name
        if k == "int":
            con = _CON[f.type]
            if f.const is not None:
                con, w = f"c.Const({f.const}, {con})", None
            elif f.bits:
                views = []
                for bit in f.bits:
                    shift = (bit.mask & -bit.mask).bit_length() - 1
                    kind = "enum" if bit.enum else ("flag" if bit.flag else "int")
                    enum = f"_ENUM_{bit.enum}" if bit.enum else "None"
                    views.append(f"({bit.name!r}, {bit.mask}, {shift}, {kind!r}, {enum}, {bit.const!r})")
                con = f"BitsView({con}, [{', '.join(views)}])"

                def bit_value(bit):
                    if bit.const is not None and bit.enum:
                        return repr(dict(self.s.enums[bit.enum].values)[bit.const])
                    if bit.const is not None:
                        return repr(bool(bit.const) if bit.flag else bit.const)
                    return f"{bit.is_null} is None" if bit.is_null else bit.name

                w = "{" + ", ".join(f"{bit.name!r}: {bit_value(bit)}" for bit in f.bits) + "}"
            elif f.derive and f.derive.func == "count_of":
                con, w = f"c.Rebuild({con}, c.len_(this.{f.derive.target}))", None
        elif k == "varint":
            con = _VAR[f.type]
        elif k == "blob":
            if f.length == "rest":
                con = f"KRest({self.b.trailer_size(self.st, [x.name for x in self.st.fields].index(f.name))})"
            else:
                cap = f", max_len={f.max}" if f.max is not None else ""
                con = f"KBytes({_prefix(f.length)}, nullable={f.nullable}, string={f.type == 'string'}{cap})"
        elif k == "array":
            elem = f.type
            # the same limit the optimised backend applies to this array
            est = self.s.structs[elem]
            limit = "max_records" if est.role in ("record", "batch", "message") else "max_headers"
            nested = tuple((n["access"].lstrip("."), n["cost"]) for n in self.b.nested_arrays(est))
            # an array inside the elements of another array is counted by that one's budget (cost 0 here)
            cost = 0 if self.st.name not in self.b.solo else self.b.element_cost(est)
            budget = f"cost={cost}, min={max(self.b.min_size(elem), 1)}, nested={nested!r}"
            if f.count in _VAR or f.count in PRIMITIVES:
                con = f"KCounted({_prefix(f.count)}, {elem}, {limit!r}, {budget})"
            elif f.count == "rest":
                con = f"KUntilEnd({elem}, {limit!r}, {budget})"
            else:
                con = f"KArray({self.ref(f.count, depth)}, {elem}, {limit!r}, {budget})"
            if f.compressed_by:
                magic = self.s.magic if self.s.magic is not None else 2
                count = f", count={self.ref(f.count, depth)}" if f.count in self.depth_of else ""
                con = f"KafkaCompressed({con}, {self.ref(f.compressed_by, depth)}, {magic}{count})"
            args = "".join(f", {a}" for a in self.b.params(elem))
            w = f"[_wire_{elem}(x_, i_{args}) for i_, x_ in enumerate({f.name})]"
        else:
            con = f.type
            args = "".join(f", {a}" for a in self.b.params(f.type))
            w = f"_wire_{f.type}({f.name}, 0{args})"
        if k in ("array", "struct") and f.length:
            con = f"KSized({_prefix(f.length)}, {con}, nullable={f.nullable})"
            if f.nullable:
                w = f"None if not {f.name} else {w}" if k == "array" else f"None if {f.name} is None else {w}"
        if f.if_:
            con = f"c.If({self.cond(f.if_, depth)}, {con})"
        return con, w


def render(schema: Schema, header: str, fir: _ir.FormatIR, builder: _ir.Builder) -> str:
    """The Construct module of a format, laid out from the same IR as the codec backend."""
    from pathlib import Path

    from generator.backends import template_env
    from generator.backends.python import HERE as PYTHON

    # the fast backend's macros are still shared for deltas, first/last/max and wrappers (to be replaced
    # by this backend's own translation of the typed IR)
    env = template_env(Path(__file__).parent, PYTHON)

    by_name = {s.name: s for s in fir.structs}
    for name in builder.used:
        lay = Layout(builder, name)
        st = schema.structs[name]
        loads: list = []
        for f in st.fields:
            k = builder.kind(f)
            if f.bits:
                loads.extend((bit.name, f"d_[{f.name!r}][{bit.name!r}]") for bit in f.bits)
            elif k == "array":
                args = "".join(f", {a}" for a in builder.params(f.type))
                expr = f"[_model_{f.type}(x_, opts{args}) for x_ in d_[{f.name!r}]]"
                if f.nullable:
                    expr = f"None if d_[{f.name!r}] is None else {expr}"
                loads.append((f.name, expr))
            elif k == "struct":
                args = "".join(f", {a}" for a in builder.params(f.type))
                loads.append((f.name, f"_model_{f.type}(d_[{f.name!r}], opts{args})"))
            elif f.if_:  # absent unless its condition holds, exactly as the codec backend decides
                loads.append((f.name, f"d_[{f.name!r}] if {builder.cond_expr(f.if_)} else {builder.field_default(f)}"))
            else:
                loads.append((f.name, f"d_[{f.name!r}]"))
        by_name[name].construct = dict(items=lay.items, wire="{" + ", ".join(lay.wire) + "}", loads=loads)
    return env.get_template("construct.py.j2").render(f=fir, header=header)
