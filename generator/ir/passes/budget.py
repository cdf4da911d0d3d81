"""Pass 4, budget: the ``max_memory`` estimate of every array and legacy wrapper (bytes of Python objects
per decoded element), the arrays nested in each element, and which arrays an enclosing one accounts for.
The costs live in the runtime (``kfmt.runtime.options``), where decoders check them."""

from __future__ import annotations

import dataclasses

import generator.ir.nodes as n
from kfmt.runtime.options import HEADER_COST, RECORD_COST


def cost(st: n.Struct) -> int:
    return RECORD_COST if st.role in ("record", "batch", "message") else HEADER_COST


def run(root: str, structs: list[n.Struct]) -> list[n.Struct]:
    by_name = {s.name: s for s in structs}
    # structs decoded other than as an array's elements: their arrays have budgets of their own
    solo = {root}
    for st in structs:
        solo |= {f.wire.name for f in st.fields if isinstance(f.wire, n.StructType)}
        solo |= {c for f in st.fields if isinstance(f.wire, n.Switch) for c in f.wire.structs()}
        solo |= {t.struct for f in st.fields if isinstance(f.wire, n.Tagged) for t in f.wire.fields}
        solo |= {v.struct for v in st.views} | {w.struct for w in st.wrappers}
    out = []
    for st in structs:
        fields = []
        for f in st.fields:
            w = f.wire
            if isinstance(w, n.ArrayType):
                elem = by_name[w.elem]
                nested = tuple(
                    n.NestedArray(g.name, cost(by_name[g.wire.elem]), max(by_name[g.wire.elem].min_size, 1))
                    for g in elem.fields
                    if isinstance(g.wire, n.ArrayType)
                )
                budget = n.Budget(cost(elem), nested, accounted=st.name not in solo)
                w = dataclasses.replace(w, budget=budget, min_elem_size=max(elem.min_size, 1))
                f = dataclasses.replace(f, wire=w)
            fields.append(f)
        wrappers = tuple(dataclasses.replace(w, cost=cost(by_name[w.struct])) for w in st.wrappers)
        out.append(dataclasses.replace(st, fields=tuple(fields), wrappers=wrappers))
    return out
