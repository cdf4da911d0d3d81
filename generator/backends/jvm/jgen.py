"""Lowering of the typed IR to Java: one decoding method per struct, straight-line code over a ``byte[]``.

Every value is a Java ``long`` (integers, bit views, flags as 0/1), every blob three locals (array, position,
length; -1 for null). A struct that is not clean raises :class:`kfmt.jvm.Bad` with its field path, as the
python backend raises a CodecError. Records go to ``cx.rows`` (the sink), batch-level values to ``cx.batch``.
"""

from __future__ import annotations

from generator.ir import nodes as n

# kfmt.runtime.model.Batch's attributes the columns read, as fields of kfmt.jvm.Batch (name, Java type)
BATCH_FIELDS = {
    "magic": ("magic", "int"),
    "codec": ("codec", "int"),
    "base_offset": ("baseOffset", "long"),
    "last_offset": ("lastOffset", "long"),
    "producer_id": ("producerId", "long"),
    "producer_epoch": ("producerEpoch", "int"),
    "base_sequence": ("baseSequence", "int"),
    "is_transactional": ("isTransactional", "boolean"),
    "is_control": ("isControl", "boolean"),
    "has_delete_horizon": ("hasDeleteHorizon", "boolean"),
    "partition_leader_epoch": ("partitionLeaderEpoch", "int"),
    "timestamp_type": ("timestampType", "int"),
    "base_timestamp": ("baseTimestamp", "long"),
    "max_timestamp": ("maxTimestamp", "long"),
}
_READ = {(1, True): "i8", (1, False): "u8", (2, True): "i16", (2, False): "u16", (4, True): "i32",
         (4, False): "u32", (8, True): "i64"}  # fmt: skip


class Unsupported(Exception):
    """A language feature this backend does not lower (the format then has no Java decoder)."""


def class_name(fmt_id: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in fmt_id.split("_"))


def jstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class JavaGen:
    """The Java source of one format's decoder."""

    def __init__(self, f: n.FormatIR, package: str):
        self.f = f
        self.package = package
        self.by_name = {s.name: s for s in f.structs}
        self.root = self.by_name[f.root]
        self.enums = {e.name: e for e in f.enums}
        if self.root.role not in ("batch", "message") or f.magic is None:
            raise Unsupported(f"a root of role {self.root.role} (log entries are batches or messages)")
        self.roles = self._roles()

    def _roles(self) -> dict[str, str]:
        """The struct of each row-making role: ``record`` and ``header`` under a batch, ``message`` at the root."""
        if self.root.role == "message":
            if len(self.root.wrappers) > 1:
                raise Unsupported("more than one wrapper")
            return {self.root.name: "message"}
        arr = [f.wire for f in self.root.fields if isinstance(f.wire, n.ArrayType)]
        if len(arr) != 1:
            raise Unsupported("a batch without exactly one array of records")
        roles = {arr[0].elem: "record"}
        rec = self.by_name[arr[0].elem]
        heads = [f.wire for f in rec.fields if isinstance(f.wire, n.ArrayType)]
        if len(heads) > 1 or (heads and [f.name for f in rec.fields if isinstance(f.wire, n.ArrayType)] != ["headers"]):
            raise Unsupported("records with arrays other than their headers")
        if heads:
            roles[heads[0].elem] = "header"
        return roles

    def emit(self) -> str:
        cls = class_name(self.f.id)
        methods = [StructGen(self, st).emit() for st in self.f.structs if self._decoded(st)]
        msg = self._msg_class() if self.root.role == "message" else ""
        entry = MessageEntry(self).emit() if self.root.role == "message" else self._batch_entry()
        return "\n".join([
            f"package {self.package};",
            "",
            "import kfmt.jvm.Bad;",
            "import kfmt.jvm.Ctx;",
            "",
            f"/** {_doc(self.f.doc)} */",
            f"public final class {cls} implements kfmt.jvm.Decoder {{",
            f"    public String id() {{ return {jstr(self.f.id)}; }}",
            f"    public int magic() {{ return {self.f.magic}; }}",
            f"    public boolean autoDetect() {{ return {'true' if self.f.auto_detect else 'false'}; }}",
            "",
            msg,
            entry,
            *methods,
            "}",
            "",
        ])  # fmt: skip

    def _decoded(self, st: n.Struct) -> bool:
        views = {v.struct for s in self.f.structs for v in s.views}
        return st.name in self.roles or st is self.root or st.name in views

    def _batch_entry(self) -> str:
        return (
            "    public int entry(Ctx cx, byte[] b, int pos, int end) throws Bad {\n"
            "        cx.batch.reset();\n"
            f"        return d_{self.root.name}(cx, b, pos, end);\n"
            "    }\n"
        )

    def _msg_class(self) -> str:
        """``Msg``: one decoded legacy message (its fields), kept until the wrapper's offsets are known."""
        lines = ["    static final class Msg {"]
        for f in self.root.fields:
            if isinstance(f.wire, n.Blob):
                lines.append(f"        byte[] {f.name}_b; int {f.name}_p; int {f.name}_n;")
            else:
                lines.append(f"        long v_{f.name};")
            lines += [f"        long v_{b.name};" for b in f.bits]
        lines.append("    }")
        lines.append("    private Msg[] inner = new Msg[16];")
        lines.append("    private final Msg top = new Msg();")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ expressions
    def long_expr(self, e: n.Expr, here: str) -> str:
        if isinstance(e, n.Const):
            if isinstance(e.value, bool):
                return "1L" if e.value else "0L"
            if isinstance(e.value, int):
                return f"{e.value}L"
            raise Unsupported(f"the constant {e.value!r}")
        if isinstance(e, n.EnumConst):
            return f"{e.value}L"
        if isinstance(e, n.Ref):
            return f"v_{e.name}" if e.owner == here else f"a_{e.name}"
        if isinstance(e, n.Arith):
            op = "+" if e.op == "add" else "-"
            return f"({self.long_expr(e.left, here)} {op} {self.long_expr(e.right, here)})"  # Java longs wrap
        if isinstance(e, n.Choose):
            return f"({self.bool_expr(e.cond, here)} ? {self.long_expr(e.then, here)} : {self.long_expr(e.otherwise, here)})"
        if isinstance(e, (n.Compare, n.Truthy, n.All)):
            return f"({self.bool_expr(e, here)} ? 1L : 0L)"
        raise Unsupported(f"the expression {type(e).__name__}")

    def bool_expr(self, e: n.Expr, here: str) -> str:
        if isinstance(e, n.Compare):
            op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[e.op]
            return f"({self.long_expr(e.left, here)} {op} {self.long_expr(e.right, here)})"
        if isinstance(e, n.Truthy):
            return f"({self.long_expr(e.operand, here)} != 0)"
        if isinstance(e, n.All):
            return "(" + " && ".join(self.bool_expr(x, here) for x in e.operands) + ")"
        return f"({self.long_expr(e, here)} != 0)"


def _doc(text: str) -> str:
    return " ".join(str(text).replace("*/", "* /").split())


