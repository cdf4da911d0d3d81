"""``entry()`` of a legacy message format, and ``Msg``, a decoded message kept until its offset is known: the
rows of a wrapper's inner messages (their offsets and timestamps as Kafka reads them), else of the message itself.
A message's headers were checked when it was decoded and are put out, from where they lie, with its row."""

from __future__ import annotations

import re

from generator.backends.jvm.base import Lowering, Unsupported, jstr
from generator.ir import nodes as n


def header_arrays(g: Lowering) -> list[n.Field]:
    """The root message's arrays of headers (their elements are rows' headers)."""
    return [f for f in g.root.fields if isinstance(f.wire, n.ArrayType) and g.roles.get(f.wire.elem) == "header"]


def msg_class(g: Lowering) -> str:
    """``Msg``: one decoded legacy message (its fields), kept until the wrapper's offsets are known."""
    lines = ["    static final class Msg {"]
    for f in g.root.fields:
        if isinstance(f.wire, n.Blob):
            lines.append(f"        byte[] {f.name}_b; int {f.name}_p; int {f.name}_n;")
        elif isinstance(f.wire, n.ArrayType):
            if f in header_arrays(g):
                lines.append(f"        byte[] {f.name}_b; int {f.name}_p; int {f.name}_e;")
        else:
            lines.append(f"        long v_{f.name};")
        lines += [f"        long v_{b.name};" for b in f.bits]
    lines.append("    }")
    lines.append("    private Msg[] inner = new Msg[16];")
    lines.append("    private final Msg top = new Msg();")
    return "\n".join(lines) + "\n"


