"""A plain-text rendering of a FormatIR, one line per node, for golden tests and for reading
(``kfmt generate --show-ir FORMAT``)."""

from __future__ import annotations

import generator.ir.nodes as n

_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def expr(e: n.Expr, here: str) -> str:
    """An expression; a reference to a field of the struct itself is its bare name, one of an enclosing
    struct ``struct.name``."""
    if isinstance(e, n.Const):
        return repr(e.value)
    if isinstance(e, n.EnumConst):
        return f"{e.enum}.{e.name}({e.value})"
    if isinstance(e, n.Ref):
        return e.name if e.owner == here else f"{e.owner}.{e.name}"
    if isinstance(e, n.ElementIndex):
        return "index"
    if isinstance(e, n.Compare):
        return f"({expr(e.left, here)} {_OPS[e.op]} {expr(e.right, here)})"
    if isinstance(e, n.Truthy):
        return f"{expr(e.operand, here)}?"
    if isinstance(e, n.All):
        return "(" + " and ".join(expr(x, here) for x in e.operands) + ")"
    if isinstance(e, n.Arith):
        s = f"{expr(e.left, here)} {'+' if e.op == 'add' else '-'} {expr(e.right, here)}"
        return f"wrap64({s})" if e.wrap64 else f"({s})"
    if isinstance(e, n.Length):
        return f"len({expr(e.operand, here)})"
    if isinstance(e, n.Fold):
        return f"{e.func}({expr(e.array, here)}.{e.member}, default {expr(e.default, here)})"
    if isinstance(e, n.Choose):
        return f"({expr(e.cond, here)} ? {expr(e.then, here)} : {expr(e.otherwise, here)})"
    raise TypeError(f"not an expression: {e!r}")


def extent(x: n.Extent | None, here: str) -> str:
    if x is None:
        return "-"
    if isinstance(x, n.Int):
        return x.kind if x.kind != "int" else f"{'int' if x.signed else 'uint'}{x.width * 8}"
    if isinstance(x, n.Varint):
        return "compact (uvarint N+1, 0 null)" if x.compact else f"{'zigzag ' if x.zigzag else ''}varint{x.bits}"
    if isinstance(x, n.Rest):
        return f"rest-{x.trailer}" if x.trailer else "rest"
    return f"from {expr(x.field, here)}"


def wire(w: n.Wire, here: str) -> str:
    if isinstance(w, (n.Int, n.Varint)):
        return extent(w, here)
    if isinstance(w, n.Blob):
        opts = ["text" if w.text else "bytes", f"length {extent(w.length, here)}"]
        opts += ["nullable"] * w.nullable + ([f"max {w.max}"] if w.max is not None else [])
        return "blob(" + ", ".join(opts) + ")"
    if isinstance(w, n.Tagged):
        tags = ", ".join(
            f"{t.tag}: {t.name}" + (f" if {expr(t.condition, here)}" if t.condition else "") for t in w.fields
        )
        return f"tagged-field section ({tags}; unknown tags kept)"
    if isinstance(w, n.Switch):
        cases = ", ".join(f"{'/'.join(map(str, vs))}: {c}" for vs, c in w.grouped())
        return f"switch on {expr(w.selector, here)} ({cases})"
    if isinstance(w, n.StructType):
        size = f", size {extent(w.size, here)}" if w.size else ""
        marker = f", null marker {extent(w.marker, here)}" if w.marker else ""
        return f"struct {w.name}{size}{', nullable' if w.nullable else ''}{marker}"
    opts = [f"count {extent(w.count, here)}", w.limit, f"min elem {w.min_elem_size}"]
    if w.size:
        opts.append(f"size {extent(w.size, here)}")
    if w.nullable:
        opts.append("nullable")
    if w.compressed_by:
        opts.append(f"compressed by {expr(w.compressed_by, here)}")
    if w.budget:
        b = w.budget
        opts.append("budget " + ("accounted by the enclosing array" if b.accounted else f"{b.cost}/elem"))
        opts += [f"nested {x.field} {x.cost}/elem min {x.min_size}" for x in b.nested]
    return f"array of {w.elem}(" + ", ".join(opts) + ")"


