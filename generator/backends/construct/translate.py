"""The Construct backend's own translation of the typed IR (it shares nothing with the Python backend).
One file (past 600 lines) because the three things it makes per struct walk the same wire types in step.

Three things per struct, all from :mod:`generator.ir.nodes`:

* the ``construct.Struct`` (:class:`Layout`): a length field and a leading CRC each open a group
  (``_g<N>``) holding the fields they cover, because Construct parses sequentially; a trailing CRC covers
  a ``RawCopy`` group;
* ``_model_<struct>``: the parsed container turned into the format's value classes, with the values
  decoding exposes (deltas, views, the inner entries of a wrapper);
* ``_wire_<struct>``: a value turned into the dict Construct builds from, with what encoding derives
  (deltas, first/last/max, the compressed inner entries of a wrapper, a view written back to bytes).

Expressions are translated by :func:`py` from the IR's closed vocabulary; names are the schema's own.
"""

from __future__ import annotations

import generator.ir.nodes as n
from generator.ir.empty import absent_bytes, py_at_default
from generator.ir.passes.layout import min_field_size
from generator.loader.spec import SchemaError

_INT = {
    (1, True): "c.Int8sb", (2, True): "c.Int16sb", (4, True): "c.Int32sb", (8, True): "c.Int64sb",
    (1, False): "c.Int8ub", (2, False): "c.Int16ub", (4, False): "c.Int32ub",
}  # fmt: skip
#: Kafka's message-encoding scalars (a uuid is its 16 bytes, as the other backends decode it)
_SCALAR = {"bool": "c.Flag", "float64": "c.Float64b", "uuid": "c.Bytes(16)"}
_STRUCT_FMT = {(1, True): "b", (2, True): "h", (4, True): "i", (8, True): "q", (1, False): "B", (2, False): "H",
               (4, False): "I"}  # fmt: skip
_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def prefix(w: n.Int | n.Varint) -> str:
    if isinstance(w, n.Int):
        return _INT[(w.width, w.signed)]
    if w.compact:
        return f"KVarint({w.bits}, signed=False, compact=True)"
    return f"KVarint({w.bits})" if w.zigzag else f"KVarint({w.bits}, signed=False)"


def py(e: n.Expr, ref=lambda r: r.name) -> str:
    """A Python expression; ``ref`` spells a reference (a local variable by default)."""
    if isinstance(e, n.Const):
        return repr(e.value)
    if isinstance(e, n.EnumConst):
        return repr(e.name)  # a decoded enum view is its name
    if isinstance(e, n.Ref):
        return ref(e)
    if isinstance(e, n.ElementIndex):
        return "index"
    if isinstance(e, n.Compare):
        return f"({py(e.left, ref)} {_OPS[e.op]} {py(e.right, ref)})"
    if isinstance(e, n.Truthy):
        return f"bool({py(e.operand, ref)})"
    if isinstance(e, n.All):  # `&`: Construct's `this` expressions stay lazy (`and` would not)
        return "(" + " & ".join(py(x, ref) for x in e.operands) + ")"
    if isinstance(e, n.Arith):
        s = f"{py(e.left, ref)} {'+' if e.op == 'add' else '-'} {py(e.right, ref)}"
        return f"_wrap64({s})" if e.wrap64 else f"({s})"
    if isinstance(e, n.Length):
        return f"len({py(e.operand, ref)})"
    if isinstance(e, n.Choose):
        return f"({py(e.then, ref)} if {py(e.cond, ref)} else {py(e.otherwise, ref)})"
    raise SchemaError(f"the Construct backend cannot translate {type(e).__name__} here")


