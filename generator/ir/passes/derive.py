"""Pass 2, derive: derived fields as typed nodes (lengths and the regions they count, counts, checksum
ranges, first/last/max of an array, deltas with the value decoding exposes), wrappers, logical values,
and which enum views select a compression codec."""

from __future__ import annotations

import dataclasses

import generator.ir.nodes as n
from generator.ir.passes.resolve import Scope
from generator.loader.spec import Derive, Schema


def derived(scope: Scope, struct: str, names: list[str], i: int, d: Derive) -> n.Derived:
    me = names[i]
    if d.func == "length_of":
        return n.LengthOf(d.target)
    if d.func == "count_of":
        return n.CountOf(d.target)
    if d.func in ("crc32", "crc32c"):
        trailing = names.index(d.target) < i
        end = me if trailing else d.to
        return n.Checksum(d.func, d.target, end, trailing)  # type: ignore[arg-type]
    if d.func in ("first_of", "last_of", "max_of"):
        array, member = d.target.split(".")
        fold = n.Fold(d.func[: -len("_of")], scope.ref(struct, array), member, n.Const(d.default))  # type: ignore[arg-type]
        return n.FoldOf(fold, d.overridable)
    # delta_of: the wire holds logical - base; decoding gives base + wire (as a Java long), or under
    # ``when`` the field ``replaced_by`` (a LogAppendTime batch's records read its max timestamp)
    base = scope.ref(struct, d.base or "")
    decoded: n.Expr = n.Arith("add", base, n.Ref(me, struct), wrap64=True)
    if d.replaced_by:
        cond = scope.cond(struct, d.when) if d.when else n.Const(True)
        decoded = n.Choose(cond, scope.ref(struct, d.replaced_by), decoded)
    return n.DeltaOf(d.target, base, decoded, numbered=d.replaced_by is None)


def run(schema: Schema, scope: Scope, structs: list[n.Struct]) -> list[n.Struct]:
    out = []
    for st in structs:
        spec = schema.structs[st.name]
        names = [f.name for f in spec.fields]
        fields, regions = [], []
        for i, (f, sf) in enumerate(zip(st.fields, spec.fields, strict=True)):
            if sf.derive:
                f = dataclasses.replace(f, derived=derived(scope, st.name, names, i, sf.derive))
                if isinstance(f.derived, n.LengthOf):
                    regions.append(n.Region(f.name, f.derived.start, names[-1]))
            fields.append(f)
        wrappers = []
        for sf in spec.fields:
            w = sf.wraps
            if w is None:
                continue
            wrappers.append(
                n.Wrapper(
                    source=sf.name,
                    into=w.field,
                    struct=w.as_,
                    condition=scope.cond(st.name, w.when),
                    codec=scope.ref(st.name, w.compressed_by),
                    offsets=w.offsets,  # type: ignore[arg-type]
                    offset_field=w.offset_field,
                    timestamps_from=w.timestamp_field,
                    timestamps_when=scope.cond(st.name, w.timestamps_when) if w.timestamps_when else None,
                    cost=0,  # set by the budget pass
                )
            )
        logical = []
        for name, terms in spec.logical:
            value: n.Expr = scope.ref(st.name, terms[0])
            for t in terms[1:]:  # a Kafka long: base_offset + last_offset_delta wraps as Java's lastOffset() does
                value = n.Arith("add", value, scope.ref(st.name, t), wrap64=True)
            logical.append(n.Logical(name, value))
        # the enum views naming a compression codec (of a compressed array or a wrapper's inner set)
        codecs = {w.codec.name for w in wrappers} | {
            f.wire.compressed_by.name for f in fields if isinstance(f.wire, n.ArrayType) and f.wire.compressed_by
        }
        fields = [
            dataclasses.replace(f, bits=tuple(dataclasses.replace(b, selects_codec=b.name in codecs) for b in f.bits))
            if any(b.name in codecs for b in f.bits)
            else f
            for f in fields
        ]
        out.append(
            dataclasses.replace(
                st, fields=tuple(fields), regions=tuple(regions), wrappers=tuple(wrappers), logical=tuple(logical)
            )
        )
    return out
