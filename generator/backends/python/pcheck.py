"""The check walk (:mod:`generator.ir.walk`) in Python: one ``_check_<struct>`` per struct, answering the position
after it or raising ``Decline`` (kfmt.runtime.check), and ``check_from``. No value is built."""

from __future__ import annotations

import generator.ir.nodes as n
import generator.ir.walk as k
from generator.backends.python.expr import py

DECLINE = "raise _Decline"
_LOAD = {2: "_K_I16", 4: "_K_I32"}


class _Walk:
    def __init__(self, plans: dict[str, k.StructPlan], sp: k.StructPlan):
        self.plans = plans
        self.sp = sp
        self.lines: list[str] = []

    def w(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def emit(self) -> str:
        params = "".join(f", {p}" for p in self.sp.params)
        self.w(f"def _check_{self.sp.name}(buf, pos, end, opts{params}):", 0)
        self.steps(self.sp.steps, 1)
        self.w("return pos", 1)
        return "\n".join(self.lines) + "\n"

    def steps(self, steps: tuple, d: int) -> None:
        for s in steps:
            getattr(self, type(s).__name__.lower())(s, d)

    def requires(self, s: k.Requires, d: int) -> None:
        self.w(f"if not ({py(s.expr)}):", d)
        self.w(DECLINE, d + 1)

    def cond(self, s: k.Cond, d: int) -> None:
        self.w(f"if {py(s.expr)}:", d)
        self.steps(s.steps, d + 1)

    def skip(self, s: k.Skip, d: int) -> None:
        self.w(f"pos += {s.width}", d)
        self.w("if pos > end:", d)
        self.w(DECLINE, d + 1)

    def varintskip(self, s: k.VarintSkip, d: int) -> None:
        self.w(f"_, pos = _k_uvarint(buf, pos, end, {s.max_bytes})", d)

    def varint(self, var: str, wire: n.Varint, d: int) -> None:
        """``var`` = a varint (one byte read inline); Kafka's compact form less one."""
        self.w("if pos >= end:", d)
        self.w(DECLINE, d + 1)
        self.w(f"{var} = buf[pos]", d)
        self.w(f"if {var} < 128:", d)
        self.w("pos += 1", d + 1)
        self.w("elif pos + 1 < end and buf[pos + 1] < 128:  # two bytes (a record set of up to 16 KiB)", d)
        self.w(f"{var} = {var} & 127 | buf[pos + 1] << 7", d + 1)
        self.w("pos += 2", d + 1)
        self.w("else:", d)
        self.w(f"{var}, pos = _k_uvarint(buf, pos, end, {wire.max_bytes})", d + 1)
        if wire.compact:
            self.w(f"{var} -= 1", d)

    def prefix(self, wire: n.Int | n.Varint | n.Rest, d: int) -> None:
        if isinstance(wire, n.Rest):
            self.w(f"n_ = end - pos - {wire.trailer}", d)
        elif isinstance(wire, n.Varint):
            self.varint("n_", wire, d)
        else:
            if not wire.signed or wire.width not in _LOAD:
                raise k.NoCheck(f"a {wire.width}-byte length")
            self.w(f"if pos + {wire.width} > end:", d)
            self.w(DECLINE, d + 1)
            self.w(f"(n_,) = {_LOAD[wire.width]}(buf, pos)", d)
            self.w(f"pos += {wire.width}", d)

    def bytes(self, s: k.Bytes, d: int) -> None:
        self.prefix(s.length, d)
        nullable = s.nullable and not isinstance(s.length, n.Rest)
        limit = f" or n_ > {s.max}" if s.max is not None else ""
        self.w("if n_ < 0:", d)
        self.w("pass" if nullable else DECLINE, d + 1)
        self.w(f"elif n_ > opts.max_bytes or n_ > end - pos{limit}:", d)
        self.w(DECLINE, d + 1)
        if s.text:
            self.w("elif not buf[pos : pos + n_].isascii():", d)
            self.w(DECLINE, d + 1)
        self.w("else:", d)
        self.w("pos += n_", d + 1)

    def array(self, s: k.Array, d: int) -> None:
        self.prefix(s.count, d)
        self.w("if n_ < 0:", d)
        self.w("pass" if s.nullable else DECLINE, d + 1)
        self.w(f"elif n_ > opts.{s.limit} or n_ * {s.min_elem} > end - pos:", d)
        self.w(DECLINE, d + 1)
        if s.width is not None:
            self.w("else:", d)
            self.w(f"pos += n_ * {s.width}", d + 1)
            return
        assert s.elem is not None
        self.w("else:", d)
        inner = self.plans[s.elem]
        if _leaf(inner) and set(inner.params) <= set(self.sp.params):  # its steps in the loop: no call per element
            self.w("for _ in range(n_):", d + 1)
            self.steps(inner.steps, d + 2)
            return
        self.w(f"check_ = _check_{s.elem}", d + 1)
        self.w("for _ in range(n_):", d + 1)
        self.w(f"pos = check_(buf, pos, end, opts{self.args(s.elem)})", d + 2)

    def args(self, struct: str) -> str:
        return "".join(f", {p}" for p in self.plans[struct].params)

    def call_struct(self, struct: str, d: int) -> None:
        self.w(f"pos = _check_{struct}(buf, pos, end, opts{self.args(struct)})", d)

    def call(self, s: k.Call, d: int) -> None:
        if s.marker is None:
            self.call_struct(s.struct, d)
            return
        if isinstance(s.marker, n.Varint):
            self.varint("m_", s.marker, d)
            null = 0
        else:
            self.w("if pos >= end:", d)
            self.w(DECLINE, d + 1)
            self.w("m_ = buf[pos]", d)
            self.w("pos += 1", d)
            null = 255
        self.w("if m_ == 1:", d)
        self.call_struct(s.struct, d + 1)
        self.w(f"elif m_ != {null}:", d)
        self.w(DECLINE, d + 1)

    def switch(self, s: k.Switch, d: int) -> None:
        for i, (values, struct) in enumerate(s.cases):
            self.w(f"{'elif' if i else 'if'} {s.selector} in {tuple(values)!r}:", d)
            self.call_struct(struct, d + 1)
        self.w("else:", d)
        self.w(DECLINE, d + 1)

    def notags(self, s: k.NoTags, d: int) -> None:
        self.w("if pos >= end or buf[pos]:", d)
        self.w(DECLINE, d + 1)
        self.w("pos += 1", d)


def _leaf(sp: k.StructPlan) -> bool:
    """A struct whose walk calls no other (its steps can stand in its caller's loop: the loop's count ``n_`` is
    taken before the loop, so the steps' own ``n_`` does not disturb it)."""
    return not any(isinstance(x, (k.Call, k.Switch, k.Cond)) or (isinstance(x, k.Array) and x.elem) for x in sp.steps)


def walks(ir: n.FormatIR) -> str | None:
    """The module code of the format's walk and ``check_from``; None: the format has none."""
    plans = k.plan(ir)
    if plans is None:
        return None
    by_name = {p.name: p for p in plans}
    try:
        code = [_Walk(by_name, sp).emit() for sp in plans]
    except k.NoCheck:
        return None
    params = by_name[ir.root].params
    sig = "".join(f", {p}" for p in params)
    code.append(f'''def check_from(buf, pos, end, opts{sig}):
    """Where the {ir.root} at ``pos`` ends when it is in the plain form every decoder reads without a question
    (generator.ir.walk), or -1: decode it to know."""
    if type(buf) is not bytes:
        return -1
    try:
        return _check_{ir.root}(buf, pos, end, opts{sig})
    except _Decline:
        return -1
''')
    return "\n\n".join(code)