class Layout:
    """The ``construct.Struct`` items of one struct, and the matching wire dict."""

    def __init__(self, f: n.FormatIR, st: n.Struct):
        self.f, self.st = f, st
        self.n = 0
        self.depth_of: dict[str, tuple[int, str | None]] = {}  # name -> (group depth, bits field)
        self.opened: set[str] = set()
        fields = list(st.fields)
        self.trailing = {x.derived.start: x for x in fields if isinstance(x.derived, n.Checksum) and x.derived.trailing}
        self.items, self.wire = self.group(fields, 0, 0)
        if st.requires is not None:  # checked before anything is read or written (its own field: once read)
            from generator.ir.printer import expr

            cond = py(st.requires, lambda r: self.ref(r, 0))
            field = next(iter(_refs(st.requires))).name
            text = f"{st.orig_name or st.name} is not defined for {field} {{value}} (this schema has it for {expr(st.requires, st.name)})"
            own = next((i + 1 for i, it in enumerate(self.items) if it.startswith((f"{field!r} /", f'"{field}" /'))), 0)
            at = own if any(x.name == field for x in fields) else 0  # the struct's own field: once it is read
            self.items.insert(at, f"Requires(lambda this: {cond}, {text!r}, {field!r})")

    def ref(self, r: n.Ref, depth: int) -> str:
        if r.owner != self.st.name and r.name not in self.depth_of:
            # a value of an enclosing struct (a nested struct's condition on its container's version): found
            # up the context chain when parsing or building; the expression using it becomes a lambda
            return f"_outer(this, {r.name!r})"
        if r.name not in self.depth_of:
            raise SchemaError(f"{self.f.file}: the Construct backend cannot find {r.name!r} in {self.st.name}")
        d, bits = self.depth_of[r.name]
        return "this" + "._" * (depth - d) + (f".{bits}" if bits else "") + f".{r.name}"

    def _shift(self, fields: list[n.Field], i: int, depth: int) -> None:
        for x in fields[i:]:
            self.depth_of[x.name] = (depth, None)
            for b in x.bits:
                self.depth_of[b.name] = (depth, x.name)

    def group(self, fields: list[n.Field], i: int, depth: int) -> tuple[list[str], list[str]]:
        for x in fields[i:]:  # depths first, so that references resolve whatever their order
            self.depth_of.setdefault(x.name, (depth, None))
            for b in x.bits:
                self.depth_of.setdefault(b.name, (depth, x.name))
        items: list[str] = []
        wire: list[str] = []
        names = [x.name for x in fields]
        while i < len(fields):
            fl, d = fields[i], fields[i].derived
            if isinstance(d, n.LengthOf) and i + 1 < len(fields) and d.start == fields[i + 1].name:
                g = self._open()
                self._shift(fields, i + 1, depth + 1)
                sub_items, sub_wire = self.group(fields, i + 1, depth + 1)
                sizes = {s.name: s.min_size for s in self.f.structs}
                minimum = sum(min_field_size(x, sizes) for x in fields[i + 1 :])
                length = fl.wire if isinstance(fl.wire, (n.Int, n.Varint)) else n.Int(4, True)  # validated: an int
                items.append(
                    f'"{g}" / Region({fl.name!r}, {prefix(length)}, c.Struct({", ".join(sub_items)}), {minimum})'
                )
                wire.append(f'"{g}": {{{", ".join(sub_wire)}}}')
                return items, wire
            if isinstance(d, n.Checksum) and not d.trailing:
                if i + 1 >= len(fields) or d.start != fields[i + 1].name:
                    raise SchemaError(
                        f"{self.f.file}:{fl.line}: the Construct backend needs a leading CRC to cover the fields right after it"
                    )
                g = self._open()
                stop = names.index(d.end) if d.end else len(fields)
                covered = fields[:stop]
                self._shift(covered, i + 1, depth + 1)
                sub_items, sub_wire = self.group(covered, i + 1, depth + 1)
                to_end = ", to_end=False" if d.end else ""
                items.append(f'"{g}" / CrcGuarded({fl.name!r}, {d.algo!r}, c.Struct({", ".join(sub_items)}){to_end})')
                wire.append(f'"{g}": {{{", ".join(sub_wire)}}}')
                if not d.end:
                    return items, wire
                i = stop
                continue
            if fl.name in self.trailing and fl.name not in self.opened:
                self.opened.add(fl.name)
                crc = self.trailing[fl.name]
                j = names.index(crc.name)
                g = self._open()
                self._shift(fields[:j], i, depth + 1)
                sub_items, sub_wire = self.group(fields[:j], i, depth + 1)
                items.append(f'"{g}" / c.RawCopy(c.Struct({", ".join(sub_items)}))')
                wire.append(f'"{g}": {{"value": {{{", ".join(sub_wire)}}}}}')
                items.append(f'"{crc.name}" / TrailingCrc({crc.derived.algo!r}, this.{g}.data)')  # type: ignore[union-attr]
                i = j + 1
                continue
            con, w = self.field(fl, depth)
            items.append(f'"{fl.name}" / {con} * {fl.doc or fl.orig_name or fl.name!r}')
            if w is not None:
                wire.append(f'"{fl.name}": {w}')
            i += 1
        return items, wire

    def _open(self) -> str:
        g = f"_g{self.n}"
        self.n += 1
        return g

    def field(self, fl: n.Field, depth: int) -> tuple[str, str | None]:
        """A field's Construct and the wire value it builds from: its wire type, then what wraps it (a null
        marker, a size prefix, a condition)."""
        w = fl.wire
        value: str | None = fl.name
        if isinstance(w, n.Int):
            con, value = self.fixed(fl, w)
        elif isinstance(w, n.Varint):
            con = prefix(w)
        elif isinstance(w, n.Blob):
            con = self.blob(w)
        elif isinstance(w, n.ArrayType):
            con, value = self.array(fl, w, depth)
        elif isinstance(w, n.Switch):
            con, value = self.switch(fl, w, depth)
        elif isinstance(w, n.Tagged):
            con, value = self.tagged(fl, w, depth)
        else:
            con = w.name
            value = f"_wire_{w.name}({fl.name}, 0{args(self.f.struct(w.name))})"
        if isinstance(w, n.StructType) and w.marker is not None:
            null = -1 if isinstance(w.marker, n.Int) else 0
            con = f"KNullMarked({prefix(w.marker)}, {con}, {null})"
            value = f"None if {fl.name} is None else {value}"
        if isinstance(w, (n.ArrayType, n.StructType)) and w.size is not None:
            con, value = self.sized(fl, w, con, value)
        if fl.condition is not None:
            cond = py(fl.condition, lambda r: self.ref(r, depth))
            con = f"c.If({'lambda this: ' if '_outer(' in cond else ''}{cond}, {con})"
        return con, value

    @staticmethod
    def blob(w: n.Blob) -> str:
        if isinstance(w.length, n.Rest):
            return f"KRest({w.length.trailer})"
        cap = f", max_len={w.max}" if w.max is not None else ""
        return f"KBytes({prefix(w.length)}, nullable={w.nullable}, string={w.text}{cap})"  # type: ignore[arg-type]

    @staticmethod
    def sized(fl: n.Field, w: n.ArrayType | n.StructType, con: str, value: str | None) -> tuple[str, str | None]:
        con = f"KSized({prefix(w.size)}, {con}, nullable={w.nullable})"  # type: ignore[arg-type]
        if w.nullable:
            value = (
                f"None if not {fl.name} else {value}"
                if isinstance(w, n.ArrayType)
                else f"None if {fl.name} is None else {value}"
            )
        return con, value

    def fixed(self, fl: n.Field, w: n.Int) -> tuple[str, str | None]:
        """A fixed-width field: a constant, bit views (each value a key of the wire dict), a count, or itself."""
        con = _SCALAR[w.kind] if w.kind != "int" else _INT[(w.width, w.signed)]
        if fl.const is not None:
            return f"c.Const({fl.const}, {con})", None
        if isinstance(fl.derived, n.CountOf) and not fl.bits:
            return f"c.Rebuild({con}, c.len_(this.{fl.derived.array}))", None
        if not fl.bits:
            return con, fl.name
        enums = {e.name: dict(e.values) for e in self.f.enums}
        views = [f"({b.name!r}, {b.mask}, {b.shift}, {b.kind!r}, {f'_ENUM_{b.enum}' if b.enum else 'None'}, "
                 f"{b.const!r}, {b.selects_codec!r})" for b in fl.bits]  # fmt: skip

        def bit_value(b: n.BitView) -> str:
            if b.const is not None and b.enum:
                return repr(enums[b.enum][b.const])
            if b.const is not None:
                return repr(bool(b.const) if b.kind == "flag" else b.const)
            return f"{b.null_marker_for} is None" if b.null_marker_for else b.name

        return f"BitsView({con}, [{', '.join(views)}])", "{" + ", ".join(
            f"{b.name!r}: {bit_value(b)}" for b in fl.bits
        ) + "}"

    def tagged(self, fl: n.Field, w: n.Tagged, depth: int) -> tuple[str, str]:
        """KTagged with each tagged field's value struct (a condition becomes a lambda on the context), and the
        wire value: the fields not at their absent value, and the unknown tags kept."""
        items = []
        for t in w.fields:
            cond = "None"
            if t.condition is not None:
                cond = f"lambda this: {py(t.condition, lambda r: self.ref(r, depth))}"
            items.append(f"({t.tag}, {t.name!r}, {t.struct}, {cond})")
        con = f"KTagged([{', '.join(items)}])"
        known = []
        for t in w.fields:
            present = f"{t.name} != {t.absent!r}" + ("" if t.nullable else f" and {t.name} is not None")
            if isinstance(t.absent, n.EmptyStruct):  # left out when it encodes as the empty struct it reads as
                wire = f"_wire_{t.struct}({t.name}, 0{args(self.f.struct(t.struct))})"
                present = f"{t.struct}.build({wire}) != {absent_bytes(self.f, t)!r}"
            known.append(
                f"**({{{t.name!r}: _wire_{t.struct}({t.name}, 0{args(self.f.struct(t.struct))})}} if {present} else {{}})"
            )
        return con, f"{{'known': {{{', '.join(known)}}}, 'unknown': {fl.name}}}"

    def switch(self, fl: n.Field, w: n.Switch, depth: int) -> tuple[str, str]:
        """``c.Switch`` on the selector (one layout per value, else NoCase), and the wire value: the case's
        ``_wire_`` of a value checked to be that case's class."""
        sel = self.ref(w.selector, depth)
        key = f"lambda this: {sel}" if "_outer(" in sel else sel
        known = ", ".join(str(v) for v, _ in w.cases)
        cases = ", ".join(f"{v}: {c}" for v, c in w.cases)
        con = f"c.Switch({key}, {{{cases}}}, default=NoCase({w.selector.name!r}, {known!r}))"
        s = w.selector.name
        value = f"_no_case({s!r}, {s}, {known!r})"
        for vs, c in reversed(w.grouped()):
            checked = (
                fl.name
                if self.f.struct(c).repr != "object"
                else f"_case({fl.name}, {camel(c)}, {fl.name!r}, {s!r}, {s})"
            )
            value = f"(_wire_{c}({checked}, 0{args(self.f.struct(c))}) if {s} in {vs!r} else {value})"
        return con, value

    def array(self, fl: n.Field, w: n.ArrayType, depth: int) -> tuple[str, str]:
        b = w.budget or n.Budget(0)
        nested = tuple((x.field, x.cost) for x in b.nested)
        budget = f"cost={0 if b.accounted else b.cost}, min={w.min_elem_size}, nested={nested!r}"
        null_count = w.nullable and w.size is None and isinstance(w.count, (n.Int, n.Varint))
        if isinstance(w.count, (n.Int, n.Varint)):
            con = (
                f"KCounted({prefix(w.count)}, {w.elem}, {w.limit!r}, {budget}{', nullable=True' if null_count else ''})"
            )
        elif isinstance(w.count, n.Rest):
            con = f"KUntilEnd({w.elem}, {w.limit!r}, {budget})"
        else:
            con = f"KArray({self.ref(w.count.field, depth)}, {w.elem}, {w.limit!r}, {budget})"
        if w.compressed_by is not None:
            magic = self.f.magic if self.f.magic is not None else 2
            count = f", count={self.ref(w.count.field, depth)}" if isinstance(w.count, n.CountFrom) else ""
            con = f"KafkaCompressed({con}, {self.ref(w.compressed_by, depth)}, {magic}{count})"
        elem = self.f.struct(w.elem)
        items = f"[_wire_{w.elem}(x_, i_{args(elem)}) for i_, x_ in enumerate({fl.name})]"
        absent = null_count or fl.condition is not None  # null, or not written in this version
        return con, f"(None if {fl.name} is None else {items})" if absent else items


