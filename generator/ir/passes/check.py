"""Pass 6, check: what the language allows but no backend can do yet, said with file and line."""

from __future__ import annotations

import generator.ir.nodes as n
from generator.loader.spec import SchemaError


def run(file: str, structs: list[n.Struct]) -> list[n.Struct]:
    for st in structs:
        for i, f in enumerate(st.fields):
            w = f.wire
            if isinstance(w, n.Blob) and isinstance(w.length, n.CountFrom):
                raise SchemaError(f"{file}:{f.line}: a length taken from another field is not supported yet")
            if isinstance(w, n.ArrayType) and w.compressed_by is not None and i != len(st.fields) - 1:
                raise SchemaError(f"{file}:{f.line}: a compressed array must be the last field of its struct")
    return structs
