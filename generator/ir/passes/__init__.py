"""The passes that build a :class:`generator.ir.nodes.FormatIR`, in order; each is one module."""

from __future__ import annotations

from generator.ir.passes import budget, check, derive, layout, resolve, scope, validate

#: the passes, in the order they run, with what each adds
PASSES = (
    (
        "resolve",
        "validate the structure; reachable structs in dependency order; typed wire types, bit views, conditions, references",
    ),
    ("derive", "derived fields, regions, checksum ranges, deltas, wrappers, logical values"),
    ("layout", "fixed offsets, fixed-width runs, rest trailers, minimum and fixed sizes"),
    ("budget", "max_memory costs of arrays and wrappers, nested arrays, accounted arrays"),
    ("scope", "the enclosing structs' values each struct reads"),
    ("check", "what no backend supports yet"),
)

__all__ = ["PASSES", "budget", "check", "derive", "layout", "resolve", "scope", "validate"]