def _refs(e) -> list[n.Ref]:
    from generator.ir.passes.scope import refs

    return refs(e)


def args(st: n.Struct) -> str:
    """The values of enclosing structs a struct's functions take, as call arguments (local names)."""
    return "".join(f", {p.name}" for p in st.params)


def wrapper_of(f: n.FormatIR, name: str) -> n.Wrapper | None:
    """The wrapper holding struct ``name`` as its inner entries, if any."""
    return next((w for s in f.structs for w in s.wrappers if w.struct == name), None)


def inner_header(f: n.FormatIR, w: n.Wrapper) -> tuple[int, int, str]:
    """Where an inner entry's length field is: (its offset, where the counted bytes start, struct format)."""
    inner = f.struct(w.struct)
    for x in inner.fields:
        if (
            isinstance(x.derived, n.LengthOf)
            and isinstance(x.wire, n.Int)
            and x.offset is not None
            and x.condition is None
        ):
            return x.offset, x.offset + x.wire.width, ">" + _STRUCT_FMT[(x.wire.width, x.wire.signed)]
        if not isinstance(x.wire, n.Int) or x.condition is not None:
            break
    raise SchemaError(f"{f.file}: wraps: the inner struct {w.struct!r} must start with fixed fields and a length field")


def model_fields(f: n.FormatIR, st: n.Struct) -> list[str]:
    """The values decoding exposes, in the order the value classes declare them."""
    out: list[str] = []
    for x in st.fields:
        out += [b.name for b in x.bits] if x.bits else [x.name]
        if isinstance(x.wire, n.Tagged):
            out += [t.name for t in x.wire.fields]
    out += [x.derived.logical for x in st.fields if isinstance(x.derived, n.DeltaOf)]
    for v in st.views:
        out += [v.name, f"{v.name}_error"] if v.keep_raw else [v.name]
    out += [w.into for w in st.wrappers]
    wb = wrapper_of(f, st.name)
    if wb is not None and wb.timestamps_from:
        out.append(f"wire_{wb.timestamps_from}")
    return out