class MessageEntry:
    """``entry()`` of a legacy message format: the message, then a wrapper's inner messages as the rows (their
    offsets and timestamps as Kafka reads them), else the message itself."""

    def __init__(self, g: Lowering):
        self.g = g
        self.st = g.root
        self.w = g.root.wrappers[0] if g.root.wrappers else None

    def emit(self) -> str:
        st, w = self.st, self.w
        fields = {f.name for f in st.fields} | {b.name for f in st.fields for b in f.bits}
        for need in ("offset", "key", "value", "magic"):
            if need not in fields:
                raise Unsupported(f"a message without {need}")
        ts = "m.v_timestamp" if "timestamp" in fields else "-1L"
        lines = [
            "    public int entry(Ctx cx, byte[] b, int pos, int end) throws Bad {",
            "        cx.batch.reset();",
            "        Msg m = top;",
            f"        int next = d_{st.name}(cx, b, pos, end, m);",
            "        kfmt.jvm.Batch bt = cx.batch;",
            "        bt.magic = (int) m.v_magic;",
            "        bt.lastOffset = m.v_offset;",
            f"        bt.maxTimestamp = {ts};",
        ]
        if "codec" in fields:
            lines.append("        bt.codec = (int) m.v_codec;")
        if "timestamp_type" in fields:
            lines.append("        bt.timestampType = (int) m.v_timestamp_type;")
        if w is None:
            return "\n".join(lines + self._own(ts) + ["    }", ""] + self._headers())
        cond = self._on_msg(self.g.bool_expr(w.condition, st.name))
        lines.append(f"        if (!{cond}) {{")
        lines += ["    " + x for x in self._own(ts)]
        lines.append("        }")
        lines += self._inner(ts)
        return "\n".join(lines + ["    }", ""] + self._headers())

    def _headers(self) -> list[str]:
        """``headers(cx, m)``: the headers of message ``m`` to the sink, before its row."""
        out = ["    private void headers(Ctx cx, Msg m) throws Bad {"]
        for f in header_arrays(self.g):
            assert isinstance(f.wire, n.ArrayType)
            nm, elem = f.name, f.wire.elem
            out.append(f"        for (int p = m.{nm}_p; p < m.{nm}_e; ) p = d_{elem}(cx, m.{nm}_b, p, m.{nm}_e, true);")
        return out + ["    }", ""]

    def _on_msg(self, expr: str) -> str:
        """An expression over the struct's locals, read from the Msg ``m`` instead."""
        return re.sub(r"\bv_(\w+)", r"m.v_\1", expr)

    def _own(self, ts: str) -> list[str]:
        return [
            "        bt.baseOffset = m.v_offset;",
            f"        bt.baseTimestamp = {ts};",
            "        headers(cx, m);",
            f"        cx.rows.record(m.v_offset, {ts}, m.key_b, m.key_p, m.key_n, m.value_b, m.value_p, m.value_n);",
            "        return next;",
        ]

    def _inner(self, ts: str) -> list[str]:
        w, name = self.w, self.st.name
        assert w is not None
        src = w.source
        path = jstr(f"{name}.{src}")
        inner = jstr(f"{name}.{src}.{w.into}")  # an inner message's errors: located as the python backend locates them
        if w.offsets == "relative_to_last":
            base = [
                "        long last = inner[k - 1].v_offset, base;",
                "        if (m.v_offset == 0) base = 0; // some producers write wrapper offset 0: inner offsets as they are",
                f'        else if (m.v_offset < last) throw cx.bad({path}, Bad.NOWHERE, "invalid wrapper offset " + m.v_offset + '
                '" in compressed v1 message set (last inner offset " + last + ")");',
                "        else base = m.v_offset - last;",
            ]  # fmt: skip
        elif w.offsets == "absolute":
            base = ["        long base = 0;"]
        elif w.offsets == "relative_to_first":
            base = [
                "        long base = m.v_offset;",
                "        for (int i = 0; i < k; i++) if ((inner[i].v_offset > 0 && base > Long.MAX_VALUE - inner[i].v_offset)"
                " || (inner[i].v_offset < 0 && base < Long.MIN_VALUE - inner[i].v_offset))",
                f'            throw cx.bad({path}, Bad.NOWHERE, "inner offset " + inner[i].v_offset + " past the wrapper\'s " + base + '
                '" overflows int64");',
            ]  # fmt: skip
        else:
            raise Unsupported(f"inner offsets {w.offsets}")
        when = self._on_msg(self.g.bool_expr(w.timestamps_when, name)) if w.timestamps_when is not None else "false"
        its = f"m.v_{w.timestamps_from}" if w.timestamps_from else "-1L"
        inner_ts = "x.v_timestamp" if ts != "-1L" else "-1L"
        return [
            f'        if (m.{src}_n < 0) throw cx.bad({path}, Bad.NOWHERE, "found a compressed message set with a null value");',
            "        try {",
            f"            cx.codecs.decompress((int) m.v_{w.codec.name}, {self.g.f.magic}, m.{src}_b, m.{src}_p, m.{src}_n, {path});",
            "        } catch (Bad e_) {",
            "            throw new Bad(e_.path, Bad.NOWHERE, e_.getMessage()); // (a wrapper's value: located by its path)",
            "        }",
            f"        String codec_ = kfmt.jvm.Codecs.name((int) m.v_{w.codec.name});",
            "        byte[] d = cx.codecs.out;",
            "        int dp = 0, de = cx.codecs.size, k = 0;",
            "        while (de - dp >= 12) {",
            "            long sz = Ctx.i32(d, dp + 8);",
            "            if (sz >= 0 && dp + 12 + sz > de) break; // Kafka drops a truncated inner tail",
            f'            if (k >= cx.maxRecords) throw cx.bad({path}, Bad.NOWHERE, "more than " + cx.maxRecords + " inner messages");',
            "            if (k == inner.length) inner = java.util.Arrays.copyOf(inner, k * 2);",
            "            if (inner[k] == null) inner[k] = new Msg();",
            "            try {",
            f"                dp = d_{name}(cx, d, dp, de, inner[k]);",
            "            } catch (Bad e_) {",
            f"                throw e_.within({inner}, k, {jstr(name)}).inStream(codec_, Bad.NOWHERE);",
            "            }",
            f"            if ({self._on_msg(self.g.bool_expr(w.condition, name)).replace('m.v_', 'inner[k].v_')}) throw cx.bad("
            f'{inner} + "[" + k + "].{src}", Bad.NOWHERE, "inner messages must not be compressed (nesting deeper than 1)");',
            "            k++;",
            "        }",
            f'        if (k == 0) throw cx.bad({path}, Bad.NOWHERE, "found a compressed message set with no inner records");',
            *base,
            f"        boolean restamp = {when};",
            "        for (int i = 0; i < k; i++) {",
            "            Msg x = inner[i];",
            f"            long t = restamp ? {its} : {inner_ts};",
            "            if (i == 0) { bt.baseOffset = x.v_offset + base; bt.baseTimestamp = t; }",
            "            headers(cx, x);",
            "            cx.rows.record(x.v_offset + base, t, x.key_b, x.key_p, x.key_n, x.value_b, x.value_p, x.value_n);",
            "        }",
            "        return next;",
        ]  # fmt: skip
