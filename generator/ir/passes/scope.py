"""Pass 5, scope: the values of enclosing structs each struct reads (its parameters), collected from
every expression in it, in first-use order."""

from __future__ import annotations

import dataclasses

import generator.ir.nodes as n


def refs(x) -> list[n.Ref]:
    """Every Ref in a node tree (expressions, wire types, derived values, fields ...)."""
    if isinstance(x, n.Ref):
        return [x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out = []
        for f in dataclasses.fields(x):
            out += refs(getattr(x, f.name))
        return out
    if isinstance(x, tuple):
        return [r for item in x for r in refs(item)]
    return []


def run(structs: list[n.Struct]) -> list[n.Struct]:
    by_name = {s.name: s for s in structs}
    params: dict[str, list[n.Ref]] = {s.name: [] for s in structs}
    for st in structs:
        for r in refs((st.fields, st.views, st.wrappers, st.logical, st.requires)):
            if r.owner != st.name and r not in params[st.name]:
                params[st.name].append(r)
    # a struct passes on what the structs inside it need from further out
    changed = True
    while changed:
        changed = False
        for st in structs:
            inner = [f.wire.elem if isinstance(f.wire, n.ArrayType) else f.wire.name for f in st.fields
                     if isinstance(f.wire, (n.ArrayType, n.StructType))]  # fmt: skip
            inner += [c for f in st.fields if isinstance(f.wire, n.Switch) for c in f.wire.structs()]
            inner += [t.struct for f in st.fields if isinstance(f.wire, n.Tagged) for t in f.wire.fields]
            inner += [v.struct for v in st.views]
            for name in inner:
                for r in params.get(name, []):
                    if r.owner != st.name and r not in params[st.name]:
                        params[st.name].append(r)
                        changed = True
    return [dataclasses.replace(by_name[s.name], params=tuple(params[s.name])) for s in structs]