def camel(name: str) -> str:
    """The value class of a struct in the generated model (the package's naming contract)."""
    return "".join(p.capitalize() for p in name.split("_"))


def _default(x: n.Field) -> str:
    return repr(x.default.name if isinstance(x.default, n.EnumConst) else x.default.value) if x.default else "None"


def _bit_default(f: n.FormatIR, b: n.BitView) -> str:
    if b.enum:
        values = dict(next(e for e in f.enums if e.name == b.enum).values)
        return repr(values.get(0))
    return "False" if b.kind == "flag" else "0"


def depth_param(f: n.FormatIR, st: n.Struct) -> bool:
    """A struct whose entries nest (a wrapper, or a wrapper's inner entry) carries its nesting depth."""
    return bool(st.wrappers) or wrapper_of(f, st.name) is not None


def model_lines(f: n.FormatIR, st: n.Struct) -> list[str]:
    """The body of ``_model_<struct>(c_, opts, <params>[, depth_])``."""
    out = ["d_ = _flatten(c_)"]
    for x in st.fields:
        if x.bits:
            out += [f"{b.name} = d_[{x.name!r}][{b.name!r}]" for b in x.bits]
            continue
        value = _model_value(f, x, out)
        if x.condition is not None:  # absent unless its condition holds
            value = f"{value} if {py(x.condition)} else {_default(x)}"
        out.append(f"{x.name} = {value}")
    for x in st.fields:
        if isinstance(x.derived, n.DeltaOf):
            out.append(f"{x.derived.logical} = {py(x.derived.decoded)}")
    out += view_decode_lines(f, st)
    for wr in st.wrappers:
        out += wrapper_decode_lines(f, st, wr)
    names = model_fields(f, st)
    wb = wrapper_of(f, st.name)
    if wb is not None and wb.timestamps_from:
        names.remove(f"wire_{wb.timestamps_from}")  # set by the wrapper holding this entry
    if st.repr == "value":  # a one-field struct: its value
        out.append(f"return {names[0]}")
    elif st.repr == "tuple":
        out.append(f"return ({', '.join(names)}{',' if len(names) == 1 else ''})")
    else:
        out.append(f"return {camel(st.name)}({', '.join(f'{x}={x}' for x in names)})")
    return out


