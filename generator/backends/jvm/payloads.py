"""Kafka's message encoding lowered to Java that writes what kfmt.payloads makes of a payload: the JSON text of
``Decoded.to_json()`` (``{"type", "version", "data"}``), straight from the bytes, with no value objects.

One ``d_<struct>`` method per struct of a message schema (the schemas under ``schemas/messages``): fixed-width
runs, Kafka's varints, blobs with int16/int32/compact lengths, nested and nullable structs, counted and compact
arrays, switches on a record's type or version, tagged-field sections (known tags in any order, the last one
counting, left out of the JSON at their defaults, unknown ones under ``_unknownTaggedFields``), enums (written as
their ids), a struct's ``requires`` and fields present only in some versions. Bytes holding a message (views)
are written as that message, or as hex where it does not parse (then said, as kfmt.payloads says it).

The JSON a struct's fields make (Kafka's names, kinds, versions, tagged defaults) is the python lowering's
(``kafka`` and ``kafka_tagged`` of each struct, what kfmt.payloads reads): one definition for both.
"""

from __future__ import annotations

from generator.backends.jvm.base import READ, JavaExpr, Unsupported, blob_bounds, class_name, doc, jstr
from generator.backends.jvm.tagged import NONE, TaggedJson
from generator.ir import nodes as n


class PayloadGen:
    """The Java source of one message schema's payload decoder."""

    def __init__(self, ir: n.FormatIR, kafka: dict[str, tuple], tagged: dict[str, tuple], package: str):
        self.f, self.package = ir, package
        self.by_name = {s.name: s for s in ir.structs}
        self.enums = {e.name: e for e in ir.enums}
        self.kafka, self.tagged = kafka, tagged
        self.root = self.by_name[ir.root]
        self.absent: list[tuple[str, str, str]] = []  # (constant, struct, Java bytes literal) of empty-struct defaults
        self.names: dict[str, str] = {}  # a member's JSON text (quoted) -> its constant
        self.values: dict[str, str] = {}  # a tagged field's absent JSON -> its constant

    def emit(self) -> str:
        methods = [StructJson(self, st).emit() for st in self.f.structs]
        cls = class_name(self.f.id)
        return "\n".join([
            f"package {self.package};",
            "",
            "import kfmt.jvm.Bad;",
            "import kfmt.jvm.Ctx;",
            "import kfmt.jvm.Js;",
            "",
            f"/** {doc(self.f.doc)}: the JSON kfmt.payloads writes of one. */",
            f"public final class {cls} implements kfmt.jvm.Payload {{",
            f"    public String id() {{ return {jstr(self.f.id)}; }}",
            f"    public boolean exact() {{ return {'true' if self.f.trailing == 'exact' else 'false'}; }}",
            "",
            self._entry(),
            *self._absent_constants(),
            *[f"    private static final byte[] {c} = Js.name({jstr(q)});" for q, c in self.names.items()],
            *[f"    private static final byte[] {c} = {jstr(v)}.getBytes(java.nio.charset.StandardCharsets.US_ASCII);"
              for v, c in self.values.items()],
            "",
            *methods,
            "}",
            "",
        ])  # fmt: skip

    def _entry(self) -> str:
        """``decode``: the root's fields, its message's JSON into ``j`` (its type and version in ``j``)."""
        root = self.root
        if len(root.params) > 1:
            raise Unsupported("a payload root with more than one parameter")
        params = "".join(", param" for _ in root.params)
        # the protocol's bodies and headers: Kafka's JSON holds the fields of the version read (the parameter)
        version = "param" if [p.name for p in root.params] in (["api_version"], ["header_version"]) else NONE
        return "\n".join([
            "    public int decode(Ctx cx, Js j, byte[] b, int pos, int end, long param) throws Bad {",
            f"        return d_{root.name}(cx, j, b, pos, end, {version}{params});",
            "    }",
            "",
        ])  # fmt: skip

    def name(self, kafka: str) -> str:
        """The constant holding a member's name as JSON text (quoted, with its ": ")."""
        return self.names.setdefault(jstr(kafka), f"K{len(self.names)}")

    def value(self, json_text: str) -> str:
        return self.values.setdefault(json_text, f"V{len(self.values)}")

    def _absent_constants(self) -> list[str]:
        out = []
        for const, struct, raw in self.absent:
            out += [
                f"    private byte[] {const};",
                "",
                f"    /** The JSON of {struct} at its defaults (Kafka's new Type()), decoded from the bytes it encodes to. */",
                f"    private byte[] {const}(Ctx cx) throws Bad {{",
                f"        if ({const} == null) {{",
                "            Js e = new Js();",
                f"            byte[] raw = {raw};",
                f"            d_{struct}(cx, e, raw, 0, raw.length, {NONE});",
                f"            {const} = e.cut(0);",
                "        }",
                f"        return {const};",
                "    }",
                "",
            ]
        return out


