"""The Python backend's translator of the typed IR's expressions (:mod:`generator.ir.nodes`).

References are local variables of the same name (``ref`` respells them, as ``self.x`` in a property).
Kafka's int64 arithmetic wraps like a Java long in the checked code; the optimistic code adds plainly
(``fast``) and leaves the rare overflow to the checked decoder.
"""

from __future__ import annotations

import generator.ir.nodes as n

MASK64 = "0xFFFFFFFFFFFFFFFF"
BIAS64 = "0x8000000000000000"
_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def py(e: n.Expr, *, fast: bool = False, ref=lambda r: r.name) -> str:
    def t(x: n.Expr) -> str:
        return py(x, fast=fast, ref=ref)

    if isinstance(e, n.Const):
        return repr(e.value)
    if isinstance(e, n.EnumConst):
        return repr(e.name)  # a decoded enum view holds its name
    if isinstance(e, n.Ref):
        return ref(e)
    if isinstance(e, n.ElementIndex):
        return "index"
    if isinstance(e, n.Truthy):
        return t(e.operand)
    if isinstance(e, n.Compare):
        right = e.right
        if isinstance(right, n.Const) and isinstance(right.value, bool) and e.op in ("eq", "ne"):
            return t(e.left) if (right.value is True) == (e.op == "eq") else f"not {t(e.left)}"
        return f"{t(e.left)} {_OPS[e.op]} {t(right)}"
    if isinstance(e, n.All):
        return "(" + " and ".join(t(x) for x in e.operands) + ")"
    if isinstance(e, n.Arith):
        s = f"{t(e.left)} {'+' if e.op == 'add' else '-'} {t(e.right)}"
        return f"(({s} + {BIAS64}) & {MASK64}) - {BIAS64}" if e.wrap64 and not fast else s
    if isinstance(e, n.Length):
        return f"len({t(e.operand)})"
    if isinstance(e, n.Choose):
        return f"{t(e.then)} if {t(e.cond)} else {t(e.otherwise)}"
    raise TypeError(f"no Python translation for {type(e).__name__} here")