def _at_default(f: n.FormatIR, t: n.TaggedField) -> str:
    """Whether a tagged field decoded at the value its encoder leaves it out at (the empty struct: its bytes)."""
    return repr(absent_bytes(f, t)) if isinstance(t.absent, n.EmptyStruct) else py_at_default(t, t.name)


def _model_value(f: n.FormatIR, x: n.Field, out: list[str]) -> str:
    """A field's decoded value from the parsed container ``d_`` (a tagged section adds its fields to ``out``)."""
    w = x.wire
    got = f"d_[{x.name!r}]"
    if isinstance(w, n.ArrayType):
        value = f"[_model_{w.elem}(x_, opts{args(f.struct(w.elem))}) for x_ in {got}]"
        return f"None if {got} is None else {value}" if w.nullable else value
    if isinstance(w, n.Tagged):
        out.append(f"known_ = {got}['known']")
        for t in w.fields:
            value = f"_model_{t.struct}(known_[{t.name!r}], opts{args(f.struct(t.struct))})"
            absent = repr(t.absent)
            if isinstance(t.absent, n.EmptyStruct):  # new Type(): decoded from the bytes of the empty struct
                absent = f"_model_{t.struct}({t.struct}.parse({absent_bytes(f, t)!r}), opts{args(f.struct(t.struct))})"
            out.append(f"{t.name} = {value} if {t.name!r} in known_ else {absent}")
        named = "".join(f"({t.tag}, {_at_default(f, t)}), " for t in w.fields)
        return f"_keep_tags([tuple(u_) for u_ in {got}['unknown']], {got}['raw'], ({named}))"
    if isinstance(w, n.Switch):
        value = "None"
        for vals, c in reversed(w.grouped()):  # decoding has refused any other selector value
            value = f"(_model_{c}({got}, opts{args(f.struct(c))}) if {w.selector.name} in {vals!r} else {value})"
        return value
    if isinstance(w, n.StructType):
        value = f"_model_{w.name}({got}, opts{args(f.struct(w.name))})"
        return f"None if {got} is None else {value}" if w.nullable else value
    return got


