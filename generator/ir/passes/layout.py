"""Pass 3, layout: fixed offsets from the start of each struct, runs of fixed-width fields (one read
each), the trailer a ``rest`` extent leaves for the fixed fields after it, and minimum / fixed sizes."""

from __future__ import annotations

import dataclasses

import generator.ir.nodes as n
from generator.loader.spec import SchemaError


def _width(w: n.Extent | None) -> int:
    """Bytes a prefix takes at least (a varint at least 1; a count from a field or the rest: none)."""
    if isinstance(w, n.Int):
        return w.width
    if isinstance(w, n.Varint):
        return 1
    return 0


def min_field_size(f: n.Field, sizes: dict[str, int]) -> int:
    if f.condition is not None:
        return 0
    w = f.wire
    if isinstance(w, n.Int):
        return w.width
    if isinstance(w, n.Varint):
        return 1
    if isinstance(w, n.Blob):
        return _width(w.length)
    if isinstance(w, n.ArrayType):
        return _width(w.size) + _width(w.count)
    if isinstance(w, n.Switch):
        return min(sizes[c] for c in w.structs())
    if isinstance(w, n.Tagged):
        return 1  # the count
    return _width(w.size) + sizes[w.name]


def run(file: str, structs: list[n.Struct]) -> list[n.Struct]:
    sizes: dict[str, int] = {}
    out = []
    for st in structs:  # dependencies first: an embedded struct's size is known
        fields = list(st.fields)
        offset: int | None = 0
        runs: list[n.FixedRun] = []
        current: list[str] = []
        size = 0
        for i, f in enumerate(fields):
            fixed = isinstance(f.wire, n.Int) and f.condition is None
            fields[i] = dataclasses.replace(f, offset=offset)
            if offset is not None:
                offset = offset + f.wire.width if fixed else None  # type: ignore[union-attr]
            if fixed:
                current.append(f.name)
                size += f.wire.width  # type: ignore[union-attr]
            elif current:
                runs.append(n.FixedRun(tuple(current), size))
                current, size = [], 0
            w = f.wire
            blob_rest = isinstance(w, n.Blob) and isinstance(w.length, n.Rest)
            array_rest = isinstance(w, n.ArrayType) and isinstance(w.count, n.Rest) and w.size is None
            if blob_rest or array_rest:
                widths = [a.wire.width if isinstance(a.wire, n.Int) and a.condition is None else None
                          for a in fields[i + 1 :]]  # fmt: skip
                if None in widths:
                    raise SchemaError(f"{file}:{f.line}: only fixed-width fields may follow a 'rest' field")
                trailer = n.Rest(sum(x for x in widths if x is not None))
                if isinstance(w, n.Blob):
                    fields[i] = dataclasses.replace(fields[i], wire=dataclasses.replace(w, length=trailer))
                elif isinstance(w, n.ArrayType):
                    fields[i] = dataclasses.replace(fields[i], wire=dataclasses.replace(w, count=trailer))
        if current:
            runs.append(n.FixedRun(tuple(current), size))
        sizes[st.name] = sum(min_field_size(f, sizes) for f in fields)
        all_fixed = all(isinstance(f.wire, n.Int) and f.condition is None for f in fields)
        out.append(
            dataclasses.replace(
                st,
                fields=tuple(fields),
                runs=tuple(runs),
                min_size=sizes[st.name],
                fixed_size=sizes[st.name] if all_fixed else None,
            )
        )
    return out