class StructGen:
    """One ``d_<struct>`` method. Its end of region is ``end`` until a length field opens a tighter one."""

    def __init__(self, g: JavaGen, st: n.Struct):
        self.g, self.st = g, st
        self.role = g.roles.get(st.name, "root" if st is g.root else "view")
        self.out: list[str] = []
        self.end = "end"
        self.region_after: dict[str, str] = {}  # a length field -> the name of its region's end
        self.starts: set[str] = {c.start for f in st.fields for c in [f.derived] if isinstance(c, n.Checksum)}

    def say(self, line: str) -> None:
        self.out.append("        " + line)

    def path(self, field: str) -> str:
        return jstr(f"{self.st.name}.{field}")

    def signature(self) -> str:
        params = "".join(f", long a_{p.name}" for p in self.st.params)
        extra = ", Msg m" if self.role == "message" else ""
        return f"    int d_{self.st.name}(Ctx cx, byte[] b, int pos, int end{params}{extra}) throws Bad {{"

    def emit(self) -> str:
        st = self.st
        if st.requires is not None:
            raise Unsupported("a struct with 'requires'")
        fields = list(st.fields)
        i = 0
        while i < len(fields):
            run = self._fixed_run(fields, i)
            if run:
                self._fixed(run)
                i += len(run)
                continue
            self._field(fields[i])
            i += 1
        if self.end != "end":
            self.say(f'if (pos != {self.end}) throw cx.bad({self.path(st.fields[0].name)}, pos, "the length field '
                     f'declares " + ({self.end} - pos) + " more bytes than the fields hold");')  # fmt: skip
        for v in st.views:
            self._view(v)
        for f in st.fields:
            if isinstance(f.derived, n.DeltaOf):
                self.say(f"long v_{f.derived.logical} = {self.g.long_expr(f.derived.decoded, st.name)};")
        for lg in st.logical:
            self.say(f"long v_{lg.name} = {self.g.long_expr(lg.value, st.name)};")
        self._finish()
        self.say("return pos;")
        return "\n".join([self.signature(), *self.out, "    }", ""])

    # ------------------------------------------------------------------ fixed-width runs
    def _fixed_run(self, fields, i) -> list[n.Field]:
        run = []
        for f in fields[i:]:
            if not isinstance(f.wire, n.Int) or f.condition is not None:
                break
            run.append(f)
            if isinstance(f.derived, n.LengthOf):
                break  # the region it opens starts after it
        return run

    def _fixed(self, run: list[n.Field]) -> None:
        wires = [f.wire for f in run if isinstance(f.wire, n.Int)]
        size = sum(w.width for w in wires)
        self.say(f"if ({self.end} - pos < {size}) throw cx.bad({self.path(run[0].name)}, pos, "
                 f'"needs {size} bytes, " + ({self.end} - pos) + " left");')  # fmt: skip
        at = 0
        for f, w in zip(run, wires):
            if w.kind != "int":
                raise Unsupported(f"an {w.kind} field")
            if f.name in self.starts:
                self.say(f"int p_{f.name} = pos + {at};")
            self.say(f"long v_{f.name} = Ctx.{_READ[(w.width, w.signed)]}(b, pos + {at});")
            at += w.width
        self.say(f"pos += {size};")
        for f in run:
            self._after_scalar(f)

    def _after_scalar(self, f: n.Field) -> None:
        if f.const is not None:
            self.say(f"if (v_{f.name} != {f.const}L) throw cx.bad({self.path(f.name)}, pos, "
                     f'"is " + v_{f.name} + ", not {f.const}");')  # fmt: skip
        for bv in f.bits:
            self.say(f"long v_{bv.name} = (v_{f.name} & {bv.mask}L) >>> {bv.shift};")
            if bv.kind == "flag":
                self.say(f"v_{bv.name} = v_{bv.name} != 0 ? 1L : 0L;")
            if bv.const is not None:
                self.say(f"if (v_{bv.name} != {bv.const}L) throw cx.bad({self.path(bv.name)}, pos, "
                         f'"is " + v_{bv.name} + ", not {bv.const}");')  # fmt: skip
            if bv.enum:
                ids = " && ".join(f"v_{bv.name} != {k}L" for k, _ in self.g.enums[bv.enum].values)
                what = "unsupported compression codec id " if bv.selects_codec else f"unknown {bv.enum} "
                self.say(f'if ({ids}) throw cx.bad({self.path(bv.name)}, pos, "{what}" + v_{bv.name});')
        d = f.derived
        if isinstance(d, n.LengthOf):
            e = f"e_{f.name}"
            self.say(f"int {e} = pos + (int) v_{f.name};")
            self.say(f"if (v_{f.name} < 0 || v_{f.name} > {self.end} - pos) throw cx.past({self.path(f.name)}, pos, "
                     f"v_{f.name}, {self.end});")  # fmt: skip
            self.end = e
        if isinstance(d, n.Checksum):
            if d.trailing or d.end is not None:
                raise Unsupported("a trailing or bounded checksum")
            algo = d.algo
            self.say(f"if (cx.verifyCrc && cx.{algo}(b, p_{d.start}, {self.end}) != v_{f.name}) throw cx.bad("
                     f'{self.path(f.name)}, pos, "{algo.upper()} mismatch: stored " + v_{f.name} + ", computed " '
                     f"+ cx.{algo}(b, p_{d.start}, {self.end}));")  # fmt: skip

    # ------------------------------------------------------------------ other fields
    def _field(self, f: n.Field) -> None:
        if f.condition is not None:
            raise Unsupported("a conditional field")
        w = f.wire
        if f.name in self.starts:
            self.say(f"int p_{f.name} = pos;")
        if isinstance(w, n.Varint):
            self._varint(f"v_{f.name}", w, f.name)
            self._after_scalar(f)
        elif isinstance(w, n.Blob):
            self._blob(f, w)
        elif isinstance(w, n.ArrayType):
            self._array(f, w)
        else:
            raise Unsupported(f"a {type(w).__name__} field")

    def _varint(self, var: str, w: n.Varint, name: str) -> None:
        if w.compact:
            raise Unsupported("a compact varint")
        conv = ("Ctx.zigzag32" if w.bits == 32 else "Ctx.zigzag64") if w.zigzag else ""
        self.say(f"long {var} = {conv}(cx.uvarint(b, pos, {self.end}, {w.max_bytes}, {self.path(name)}));")
        self.say("pos = cx.p;")

    def _length(self, f: n.Field, x: n.Extent) -> None:
        if isinstance(x, n.Varint):
            self._varint(f"n_{f.name}", x, f.name)
        elif isinstance(x, n.Int) and x.kind == "int":
            self.say(f"if ({self.end} - pos < {x.width}) throw cx.bad({self.path(f.name)}, pos, "
                     f'"needs {x.width} bytes, " + ({self.end} - pos) + " left");')  # fmt: skip
            self.say(f"long n_{f.name} = Ctx.{_READ[(x.width, x.signed)]}(b, pos);")
            self.say(f"pos += {x.width};")
        else:
            raise Unsupported(f"a length given by {type(x).__name__}")

    def _blob(self, f: n.Field, w: n.Blob) -> None:
        self._length(f, w.length)
        nm = f.name
        self.say(f"byte[] {nm}_b = b; int {nm}_p = pos; int {nm}_n;")
        if w.nullable:
            self.say(f"if (n_{nm} < 0) {nm}_n = -1; else {{")
        else:
            self.say(f'if (n_{nm} < 0) throw cx.bad({self.path(nm)}, pos, "negative length " + n_{nm}); else {{')
        cap = f"Math.min(cx.maxBytes, {w.max})" if w.max is not None else "cx.maxBytes"
        self.say(
            f'    if (n_{nm} > {cap}) throw cx.bad({self.path(nm)}, pos, "length " + n_{nm} + " exceeds the limit");'
        )
        self.say(f"    if (n_{nm} > {self.end} - pos) throw cx.past({self.path(nm)}, pos, n_{nm}, {self.end});")
        self.say(f"    {nm}_n = (int) n_{nm}; pos += {nm}_n;")
        self.say("}")

    def _array(self, f: n.Field, w: n.ArrayType) -> None:
        if w.size is not None or w.nullable:
            raise Unsupported("a sized or nullable array")
        role = self.g.roles.get(w.elem)
        if role is None:
            raise Unsupported(f"an array of {w.elem} in a {self.st.role}")
        if f is not self.st.fields[-1]:  # its elements run to the end of the region (checked below)
            raise Unsupported("an array followed by other fields")
        nm = f.name
        if isinstance(w.count, n.CountFrom):
            self.say(f"long n_{nm} = {self.g.long_expr(w.count.field, self.st.name)};")
        elif isinstance(w.count, n.Varint):
            self._varint(f"n_{nm}", w.count, nm)
        else:
            raise Unsupported(f"an array counted by {type(w.count).__name__}")
        limit = "cx.maxRecords" if w.limit == "max_records" else "cx.maxHeaders"
        self.say(
            f'if (n_{nm} < 0 || n_{nm} > {limit}) throw cx.bad({self.path(nm)}, pos, "count " + n_{nm} + " is out of range");'
        )
        whole = self.end != "end" and isinstance(w.count, n.CountFrom)
        if whole:  # as Kafka: the payload of a batch of no records is not read
            self.say(f"if (n_{nm} == 0) pos = {self.end}; else {{")
        self.say(f"byte[] d_{nm} = b; int dp_{nm} = pos, de_{nm} = {self.end};")
        if w.compressed_by is not None:
            codec = self.g.long_expr(w.compressed_by, self.st.name)
            self.say(f"if ({codec} != 0) {{")
            self.say(
                f"    cx.codecs.decompress((int) {codec}, {self.g.f.magic}, b, pos, {self.end} - pos, {self.path(nm)});"
            )
            self.say(f"    d_{nm} = cx.codecs.out; dp_{nm} = 0; de_{nm} = cx.codecs.size;")
            self.say("}")
        self.say(f"if (n_{nm} * {w.min_elem_size} > de_{nm} - dp_{nm}) throw cx.bad({self.path(nm)}, pos, "
                 f'"count " + n_{nm} + " needs at least " + n_{nm} * {w.min_elem_size} + " bytes, " + (de_{nm} - dp_{nm}) + " left");')  # fmt: skip
        args = "".join(f", {self.g.long_expr(p, self.st.name)}" for p in self.g.by_name[w.elem].params)
        self.say(f"for (long i_ = 0; i_ < n_{nm}; i_++) dp_{nm} = d_{w.elem}(cx, d_{nm}, dp_{nm}, de_{nm}{args});")
        self.say(f"if (dp_{nm} != de_{nm}) throw cx.bad({self.path(nm)}, dp_{nm}, (de_{nm} - dp_{nm}) + "
                 '" bytes after the last element");')  # fmt: skip
        self.say(f"pos = d_{nm} == b ? dp_{nm} : {self.end};")
        if whole:
            self.say("}")

    def _view(self, v: n.View) -> None:
        st = self.g.by_name[v.struct]
        if v.keep_raw:
            return  # a parse that fails is kept as it is: nothing to check
        if st.fixed_size is None:
            raise Unsupported("a view of a struct that is not fixed-size")
        cond = self.g.bool_expr(v.condition, self.st.name) if v.condition is not None else "true"
        self.say(f"if ({cond} && {v.source}_n < {st.fixed_size}) throw cx.bad({self.path(v.name)}, pos, "
                 f'"{v.source} must hold a {v.struct} of at least {st.fixed_size} bytes");')  # fmt: skip

    # ------------------------------------------------------------------ what the struct gives
    def _finish(self) -> None:
        role, st = self.role, self.st
        names = self._names()
        if role == "header":
            self.say("cx.rows.header(key_b, key_p, key_n, value_b, value_p, value_n);")
        elif role == "record":
            ts = "v_timestamp" if "timestamp" in names else "-1L"
            self.say(f"cx.rows.record(v_offset, {ts}, key_b, key_p, key_n, value_b, value_p, value_n);")
        elif role == "root":
            for name, (jname, jtype) in BATCH_FIELDS.items():
                if name in names:
                    val = {"int": f"(int) v_{name}", "boolean": f"v_{name} != 0", "long": f"v_{name}"}[jtype]
                    self.say(f"cx.batch.{jname} = {val};")
        elif role == "message":
            for f in st.fields:
                if isinstance(f.wire, n.Blob):
                    self.say(f"m.{f.name}_b = {f.name}_b; m.{f.name}_p = {f.name}_p; m.{f.name}_n = {f.name}_n;")
                else:
                    self.say(f"m.v_{f.name} = v_{f.name};")
                for bv in f.bits:
                    self.say(f"m.v_{bv.name} = v_{bv.name};")

    def _names(self) -> set[str]:
        st = self.st
        out = {f.name for f in st.fields} | {b.name for f in st.fields for b in f.bits}
        out |= {f.derived.logical for f in st.fields if isinstance(f.derived, n.DeltaOf)}
        return out | {lg.name for lg in st.logical}