def view_decode_lines(f: n.FormatIR, st: n.Struct) -> list[str]:
    """Each view: its struct read from the start of the bytes when its condition holds, else None."""
    out = []
    for v in st.views:
        vs = f.struct(v.struct)
        minimum = max(vs.min_size, 1)
        cond = py(v.condition) if v.condition is not None else "True"
        body = [
            f"if {v.source} is None or len({v.source}) < {minimum}:",
            f'    raise _InvalidValueError("{v.source} must hold a {v.struct} of at least {minimum} bytes", path={f"{st.name}.{v.name}"!r})',
            f"{v.name}, _ = _decode_{v.struct}({v.source}, 0, len({v.source}), opts{args(vs)})",
        ]
        if v.keep_raw:  # on_error: raw: the bytes stay, the error is kept beside them
            body = [
                "try:",
                *("    " + x for x in body),
                "except _CodecError as e_:",
                f"    {v.name}, {v.name}_error = None, str(e_)",
            ]
            out.append(f"{v.name}_error = None")
        out += [f"if {cond}:", *("    " + x for x in body), "else:", f"    {v.name} = None"]
    return out


def wrapper_decode_lines(f: n.FormatIR, st: n.Struct, w: n.Wrapper) -> list[str]:
    """A wrapper's inner entries: decompressed, read up to a truncated tail (dropped, as Kafka does),
    within max_records and the max_memory budget, then renumbered and restamped."""
    len_off, start, _fmt = inner_header(f, w)
    path = f"{st.name}.{w.source}"
    codec = w.codec.name
    o = w.offset_field
    lines = [
        f"{w.into} = None",
        f"if {py(w.condition)}:",
        f"    if {w.source} is None:",
        f'        raise _InvalidValueError("found a compressed message set with a null value", path={path!r})',
        "    if depth_ >= opts.max_depth:",
        "        raise _InvalidValueError(",
        f'            f"inner messages must not be compressed (nesting deeper than {{opts.max_depth}})", path={path!r}',
        "        )",
        f"    data_ = _decompress({codec}, {w.source}, MAGIC, opts, path={path!r})",
        "    dpos = 0",
        "    dend = len(data_)",
        f"    {w.into} = []",
        f"    while dend - dpos >= {start}:",
        f"        (n_,) = _INNER_{w.struct}.unpack_from(data_, dpos + {len_off})",
        f"        if n_ >= 0 and dpos + {start} + n_ > dend:",
        "            break  # Kafka drops a truncated inner tail",
        f"        if len({w.into}) >= opts.max_records:",
        f'            raise _LimitExceededError(f"more than {{opts.max_records}} inner messages", path={path!r})',
        f"        if (len({w.into}) + 1) * {w.cost} + dend > opts.max_memory:",
        "            raise _LimitExceededError(",
        f'                f"decoding needs an estimated {{(len({w.into}) + 1) * {w.cost} + dend}} bytes, over max_memory={{opts.max_memory}}",',
        f"                path={path!r},",
        "            )",
        "        try:",
        f"            item_, dpos = _decode_{w.struct}(data_, dpos, dend, opts, depth_ + 1)",
        "        except _CodecError as exc:",
        f"            raise exc.within({f'{path}.{w.into}'!r}, len({w.into}), {w.struct!r}).in_stream({codec}, None) from None",
        f"        {w.into}.append(item_)",
        f"    if not {w.into}:",
        f'        raise _InvalidValueError("found a compressed message set with no inner records", path={path!r})',
    ]
    if w.offsets == "relative_to_first":
        lines += [
            f"    for m_ in {w.into}:",
            f"        m_.{o} += {o}",
            f"        if not -0x8000000000000000 <= m_.{o} <= 0x7FFFFFFFFFFFFFFF:",
            f'            raise _InvalidValueError(f"inner offset {{m_.{o} - {o}}} past the wrapper\'s {{{o}}} overflows int64", '
            f"path={path!r})",
        ]
    elif w.offsets == "relative_to_last":
        lines += [
            f"    last_ = {w.into}[-1].{o}",
            f"    if {o} == 0:",
            "        base_ = 0  # some producers write wrapper offset 0; Kafka then takes inner offsets as they are",
            f"    elif {o} < last_:",
            "        raise _InvalidValueError(",
            f'            f"invalid wrapper offset {{{o}}} in compressed v1 message set (last inner offset {{last_}})",',
            f"            path={path!r},",
            "        )",
            "    else:",
            f"        base_ = {o} - last_",
            f"    for m_ in {w.into}:",
            f"        m_.{o} += base_",
        ]
    if w.timestamps_from:
        t = w.timestamps_from
        cond = py(w.timestamps_when) if w.timestamps_when is not None else "True"
        lines += [
            f"    if {cond}:",
            f"        for m_ in {w.into}:",
            f"            m_.wire_{t} = m_.{t}",
            f"            m_.{t} = {t}",
        ]
    return lines