def derived(d: n.Derived, here: str) -> str:
    if isinstance(d, n.LengthOf):
        return f"length_of {d.start}..end"
    if isinstance(d, n.CountOf):
        return f"count_of {d.array}"
    if isinstance(d, n.Checksum):
        return f"{d.algo} over {d.start}..{d.end or 'end'}{' (trailing)' if d.trailing else ''}"
    if isinstance(d, n.FoldOf):
        return f"= {expr(d.value, here)}{' (overridable)' if d.overridable else ''}"
    numbered = ", numbered by index" if d.numbered else ""
    return f"delta of {d.logical} from {expr(d.base, here)}; {d.logical} = {expr(d.decoded, here)}{numbered}"


def show(f: n.FormatIR) -> str:
    lines = [f"format {f.id}: magic {f.magic}{' (auto-detected)' if f.auto_detect else ''}, root {f.root}"]
    for e in f.enums:
        lines.append(f"enum {e.name}: " + ", ".join(f"{k} {v}" for k, v in e.values))
    for st in f.structs:
        lines += _struct_lines(st)
    return "\n".join(lines) + "\n"


def _struct_lines(st: n.Struct) -> list[str]:
    size = f"fixed {st.fixed_size}" if st.fixed_size is not None else f"min {st.min_size}"
    lines = [f"struct {st.name} ({st.role}, {st.repr}, {size} bytes)"]
    if st.params:
        lines.append("  params " + ", ".join(expr(p, st.name) for p in st.params))
    if st.requires is not None:
        lines.append(f"  requires {expr(st.requires, st.name)}")
    for fl in st.fields:
        lines += _field_lines(st, fl)
    lines += [f"  run {' '.join(r.fields)} ({r.size} bytes)" for r in st.runs]
    lines += [f"  region {g.first}..{g.last} counted by {g.length_field}" for g in st.regions]
    for v in st.views:
        cond = f" if {expr(v.condition, st.name)}" if v.condition is not None else ""
        lines.append(f"  view {v.name} = {v.source} as {v.struct}{cond}")
    for w in st.wrappers:
        ts = ""
        if w.timestamps_from:
            when = expr(w.timestamps_when, st.name) if w.timestamps_when is not None else "always"
            ts = f"; inner timestamps = {w.timestamps_from} if {when}"
        lines.append(
            f"  wrapper {w.into} = {w.source} as {w.struct} entries if {expr(w.condition, st.name)}, "
            f"compressed by {expr(w.codec, st.name)}, offsets {w.offsets} ({w.offset_field}){ts}, "
            f"budget {w.cost}/elem"
        )
    lines += [f"  logical {lg.name} = {expr(lg.value, st.name)}" for lg in st.logical]
    return lines


def _field_lines(st: n.Struct, fl: n.Field) -> list[str]:
    at = f"@{fl.offset} " if fl.offset is not None else ""
    parts = [f"  {at}{fl.name}: {wire(fl.wire, st.name)}"]
    if fl.condition is not None:
        parts.append(f"if {expr(fl.condition, st.name)}")
    if fl.const is not None:
        parts.append(f"const {fl.const}")
    if fl.default is not None:
        parts.append(f"default {expr(fl.default, st.name)}")
    if fl.derived is not None:
        parts.append(derived(fl.derived, st.name))
    lines = ["; ".join(parts)]
    for b in fl.bits:
        extra = f" {b.enum}" if b.enum else ""
        extra += f" const {b.const}" if b.const is not None else ""
        extra += f" null marker of {b.null_marker_for}" if b.null_marker_for else ""
        extra += " (selects the codec)" if b.selects_codec else ""
        lines.append(f"      bits {b.mask:#x}>>{b.shift} {b.name}: {b.kind}{extra}")
    return lines