class MessageEntry:
    """``entry()`` of a legacy message format: the message, then a wrapper's inner messages as the rows (their
    offsets and timestamps as Kafka reads them), else the message itself."""

    def __init__(self, g: JavaGen):
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
            return "\n".join(lines + self._own(ts) + ["    }", ""])
        cond = self._on_msg(self.g.bool_expr(w.condition, st.name))
        lines.append(f"        if (!{cond}) {{")
        lines += ["    " + x for x in self._own(ts)]
        lines.append("        }")
        lines += self._inner(ts)
        return "\n".join(lines + ["    }", ""])

    def _on_msg(self, expr: str) -> str:
        """An expression over the struct's locals, read from the Msg ``m`` instead."""
        import re

        return re.sub(r"\bv_(\w+)", r"m.v_\1", expr)

    def _own(self, ts: str) -> list[str]:
        return [
            "        bt.baseOffset = m.v_offset;",
            f"        bt.baseTimestamp = {ts};",
            f"        cx.rows.record(m.v_offset, {ts}, m.key_b, m.key_p, m.key_n, m.value_b, m.value_p, m.value_n);",
            "        return next;",
        ]

    def _inner(self, ts: str) -> list[str]:
        w, name = self.w, self.st.name
        assert w is not None
        src = w.source
        path = jstr(f"{name}.{src}")
        if w.offsets == "relative_to_last":
            base = [
                "        long last = inner[k - 1].v_offset, base;",
                "        if (m.v_offset == 0) base = 0; // some producers write wrapper offset 0: inner offsets as they are",
                f'        else if (m.v_offset < last) throw cx.bad({path}, pos, "invalid wrapper offset " + m.v_offset + '
                '" in compressed v1 message set (last inner offset " + last + ")");',
                "        else base = m.v_offset - last;",
            ]  # fmt: skip
        elif w.offsets == "absolute":
            base = ["        long base = 0;"]
        else:
            raise Unsupported(f"inner offsets {w.offsets}")
        when = self._on_msg(self.g.bool_expr(w.timestamps_when, name)) if w.timestamps_when is not None else "false"
        its = f"m.v_{w.timestamps_from}" if w.timestamps_from else "-1L"
        inner_ts = "x.v_timestamp" if ts != "-1L" else "-1L"
        return [
            f'        if (m.{src}_n < 0) throw cx.bad({path}, pos, "found a compressed message set with a null value");',
            f"        cx.codecs.decompress((int) m.v_{w.codec.name}, {self.g.f.magic}, m.{src}_b, m.{src}_p, m.{src}_n, {path});",
            "        byte[] d = cx.codecs.out;",
            "        int dp = 0, de = cx.codecs.size, k = 0;",
            "        while (de - dp >= 12) {",
            "            long sz = Ctx.i32(d, dp + 8);",
            "            if (sz >= 0 && dp + 12 + sz > de) break; // Kafka drops a truncated inner tail",
            f'            if (k >= cx.maxRecords) throw cx.bad({path}, pos, "more than " + cx.maxRecords + " inner messages");',
            "            if (k == inner.length) inner = java.util.Arrays.copyOf(inner, k * 2);",
            "            if (inner[k] == null) inner[k] = new Msg();",
            f"            dp = d_{name}(cx, d, dp, de, inner[k]);",
            f"            if ({self._on_msg(self.g.bool_expr(w.condition, name)).replace('m.v_', 'inner[k].v_')}) throw cx.bad({path}, pos, "
            '"inner messages must not be compressed (nesting deeper than 1)");',
            "            k++;",
            "        }",
            f'        if (k == 0) throw cx.bad({path}, pos, "found a compressed message set with no inner records");',
            *base,
            f"        boolean restamp = {when};",
            "        for (int i = 0; i < k; i++) {",
            "            Msg x = inner[i];",
            f"            long t = restamp ? {its} : {inner_ts};",
            "            if (i == 0) { bt.baseOffset = x.v_offset + base; bt.baseTimestamp = t; }",
            "            cx.rows.record(x.v_offset + base, t, x.key_b, x.key_p, x.key_n, x.value_b, x.value_p, x.value_n);",
            "        }",
            "        return next;",
        ]  # fmt: skip