class StructJson(TaggedJson):
    """One ``d_<struct>`` method: decodes the struct at ``pos`` and writes its JSON value into ``j``."""

    def __init__(self, g: PayloadGen, st: n.Struct):
        self.g, self.st = g, st
        self.out: list[str] = []
        self.is_root = st is g.root
        self.obj = st.repr == "object" and not self.is_root
        # python field name -> (Kafka's name, kind, versions) of the JSON: an object struct's members; a value
        # struct is its one field's value (no name); the root writes only its message
        if self.obj:
            self.json = {e[0]: e[1:] for e in g.kafka.get(st.name, ())}
        elif not self.is_root:
            if len(st.fields) != 1:
                raise Unsupported(f"a value struct of {len(st.fields)} fields")
            self.json = {st.fields[0].name: ("", "", None)}
        else:
            self.json = {}
        names = [f.name for f in st.fields]
        # the field the JSON's version is read from: the root's version (or record type), or a message's own
        own = self.obj and g.kafka.get(st.name, ())[:1] and g.kafka[st.name][0][0] == "version"
        self.version = next((v for v in ("version", "record_type") if v in names), None) if self.is_root else (
            "version" if own else None)  # fmt: skip
        self.n = 0

    def say(self, line: str) -> None:
        self.out.append("        " + line)

    def path(self, field: str | None = None) -> str:
        return jstr(self.st.name if field is None else f"{self.st.name}.{field}")

    def tmp(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def _is_text(self, ref: n.Ref) -> bool:
        owner = self.g.by_name.get(ref.owner)
        f = next((x for x in owner.fields if x.name == ref.name), None) if owner is not None else None
        return f is not None and isinstance(f.wire, n.Blob)

    def signature(self) -> str:
        params = "".join(f", int a_{p.name}_p, int a_{p.name}_n" if self._is_text(p) else f", long a_{p.name}"
                         for p in self.st.params)  # fmt: skip
        return f"    int d_{self.st.name}(Ctx cx, Js j, byte[] b, int pos, int end, long jv{params}) throws Bad {{"

    def emit(self) -> str:
        st = self.st
        if st.regions or st.wrappers:
            raise Unsupported("a length region or a wrapper in a message")
        if st.requires is not None:
            self._requires()
        if self.obj:
            if st.orig_name:
                self.say(f"if (j.depth == 0 && j.type == null) j.type = {jstr(st.orig_name)};")
            self.say("j.open();")
        for f in st.fields:
            self._field(f)
            if f.name == self.version:
                self.say(f"jv = v_{f.name};")
        if self.obj:
            self.say("j.close();")
        if self.is_root:
            self._root_values()
        self.say("return pos;")
        return "\n".join([self.signature(), *self.out, "    }", ""])

    def _root_values(self) -> None:
        names = [f.name for f in self.st.fields]
        version = next((v for v in ("version", "record_type") if v in names), None)
        self.say(f"j.version = {f'v_{version}' if version else '0L'};")
        self.say(f"j.frame = {'v_frame_version' if 'frame_version' in names else '1L'};")

    def _requires(self) -> None:
        from generator.ir.printer import expr

        cond = self.st.requires
        assert cond is not None
        what = self.st.orig_name or self.st.name
        sel = self._version_ref(cond)
        self.say(f"if (!{self.bool_expr(cond)}) throw cx.bad({self.path()}, pos, {jstr(f'{what} is not defined for version ')}"
                 f" + {sel} + {jstr(f' (this schema has it for {expr(cond, self.st.name)})')});")  # fmt: skip

    def _version_ref(self, e: n.Expr) -> str:
        refs = [x for x in _walk(e) if isinstance(x, n.Ref)]
        return self.long_expr(refs[0]) if refs else "0L"

    # ------------------------------------------------------------------ JSON placement
    def _json_of(self, name: str):
        """(Kafka's name, kind, versions) when the field is written to the JSON, else None."""
        return self.json.get(name)

    def _key(self, entry) -> str:
        """Opens the member (its version range checked at run time); returns the closing text."""
        kafka, _, versions = entry
        if not kafka:  # a value struct's value
            return ""
        if versions is None:
            self.say(f"j.key({self.g.name(kafka)});")
            return ""
        lo, hi = versions
        self.say(f"if (jv == {NONE} || (jv >= {lo} && jv <= {hi})) {{")
        self.say(f"    j.key({self.g.name(kafka)});")
        return "}"

    # ------------------------------------------------------------------ fields
    def _field(self, f: n.Field) -> None:
        if isinstance(f.derived, n.Checksum):
            raise Unsupported("a checksum in a message")
        if f.derived is not None:
            raise Unsupported(f"a derived field in a message ({type(f.derived).__name__})")
        if f.condition is not None:
            self._conditional(f)
            return
        self._present(f)

    def _present(self, f: n.Field) -> None:
        w = f.wire
        if isinstance(w, n.Int):
            self._int(f, w)
        elif isinstance(w, n.Varint):
            self._varint(f"v_{f.name}", w, f.name)
            self._scalar_json(f, f"v_{f.name}", "int")
        elif isinstance(w, n.Blob):
            self._blob(f, w)
        elif isinstance(w, n.StructType):
            self._struct(f, w)
        elif isinstance(w, n.ArrayType):
            self._array(f, w)
        elif isinstance(w, n.Switch):
            self._switch(f, w)
        elif isinstance(w, n.Tagged):
            self._tagged(f, w)
        else:
            raise Unsupported(f"a {type(w).__name__} field in a message")

    def _conditional(self, f: n.Field) -> None:
        """A field present only when its condition holds (a version): else its default, in the JSON as such."""
        w = f.wire
        assert f.condition is not None
        cond = self.bool_expr(f.condition)
        if isinstance(w, (n.Int, n.Varint)):
            default = f.default.value if isinstance(f.default, (n.Const, n.EnumConst)) else None
            if isinstance(w, n.Int) and w.kind == "float64":
                raise Unsupported(f"a conditional {w.kind} field")
            if isinstance(w, n.Int) and w.kind == "uuid":  # absent: its position -1, written as the zero uuid
                default = -1
            # (a field of the protocol absent at a version: Kafka's JSON leaves it out there, and 0 otherwise)
            self.say(f"long v_{f.name} = {int(default or 0)}L;")
            self.say(f"if ({cond}) {{")
            self._read_scalar(f, w, declare=False)
            self.say("}")
            self._after_scalar(f)
            return
        if isinstance(w, n.Blob):
            nm = f.name
            self.say(f"int {nm}_p = pos, {nm}_n = -1;")
            self.say(f"if ({cond}) {{")
            self._blob_read(f, w)
            self.say("}")
            self._blob_json(f, w)
            return
        if isinstance(w, (n.ArrayType, n.StructType)):  # absent: None (null, where its version is in the JSON)
            self.say(f"if ({cond}) {{")
            self._present(f)
            self.say("} else {")
            entry = self._json_of(f.name)
            if entry is not None:
                close = self._key(entry)
                self.say("    j.nul();")
                if close:
                    self.say(close)
            self.say("}")
            return
        raise Unsupported(f"a conditional {type(w).__name__} field")

    # ------------------------------------------------------------------ scalars
    def _int(self, f: n.Field, w: n.Int) -> None:
        self._read_scalar(f, w, declare=True)
        self._after_scalar(f)

    def _read_scalar(self, f: n.Field, w, declare: bool) -> None:
        decl = "long " if declare else ""
        if isinstance(w, n.Varint):
            self._varint(f"v_{f.name}", w, f.name, declare)
            return
        run = next((r for r in self.st.runs if r.fields and r.fields[0] == f.name), None)
        in_run = any(f.name in r.fields for r in self.st.runs)
        if run is not None or not in_run:  # a run of fixed-width fields is checked once, as the python backend does
            size = run.size if run is not None else w.width
            self.say(f"if (end - pos < {size}) throw cx.bad({self.path()}, pos, "
                     f'"needs {size} bytes, " + (end - pos) + " left");')  # fmt: skip
        if w.kind == "uuid":
            self.say(f"{decl}v_{f.name} = pos;")  # (its position: the JSON writes its 16 bytes)
        elif w.kind == "float64":
            self.say(f"{decl}v_{f.name} = Ctx.i64(b, pos);")
        elif w.kind == "bool":
            self.say(f"{decl}v_{f.name} = b[pos] != 0 ? 1L : 0L;")
        else:
            self.say(f"{decl}v_{f.name} = Ctx.{READ[(w.width, w.signed)]}(b, pos);")
        self.say(f"pos += {w.width};")

    def _after_scalar(self, f: n.Field) -> None:
        w = f.wire
        if f.const is not None:
            self.say(f"if (v_{f.name} != {f.const}L) throw cx.bad({self.path(f.name)}, pos, "
                     f'"is " + v_{f.name} + ", not {f.const}");')  # fmt: skip
        for bv in f.bits:
            self.say(f"long v_{bv.name} = (v_{f.name} & {bv.mask}L) >>> {bv.shift};")
            if bv.enum:
                ids = " && ".join(f"v_{bv.name} != {k}L" for k, _ in self.g.enums[bv.enum].values)
                self.say(f'if ({ids}) throw cx.bad({self.path(f.name)}, pos, "unknown {bv.name} id " + v_{bv.name});')
                entry = self._json_of(bv.name)
                if entry is not None:
                    self._scalar_json(bv, f"v_{bv.name}", "int", entry)
            elif bv.kind == "flag":
                self.say(f"v_{bv.name} = v_{bv.name} != 0 ? 1L : 0L;")
        if not f.bits:
            kind = w.kind if isinstance(w, n.Int) else "int"
            self._scalar_json(f, f"v_{f.name}", kind)

    def _scalar_json(self, f, var: str, kind: str, entry=None) -> None:
        entry = entry if entry is not None else self._json_of(f.name)
        if entry is None:
            return
        close = self._key(entry)
        self.say("    " + _scalar(kind, var, f.wire if isinstance(f, n.Field) else None))
        if close:
            self.say(close)

    def _varint(self, var: str, w: n.Varint, name: str, declare: bool = True) -> None:
        conv = ("Ctx.zigzag32" if w.bits == 32 else "Ctx.zigzag64") if w.zigzag else ""
        decl = "long " if declare else ""
        self.say(f'if (pos >= end) throw cx.bad({self.path(name)}, pos, "input ends before a varint");')
        self.say(f"{decl}{var} = {conv}(cx.uvarint(b, pos, end, {w.max_bytes}, {self.path(name)}));")
        self.say("pos = cx.p;")
        if w.compact:
            self.say(f"{var} -= 1;")

    def _prefix(self, var: str, x, name: str) -> None:
        if isinstance(x, n.Varint):
            self._varint(var, x, name)
        elif isinstance(x, n.Int) and x.kind == "int":
            self.say(f"if (end - pos < {x.width}) throw cx.bad({self.path(name)}, pos, "
                     f'"needs {x.width} bytes, " + (end - pos) + " left");')  # fmt: skip
            self.say(f"long {var} = Ctx.{READ[(x.width, x.signed)]}(b, pos);")
            self.say(f"pos += {x.width};")
        else:
            raise Unsupported(f"a length given by {type(x).__name__} in a message")

    # ------------------------------------------------------------------ blobs
    def _blob(self, f: n.Field, w: n.Blob) -> None:
        self.say(f"int {f.name}_p = pos, {f.name}_n;")
        self._blob_read(f, w)
        view = next((v for v in self.st.views if v.source == f.name), None)
        if view is not None:
            self._view(f, view)
        else:
            self._blob_json(f, w)

    def _blob_read(self, f: n.Field, w: n.Blob) -> None:
        nm = f.name
        n_ = self.tmp("n_")
        self._prefix(n_, w.length, nm)
        self.say(f"{nm}_p = pos;")
        if w.nullable:
            self.say(f"if ({n_} < 0) {nm}_n = -1; else {{")
        else:
            self.say(f'if ({n_} < 0) throw cx.bad({self.path(nm)}, pos, "negative length " + {n_}); else {{')
        blob_bounds(self.say, self.path(nm), n_, nm, "end")

    def _blob_json(self, f: n.Field, w: n.Blob) -> None:
        entry = self._json_of(f.name)
        if entry is None:
            return
        close = self._key(entry)
        nm = f.name
        write = "j.text" if w.text else "j.hex"
        self.say(f"    if ({nm}_n < 0) j.nul(); else {write}(b, {nm}_p, {nm}_n);")
        if w.view:  # a record set: where it is and its field path, for the readers of the records inside
            self.say(f"    if ({nm}_n >= 0) j.recordSet({nm}_p, {nm}_n);")
        if close:
            self.say(close)

    def _view(self, f: n.Field, v: n.View) -> None:
        """Bytes holding a message: the message's JSON where they parse, else their hex (with keep_raw, the
        reason is kept as a problem of the payload; without, it is the payload's error)."""
        entry = self._json_of(f.name)
        inner = self.g.by_name[v.struct]
        nm = f.name
        cond = self.bool_expr(v.condition) if v.condition is not None else "true"
        mark = self.tmp("m_")
        close = self._key(entry) if entry is not None else ""
        ind = "    " if entry is not None else ""
        self.say(f"{ind}int {mark} = j.mark();")
        self.say(f"{ind}boolean {mark}ok = false;")
        self.say(f"{ind}if ({cond}) {{")
        min_size = inner.min_size
        what = f"{nm} must hold a {inner.name} of at least {min_size} bytes"
        check = (f'if ({nm}_n < {min_size}) throw new Bad({self.path(v.name)}, Bad.NOWHERE, {jstr(what)}); '
                 f"d_{inner.name}(cx, j, b, {nm}_p, {nm}_p + {nm}_n, {NONE}); {mark}ok = true;")  # fmt: skip
        if v.keep_raw:
            self.say(f"{ind}    try {{ {check} }} catch (Bad e_) {{ j.cut({mark}); j.problem(e_, {nm}_p); }}")
        else:
            self.say(f"{ind}    {check}")
        self.say(f"{ind}}}")
        self.say(f"{ind}if (!{mark}ok) {{ if ({nm}_n < 0) j.nul(); else j.hex(b, {nm}_p, {nm}_n); }}")
        if close:
            self.say(close)

    # ------------------------------------------------------------------ structs, arrays, switches
    def _struct(self, f: n.Field, w: n.StructType) -> None:
        if w.size is not None:
            raise Unsupported("a sized struct in a message")
        entry = self._json_of(f.name)
        close = self._key(entry) if entry is not None else ""
        mark = self.tmp("m_")
        self.say(f"int {mark} = j.mark();")
        null = None
        if w.nullable:
            if w.marker is None:
                raise Unsupported("a nullable struct without a marker")
            null = self.tmp("null_")
            m = w.marker
            nil, there = (-1, 1) if isinstance(m, n.Int) else (0, 1)
            if isinstance(m, n.Varint):
                self.say(f"long {null} = cx.uvarint(b, pos, end, {m.max_bytes}, {self.path(f.name)}); pos = cx.p;")
            else:
                self._prefix(null, m, f.name)
            self.say(f"if ({null} != {nil} && {null} != {there}) throw cx.bad({self.path(f.name)}, pos - 1, "
                     f'"null marker " + {null} + " is neither {nil} (null) nor {there} (present)");')  # fmt: skip
            self.say(f"if ({null} == {nil}) j.nul(); else")
        self.say(f"    pos = d_{w.name}(cx, j, b, pos, end, jv{self._args(w.name)});")
        if entry is None:
            self.say(f"j.cut({mark});")
        if close:
            self.say(close)

    def _args(self, struct: str) -> str:
        out = []
        for p in self.g.by_name[struct].params:
            if self._is_text(p):
                at = p.name if p.owner == self.st.name else f"a_{p.name}"
                out.append(f", {at}_p, {at}_n")
            else:
                out.append(f", {self.long_expr(p)}")
        return "".join(out)

    def _array(self, f: n.Field, w: n.ArrayType) -> None:
        if w.size is not None or w.compressed_by is not None:
            raise Unsupported("a sized or compressed array in a message")
        nm, cnt = f.name, f"c_{f.name}"
        self._prefix(cnt, w.count, nm)
        null = f"null_{nm}"
        self.say(f"boolean {null} = {cnt} < 0;")
        if not w.nullable:
            self.say(f'if ({null}) throw cx.bad({self.path(nm)}, pos, "negative count " + {cnt});')
        self.say(f"if ({null}) {cnt} = 0;")
        limit = "cx.maxRecords" if w.limit == "max_records" else "cx.maxHeaders"
        self.say(
            f'if ({cnt} > {limit}) throw cx.bad({self.path(nm)}, pos, "count " + {cnt} + " exceeds the limit of " + {limit});'
        )
        self.say(f"if ({cnt} * {w.min_elem_size} > end - pos) throw cx.bad({self.path(nm)}, pos, \"count \" + {cnt} + "
                 f'" needs at least " + {cnt} * {w.min_elem_size} + " bytes, " + (end - pos) + " left");')  # fmt: skip
        entry = self._json_of(f.name)
        mark = self.tmp("m_")
        self.say(f"int {mark} = j.mark();")
        close = self._key(entry) if entry is not None else ""
        self.say(f"    if ({null}) j.nul(); else {{")
        self.say("        j.openArray();")
        self.say(f"        for (long i_ = 0; i_ < {cnt}; i_++) {{")
        self.say("            j.item();")
        self.say(f"            try {{ pos = d_{w.elem}(cx, j, b, pos, end, jv{self._args(w.elem)}); }}")
        self.say(f"            catch (Bad e_) {{ throw e_.within({self.path(nm)}, i_, {jstr(w.elem)}); }}")
        self.say("        }")
        self.say("        j.closeArray();")
        self.say("    }")
        if close:
            self.say(close)
        if entry is None:
            self.say(f"j.cut({mark});")

    def _switch(self, f: n.Field, w: n.Switch) -> None:
        sel = self.long_expr(w.selector)
        entry = self._json_of(f.name)
        mark = self.tmp("m_")
        self.say(f"int {mark} = j.mark();")
        close = self._key(entry) if entry is not None else ""
        known = ", ".join(_known(w))
        self.say(f"    switch ((int) {sel}) {{")
        for values, struct in w.grouped():
            labels = ", ".join(str(v) for v in values)
            self.say(f"        case {labels} -> pos = d_{struct}(cx, j, b, pos, end, jv{self._args(struct)});")
        self.say(f'        default -> throw cx.bad({self.path(f.name)}, pos, "no layout for {w.selector.name} " + {sel} + '
                 f'" (known: {known})");')  # fmt: skip
        self.say("    }")
        if close:
            self.say(close)
        if entry is None and not (self.is_root or self.st.repr != "object"):
            self.say(f"j.cut({mark});")

    # ------------------------------------------------------------------ expressions
    def long_expr(self, e: n.Expr) -> str:
        return _EXPR.long_expr(e, self.st.name)

    def bool_expr(self, e: n.Expr) -> str:
        return _EXPR.bool_expr(e, self.st.name)


_EXPR = JavaExpr()


def _scalar(kind: str, var: str, wire) -> str:
    """The Java statement writing a scalar's JSON."""
    if kind == "bool":
        return f"j.bool({var} != 0);"
    if kind == "float64":
        return f"j.f64(Double.longBitsToDouble({var}));"
    if kind == "uuid":
        return f"j.uuid(b, (int) {var});"
    if isinstance(wire, n.Int) and wire.width == 8 and not wire.signed:
        return f"j.unum({var});"
    return f"j.num({var});"


def _known(w: n.Switch) -> list[str]:
    """The selector values a switch knows, as kfmt's decoders list them."""
    return [str(v) for v, _ in sorted(w.cases)]


def _walk(e):
    yield e
    for name in ("left", "right", "operand", "cond", "then", "otherwise"):
        x = getattr(e, name, None)
        if x is not None:
            yield from _walk(x)
    for x in getattr(e, "operands", ()) or ():
        yield from _walk(x)
