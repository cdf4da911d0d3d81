"""The check walk (:mod:`generator.ir.walk`) in C: one ``k_<struct>`` per struct, answering the position after
it, or -1 (declined: the body is decoded at once). No object is made. Where the context carries a sink
(``cx->facts``: kfmt_native.h's kf_facts), the walk tells it the facts as it passes them (error codes, record sets,
and the strings, uuids and array elements the sink asks for by id)."""

from __future__ import annotations

import generator.ir.nodes as n
import generator.ir.walk as k
from generator.backends.native.clower import _LOAD, Lowering

DECLINE = "return -1;"


class _Walk:
    def __init__(self, low: Lowering, sp: k.StructPlan):
        self.low = low
        self.sp = sp
        self.st = low.by_name[sp.name]
        self.lines: list[str] = []

    def w(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def emit(self) -> str:
        self.steps(self.sp.steps, 1)
        body = "\n".join(self.lines)
        return f"{signature(self.low, self.sp)} {{\n    (void)cx;\n{body}\n    return pos;\n}}\n"

    def steps(self, steps: tuple, d: int) -> None:
        for s in steps:
            getattr(self, type(s).__name__.lower())(s, d)

    def expr(self, e: n.Expr) -> str:
        return self.low.expr(e, self.st)

    def requires(self, s: k.Requires, d: int) -> None:
        self.w(f"if (!{self.expr(s.expr)}) {DECLINE}", d)

    def cond(self, s: k.Cond, d: int) -> None:
        self.w(f"if ({self.expr(s.expr)}) {{", d)
        self.steps(s.steps, d + 1)
        self.w("}", d)

    def skip(self, s: k.Skip, d: int) -> None:
        self.w(f"if (end - pos < {s.width}) {DECLINE}", d)
        if s.facts:
            told = " ".join(f"kf_fact_code(cx->facts, b + pos + {o});" if kind == "code" else
                            f"kf_fact_want(cx->facts, {i}, pos + {o}, 16);" for o, kind, i, _ in s.facts)  # fmt: skip
            self.w(f"if (cx->facts) {{ {told} }}", d)
        self.w(f"pos += {s.width};", d)

    def varintskip(self, s: k.VarintSkip, d: int) -> None:
        self.w(f"{{ uint64_t u_; if (kf_uvarint(b, &pos, end, {s.max_bytes}, &u_)) {DECLINE} }}", d)

    def prefix(self, wire: n.Int | n.Varint | n.Rest, d: int) -> None:
        """A length or count into ``n_`` (Kafka's compact form: N + 1 on the wire, 0 for null)."""
        if isinstance(wire, n.Rest):
            self.w(f"n_ = end - pos - {wire.trailer};", d)
        elif isinstance(wire, n.Varint):
            self.w(f"{{ uint64_t u_; if (kf_uvarint(b, &pos, end, {wire.max_bytes}, &u_)) {DECLINE}", d)
            self.w(f"n_ = (int64_t)u_{' - 1' if wire.compact else ''}; }}", d + 1)
        else:
            self.w(f"if (end - pos < {wire.width}) {DECLINE}", d)
            self.w(f"n_ = {_LOAD[(wire.width, wire.signed)]}(b + pos);", d)
            self.w(f"pos += {wire.width};", d)

    def bytes(self, s: k.Bytes, d: int) -> None:
        self.w("{", d)
        self.w("int64_t n_;", d + 1)
        self.prefix(s.length, d + 1)
        nullable = s.nullable and not isinstance(s.length, n.Rest)
        null = f"if (cx->facts) kf_fact_want(cx->facts, {s.fact}, pos, -1);" if s.fact is not None else ""
        self.w(f"if (n_ < 0) {{ {null if nullable else DECLINE} }} else {{", d + 1)
        limit = f" || n_ > {s.max}" if s.max is not None else ""
        self.w(f"if (n_ > cx->max_bytes || n_ > end - pos{limit}) {DECLINE}", d + 2)
        if s.text:
            self.w(f"if (!kf_ascii(b + pos, n_)) {DECLINE}", d + 2)
        if s.fact is not None or s.records:
            told = (
                f"kf_fact_want(cx->facts, {s.fact}, pos, n_)"
                if s.fact is not None
                else "kf_fact_records(cx->facts, pos, n_)"
            )
            self.w(f"if (cx->facts) {told};", d + 2)
        self.w("pos += n_;", d + 2)
        self.w("}", d + 1)
        self.w("}", d)

    def array(self, s: k.Array, d: int) -> None:
        self.w("{", d)
        self.w("int64_t n_;", d + 1)
        self.prefix(s.count, d + 1)
        self.w(f"if (n_ < 0) {{ {'' if s.nullable else DECLINE} }} else {{", d + 1)
        self.w(f"if (n_ > cx->{s.limit} || n_ * {s.min_elem} > end - pos) {DECLINE}", d + 2)
        if s.width is not None:
            self.w(f"pos += n_ * {s.width};", d + 2)
        else:
            assert s.elem is not None
            self.w("for (int64_t i_ = 0; i_ < n_; i_++) {", d + 2)
            if s.fact is not None:
                self.w(f"if (cx->facts) kf_fact_want(cx->facts, {s.fact}, pos, 0);", d + 3)
            self.call_struct(s.elem, d + 3)
            self.w("}", d + 2)
        self.w("}", d + 1)
        self.w("}", d)

    def call_struct(self, struct: str, d: int) -> None:
        self.w(f"pos = k_{struct}(cx, b, pos, end{self.low.args(struct, self.st)});", d)
        self.w(f"if (pos < 0) {DECLINE}", d)

    def call(self, s: k.Call, d: int) -> None:
        if s.marker is None:
            self.call_struct(s.struct, d)
            return
        self.w("{", d)
        if isinstance(s.marker, n.Varint):
            self.w(f"uint64_t m_; if (kf_uvarint(b, &pos, end, {s.marker.max_bytes}, &m_)) {DECLINE}", d + 1)
            null = 0
        else:
            self.w(f"if (pos >= end) {DECLINE}", d + 1)
            self.w("uint8_t m_ = b[pos++];", d + 1)
            null = 255
        self.w("if (m_ == 1) {", d + 1)
        self.call_struct(s.struct, d + 2)
        self.w(f"}} else if (m_ != {null}) {DECLINE}", d + 1)
        self.w("}", d)

    def switch(self, s: k.Switch, d: int) -> None:
        self.w(f"switch (a_{s.selector}) {{", d)
        for values, struct in s.cases:
            self.w(" ".join(f"case {v}:" for v in values), d)
            self.call_struct(struct, d + 1)
            self.w("break;", d + 1)
        self.w(f"default: {DECLINE}", d)
        self.w("}", d)

    def notags(self, s: k.NoTags, d: int) -> None:
        self.w(f"if (pos >= end || b[pos] != 0) {DECLINE}", d)
        self.w("pos++;", d)


def signature(low: Lowering, sp: k.StructPlan) -> str:
    params = "".join(f", {low.param_decl(p)}" for p in low.by_name[sp.name].params)
    return f"static Py_ssize_t k_{sp.name}(kf_ctx *cx, const uint8_t *b, Py_ssize_t pos, Py_ssize_t end{params})"


def walks(low: Lowering, plans: list[k.StructPlan] | None) -> list[tuple[str, str]] | None:
    """Each struct's walk (``plans``: generator.ir.walk.plan's) as (declaration, definition), dependencies first;
    None: the format has none."""
    if plans is None:
        return None
    return [(signature(low, sp) + ";", _Walk(low, sp).emit()) for sp in plans]