#: the slots of kfmt.Record: a record or message reads them directly (any kfmt.Record has them)
BASE_SLOTS = ("offset", "timestamp", "key", "value", "headers", "control")


def wire_lines(f: n.FormatIR, st: n.Struct, wire: str) -> list[str]:
    """The body of ``_wire_<struct>(obj, index, <params>[, rebase_, restamp_])``: the dict Construct builds."""
    load = _loader(st)
    out = _load_lines(f, st, load)
    out += [load(w.into, "None") for w in st.wrappers]
    for v in st.views:
        vs = f.struct(v.struct)
        out += [
            load(v.name, "None"),
            f"if {v.name} is not None and {v.source} is None:",
            "    tmp_ = bytearray()",
            f"    _encode_{v.struct}({v.name}, tmp_, 0{args(vs)})",
            f"    {v.source} = bytes(tmp_)",
        ]
    wb = wrapper_of(f, st.name)
    if wb is not None:
        o = wb.offset_field
        out.append(f"{o} = {o} - rebase_ if {o} is not None else index")
        if wb.timestamps_from:
            t = wb.timestamps_from
            out.append(f"{t} = obj.wire_{t} if restamp_ and getattr(obj, 'wire_{t}', None) is not None else {t}")
    out += _derived_lines(f, st)
    for w in st.wrappers:
        out += wrapper_encode_lines(f, st, w)
    out.append(f"return {wire}")
    return out


def _loader(st: n.Struct):
    """How a value's field is read: the value itself (repr value), a tuple's item, a base slot, an attribute."""
    base = set(BASE_SLOTS) if st.role in ("record", "message") else set()
    names = [x.name for x in st.fields]

    def load(name: str, default: str) -> str:
        if st.repr == "value":
            return f"{name} = obj"
        if st.repr == "tuple":
            return f"{name} = obj[{names.index(name)}]"
        if name in base:
            return f"{name} = obj.{name}"
        return f"{name} = getattr(obj, {name!r}, {default})"

    return load


def _load_lines(f: n.FormatIR, st: n.Struct, load) -> list[str]:
    """The stored values encoding reads (derived ones are computed, constants written)."""
    out = []
    for x in st.fields:
        d = x.derived
        if x.bits:
            out += [load(b.name, _bit_default(f, b)) for b in x.bits if b.const is None and not b.null_marker_for]
        elif x.const is not None or isinstance(d, (n.LengthOf, n.CountOf, n.Checksum)):
            continue
        elif isinstance(d, n.FoldOf) and not d.overridable:
            continue
        elif isinstance(d, n.DeltaOf):
            out.append(load(d.logical, "None"))
            if not d.numbered:
                out.append(f"{x.name}_kept = getattr(obj, {x.name!r}, None)")
        else:
            out.append(load(x.name, _default(x) if not isinstance(d, n.FoldOf) else "None"))
        if isinstance(x.wire, n.Tagged):
            out += [
                load(t.name, "None" if isinstance(t.absent, n.EmptyStruct) else repr(t.absent)) for t in x.wire.fields
            ]
    return out


