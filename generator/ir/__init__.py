"""The typed, target-neutral IR of a format (:mod:`generator.ir.nodes`), built from a validated schema
by the passes listed in :data:`generator.ir.passes.PASSES`; :func:`generator.ir.printer.show` prints it."""

from __future__ import annotations

from generator.ir import nodes
from generator.ir.nodes import FormatIR
from generator.ir.passes import PASSES, budget, check, derive, layout, resolve, scope
from generator.loader.spec import Schema

__all__ = ["PASSES", "FormatIR", "build", "nodes"]


def build(schema: Schema, *, until: str | None = None) -> FormatIR:
    """Run the passes over ``schema`` (``until``: stop after that pass, to see what it did)."""
    if until is not None and until not in {p for p, _ in PASSES}:
        raise ValueError(f"no pass {until!r}; the passes are {', '.join(p for p, _ in PASSES)}")
    structs, sc = resolve.run(schema)
    steps = {
        "derive": lambda s: derive.run(schema, sc, s),
        "layout": lambda s: layout.run(schema.file, s),
        "budget": lambda s: budget.run(schema.root or "", s),
        "scope": scope.run,
        "check": lambda s: check.run(schema.file, s),
    }
    if until != "resolve":
        for name, _ in PASSES[1:]:
            structs = steps[name](structs)
            if name == until:
                break
    return FormatIR(
        id=schema.id,
        doc=schema.doc,
        doc_ref=schema.doc_ref,
        file=schema.file,
        magic=schema.magic,
        auto_detect=schema.auto_detect,
        root=schema.root or "",
        structs=tuple(structs),
        enums=tuple(nodes.Enum(e.name, e.values, e.doc) for e in schema.enums.values()),
        fingerprint=schema.fingerprint,
        trailing=schema.trailing,  # type: ignore[arg-type]
    )