def _derived_lines(f: n.FormatIR, st: n.Struct) -> list[str]:
    """Counts, first/last/max values and deltas, computed from what was loaded."""
    out = []
    for x in st.fields:
        d = x.derived
        if isinstance(d, n.CountOf) and not isinstance(x.wire, n.Int):  # an Int count is Construct's Rebuild
            out.append(f"{x.name} = len({d.array})")
        if isinstance(d, n.FoldOf):
            value = fold(f, st, d.value)
            out += [f"if {x.name} is None:", f"    {x.name} = {value}"] if d.overridable else [f"{x.name} = {value}"]
    for x in st.fields:
        d = x.derived
        if isinstance(d, n.DeltaOf):
            delta = f"{d.logical} - {py(d.base)}"
            if d.numbered:
                out.append(f"{x.name} = {delta} if {d.logical} is not None else index")
            else:
                cond = py(d.decoded.cond) if isinstance(d.decoded, n.Choose) else "True"
                out.append(f"{x.name} = {x.name}_kept if {cond} and {x.name}_kept is not None else {delta}")
    return out


def fold(f: n.FormatIR, st: n.Struct, v: n.Fold) -> str:
    """first / last / max of a member of an array's elements; a member that is itself a delta (a record's
    offset_delta) is computed as encoding computes it (its value less the base, or its index)."""
    arr, m, default = v.array.name, v.member, py(v.default)
    elem = f.struct(next(x.wire.elem for x in st.fields if x.name == arr and isinstance(x.wire, n.ArrayType)))
    delta = next((x.derived for x in elem.fields if x.name == m and isinstance(x.derived, n.DeltaOf)), None)
    if delta is not None:
        if v.func != "last":
            raise SchemaError(f"{f.file}: {v.func}_of a delta field is not supported")
        t, b = delta.logical, py(delta.base)
        return f"(({arr}[-1].{t} - {b}) if {arr}[-1].{t} is not None else len({arr}) - 1) if {arr} else {default}"
    if v.func == "first":
        return f"{arr}[0].{m} if {arr} else {default}"
    if v.func == "last":
        return f"{arr}[-1].{m} if {arr} else {default}"
    return f"max([r.{m} for r in {arr}]) if {arr} else {default}"


def wrapper_encode_lines(f: n.FormatIR, st: n.Struct, w: n.Wrapper) -> list[str]:
    """A wrapper's inner entries written back to back (renumbered relative to the first or as absolute,
    restamped), then compressed into the wrapper's bytes field."""
    path = f"{st.name}.{w.source}"
    o = w.offset_field
    relative = w.offsets != "absolute"
    magic = f.magic if f.magic is not None else 2
    restamp = py(w.timestamps_when) if w.timestamps_when is not None else "False"
    lines = [
        f"if {py(w.condition)} and {w.into} is not None:",
        f"    if not {w.into}:",
        f'        raise _InvalidValueError("a compressed wrapper needs at least one inner message", path={path!r})',
        "    tmp_ = bytearray()",
    ]
    if relative:
        lines.append(f"    rb_ = {w.into}[0].{o} if {w.into}[0].{o} is not None else 0")
    else:
        lines += [
            "    rb_ = 0",
            f"    first_ = {o} - len({w.into}) + 1  # inner messages without an offset end at the wrapper's",
        ]
    lines += [
        f"    for index_, item_ in enumerate({w.into}):",
        f'        if getattr(item_, "codec", "none") != "none" or getattr(item_, {w.into!r}, None) is not None:',
        f'            raise _InvalidValueError("inner messages must not be compressed", path={path!r})',
        f"        _encode_{w.struct}(item_, tmp_, {'index_' if relative else 'first_ + index_'}, rb_, {restamp})",
        f"    {w.source} = _compress({w.codec.name}, bytes(tmp_), {magic})",
    ]
    return lines
