"""One ``d_<struct>`` method per struct: straight-line Java over a ``byte[]``, checking what the python backend
checks (lengths, regions, CRCs, constants, enums, limits) and throwing :class:`kfmt.jvm.Bad` with the field path.

A struct's end of region is ``end`` until a length field opens a tighter one (every region runs to the end of
its struct, so each is checked there, innermost first). Values are Java ``long`` locals ``v_<field>``, blobs
three locals (``<field>_b`` array, ``_p`` position, ``_n`` length, -1 for null), arrays are decoded in place
(their elements' methods called in a loop) or, compressed, from ``cx.codecs``' output.
"""

from __future__ import annotations

from generator.backends.jvm.base import BATCH_FIELDS, READ, Lowering, Unsupported, blob_bounds, jstr
from generator.ir import nodes as n


class StructGen:
    """One ``d_<struct>`` method."""

    def __init__(self, g: Lowering, st: n.Struct):
        self.g, self.st = g, st
        self.role = g.roles.get(st.name, "root" if st is g.root else "struct")
        self.out: list[str] = []
        self.end = "end"
        self.regions: list[tuple[str, str]] = []  # (length field, the name of its region's end), outermost first
        self.starts: set[str] = set()
        self.pending: dict[str, tuple[n.Field, n.Checksum]] = {}  # CRC checks made where their range starts
        for f in st.fields:
            c = f.derived
            if isinstance(c, n.Checksum):
                self.starts.add(c.start)
                if c.trailing and c.end is None:
                    self.starts.add(f.name)  # the range ends where the CRC starts
                elif c.end is not None:
                    self.starts.add(c.end)

    def say(self, line: str) -> None:
        self.out.append("        " + line)

    def path(self, field: str) -> str:
        return jstr(f"{self.st.name}.{field}")

    def signature(self) -> str:
        params = "".join(f", long a_{p.name}" for p in self.st.params)
        extra = ", Msg m" if self.role == "message" else ""
        if self.role == "header" and self.g.root.role == "message":
            extra = ", boolean emit"  # a legacy message's headers are put out once its offset is known
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
        for length_field, e in reversed(self.regions):  # (the python backend's words)
            self.say(f'if (pos != {e}) throw cx.bad({self.path(length_field)}, pos, "{length_field} declares " + '
                     f'v_{length_field} + " bytes but the fields end " + (pos - {e}) + " bytes from there");')  # fmt: skip
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
        run: list[n.Field] = []
        for f in fields[i:]:
            if not isinstance(f.wire, n.Int) or f.condition is not None:
                break
            if run and f.name in self.starts:
                break  # a range starts there: its position is marked, and its CRC checked, before it is read
            run.append(f)
            if isinstance(f.derived, n.LengthOf):
                break  # the region it opens starts after it
        return run

    def _mark(self, f: n.Field) -> None:
        """The position of a field a range starts at, and the CRC check over that range (the python backend's
        order: checked before the range's fields are read)."""
        self.say(f"int p_{f.name} = pos;")
        if f.name in self.pending:
            self._checksum(*self.pending.pop(f.name))

    def _fixed(self, run: list[n.Field]) -> None:
        wires = [f.wire for f in run if isinstance(f.wire, n.Int)]
        size = sum(w.width for w in wires)
        if run[0].name in self.starts:
            self._mark(run[0])
        self.say(f"if ({self.end} - pos < {size}) throw cx.bad({jstr(self.st.name)}, pos, "
                 f'"needs {size} bytes, " + ({self.end} - pos) + " left");')  # fmt: skip
        at = 0
        for f, w in zip(run, wires):
            if w.kind != "int":
                raise Unsupported(f"an {w.kind} field")
            self.say(f"long v_{f.name} = Ctx.{READ[(w.width, w.signed)]}(b, pos + {at});")
            at += w.width
        self.say(f"pos += {size};")
        for f in run:
            self._after_scalar(f)

    def _after_scalar(self, f: n.Field) -> None:
        if f.const is not None:
            self.say(f"if (v_{f.name} != {f.const}L) throw cx.bad({self.path(f.name)}, pos, "
                     f'"{f.name} is " + v_{f.name} + ", expected {f.const}");')  # fmt: skip
        for bv in f.bits:
            self._bit_view(f, bv)
        d = f.derived
        if isinstance(d, n.LengthOf):  # (the python backend's checks, in its order and words)
            e, least = f"e_{f.name}", self._min_from(d.start)
            self.say(f"if (v_{f.name} < {least}) throw cx.bad({self.path(f.name)}, pos, "
                     f'"{f.name} " + v_{f.name} + " is below the minimum of {least}");')  # fmt: skip
            self.say(f"int {e} = pos + (int) v_{f.name};")
            self.say(f"if (v_{f.name} > {self.end} - pos) throw cx.bad({self.path(f.name)}, pos, "
                     f'"{f.name} " + v_{f.name} + " runs past the end of the input (" + ({self.end} - pos) + " bytes left)");')  # fmt: skip
            self.regions.append((f.name, e))
            self.end = e
        if isinstance(d, n.Checksum):
            if d.end is None and not d.trailing:
                self.pending[d.start] = (f, d)  # checked where its range starts
            else:
                self._checksum(f, d)

    def _bit_view(self, f: n.Field, bv: n.BitView) -> None:
        self.say(f"long v_{bv.name} = (v_{f.name} & {bv.mask}L) >>> {bv.shift};")
        if bv.kind == "flag":
            self.say(f"v_{bv.name} = v_{bv.name} != 0 ? 1L : 0L;")
        if bv.enum:  # (an unknown id first, then a constant: the python backend's order)
            ids = " && ".join(f"v_{bv.name} != {k}L" for k, _ in self.g.enums[bv.enum].values)
            self.say(f'if ({ids}) throw cx.bad({self.path(f.name)}, pos, "unknown {bv.name} id " + v_{bv.name});')
        if bv.const is not None:
            self.say(f"if (v_{bv.name} != {bv.const}L) throw cx.bad({self.path(f.name)}, pos, "
                     f'"{bv.name} must be {bv.const} in this format");')  # fmt: skip

    def _min_from(self, start: str) -> int:
        """The fewest bytes the fields from ``start`` to the struct's end take (the python lowering's min_size)."""

        def prefix(x: object) -> int:
            return x.width if isinstance(x, n.Int) else 1 if isinstance(x, n.Varint) else 0

        names = [f.name for f in self.st.fields]
        total = 0
        for f in self.st.fields[names.index(start) :]:
            w = f.wire
            if f.condition is not None:
                continue
            if isinstance(w, (n.Int, n.Varint)):
                total += prefix(w)
            elif isinstance(w, n.Blob):
                total += prefix(w.length)
            elif isinstance(w, n.ArrayType):
                total += prefix(w.count)
            else:
                raise Unsupported(f"the least size of a {type(w).__name__}")
        return total

    def _checksum(self, f: n.Field, d: n.Checksum) -> None:
        """The CRC over [start, end): the end of the region, the start of a bounding field, or (trailing) of the
        CRC itself."""
        if d.end is not None:
            to = f"p_{d.end}"
        elif d.trailing:
            to = f"p_{f.name}"
        else:
            to = self.end
        algo = d.algo  # (the python backend's words, located at the start of the bytes it covers)
        self.say(f"if (cx.verifyCrc && cx.{algo}(b, p_{d.start}, {to}) != v_{f.name}) throw cx.bad("
                 f'{self.path(f.name)}, p_{d.start}, "stored {algo} " + Ctx.hex32(v_{f.name}) + " != computed " '
                 f'+ Ctx.hex32(cx.{algo}(b, p_{d.start}, {to})) + " (corrupt data)");')  # fmt: skip

    # ------------------------------------------------------------------ other fields
    def _field(self, f: n.Field) -> None:
        w = f.wire
        if f.name in self.starts:
            self._mark(f)
        if f.condition is not None:
            self._conditional(f)
        elif isinstance(w, n.Varint):
            self._varint(f"v_{f.name}", w, f.name)
            self._after_scalar(f)
        elif isinstance(w, n.Blob):
            self.say(f"byte[] {f.name}_b = b; int {f.name}_p = pos, {f.name}_n;")
            self._blob(f, w)
        elif isinstance(w, n.ArrayType):
            self._array(f, w)
        else:
            raise Unsupported(f"a {type(w).__name__} field")

    def _conditional(self, f: n.Field) -> None:
        """A blob present only when its condition holds; null otherwise."""
        if not isinstance(f.wire, n.Blob) or f.default is not None or f.condition is None:
            raise Unsupported("a conditional field other than bytes without a default")
        nm = f.name
        self.say(f"byte[] {nm}_b = b; int {nm}_p = pos, {nm}_n = -1;")
        self.say(f"if ({self.g.bool_expr(f.condition, self.st.name)}) {{")
        self._blob(f, f.wire)
        self.say("}")

    def _varint(self, var: str, w: n.Varint, name: str) -> None:
        if w.compact:
            raise Unsupported("a compact varint")
        conv = ("Ctx.zigzag32" if w.bits == 32 else "Ctx.zigzag64") if w.zigzag else ""
        self.say(f"long {var} = {conv}(cx.uvarint(b, pos, {self.end}, {w.max_bytes}, {self.path(name)}));")
        self.say("pos = cx.p;")

    def _prefix(self, var: str, x: n.Extent, name: str) -> None:
        """``long <var>``: a length or count read from the wire (an integer or a varint), or the rest of the region."""
        if isinstance(x, n.Varint):
            self._varint(var, x, name)
        elif isinstance(x, n.Int) and x.kind == "int":
            self.say(f"if ({self.end} - pos < {x.width}) throw cx.bad({self.path(name)}, pos, "
                     f'"needs {x.width} bytes, " + ({self.end} - pos) + " left");')  # fmt: skip
            self.say(f"long {var} = Ctx.{READ[(x.width, x.signed)]}(b, pos);")
            self.say(f"pos += {x.width};")
        elif isinstance(x, n.Rest):
            self.say(f"long {var} = {self.end} - {x.trailer} - pos;")
        else:
            raise Unsupported(f"a length given by {type(x).__name__}")

    def negative(self, var: str, name: str, null: str | None) -> None:
        """Opens ``if (<var> < 0) <null> else {``: a negative length is null (``null``: what that sets) or an error."""
        if null is not None:
            self.say(f"if ({var} < 0) {null} else {{")
        else:
            self.say(f'if ({var} < 0) throw cx.bad({self.path(name)}, pos, "negative length " + {var}); else {{')

    def _blob(self, f: n.Field, w: n.Blob) -> None:
        """The blob's position and length into the locals ``<name>_p`` and ``<name>_n`` (declared before)."""
        nm = f.name
        self._prefix(f"n_{nm}", w.length, nm)
        self.say(f"{nm}_p = pos;")
        if isinstance(w.length, n.Rest):  # (the python backend's words: the fields after it left no room)
            self.say(f'if (n_{nm} < 0) throw cx.bad({self.path(nm)}, pos, "no room for {nm}"); else {{')
        else:
            self.negative(f"n_{nm}", nm, f"{nm}_n = -1;" if w.nullable else None)
        cap = f"Math.min(cx.maxBytes, {w.max})" if w.max is not None else "cx.maxBytes"
        blob_bounds(self.say, self.path(nm), f"n_{nm}", nm, self.end, cap)

    def _array(self, f: n.Field, w: n.ArrayType) -> None:
        ArrayGen(self, f, w).emit()

    def _view(self, v: n.View) -> None:
        st = self.g.by_name[v.struct]
        if v.keep_raw:
            return  # a parse that fails is kept as it is: nothing to check
        if st.fixed_size is None:
            raise Unsupported("a view of a struct that is not fixed-size")
        cond = self.g.bool_expr(v.condition, self.st.name) if v.condition is not None else "true"
        self.say(f"if ({cond} && {v.source}_n < {st.fixed_size}) throw cx.bad({self.path(v.name)}, Bad.NOWHERE, "
                 f'"{v.source} must hold a {v.struct} of at least {st.fixed_size} bytes");')  # fmt: skip

    # ------------------------------------------------------------------ what the struct gives
    def _finish(self) -> None:
        role, st = self.role, self.st
        names = self._names()
        if role == "header":
            self._header(st)
        elif role == "record":
            ts = "v_timestamp" if "timestamp" in names else "-1L"
            self.say(f"cx.rows.record(v_offset, {ts}, key_b, key_p, key_n, value_b, value_p, value_n);")
        elif role == "root":
            for name, (jname, jtype) in BATCH_FIELDS.items():
                if name in names:
                    val = {"int": f"(int) v_{name}", "boolean": f"v_{name} != 0", "long": f"v_{name}"}[jtype]
                    self.say(f"cx.batch.{jname} = {val};")
        elif role == "message":
            self._keep_message(st)

    def _header(self, st: n.Struct) -> None:
        """A header to the sink: a key in bytes as it is, an integer key as its decimal text."""
        key = st.field("key").wire
        when = "if (emit) " if self.g.root.role == "message" else ""
        if isinstance(key, n.Blob):
            self.say(f"{when}cx.rows.header(key_b, key_p, key_n, value_b, value_p, value_n);")
        elif isinstance(key, (n.Int, n.Varint)):
            self.say(f"{when}cx.rows.header(v_key, value_b, value_p, value_n);")
        else:
            raise Unsupported(f"a header key of {type(key).__name__}")

    def _keep_message(self, st: n.Struct) -> None:
        for f in st.fields:
            if isinstance(f.wire, n.Blob):
                self.say(f"m.{f.name}_b = {f.name}_b; m.{f.name}_p = {f.name}_p; m.{f.name}_n = {f.name}_n;")
            elif isinstance(f.wire, n.ArrayType):
                if self.g.roles.get(f.wire.elem) == "header":
                    nm = f.name
                    self.say(f"m.{nm}_b = d_{nm}; m.{nm}_p = ds_{nm}; m.{nm}_e = de_{nm};")
            else:
                self.say(f"m.v_{f.name} = v_{f.name};")
            for bv in f.bits:
                self.say(f"m.v_{bv.name} = v_{bv.name};")

    def _names(self) -> set[str]:
        st = self.st
        out = {f.name for f in st.fields} | {b.name for f in st.fields for b in f.bits}
        out |= {f.derived.logical for f in st.fields if isinstance(f.derived, n.DeltaOf)}
        return out | {lg.name for lg in st.logical}


class ArrayGen:
    """An array field: its own region (a byte-size prefix, -1 for null when nullable) or the struct's, its
    count (a prefix, an earlier field, or as many elements as the region holds), its elements decoded in place
    or from the decompressed stream. Leaves ``d_<name>``, ``ds_<name>``, ``de_<name>``: the elements' bytes."""

    def __init__(self, sg: StructGen, f: n.Field, w: n.ArrayType):
        self.sg, self.f, self.w, self.nm = sg, f, w, f.name
        self.g = sg.g

    def emit(self) -> None:
        sg, w, nm = self.sg, self.w, self.nm
        if w.size is not None and w.compressed_by is not None:
            raise Unsupported("a sized array that is compressed")
        region = self._region()
        counted = not isinstance(w.count, n.Rest)
        if counted:
            self._count()
        whole = sg.end != "end" and isinstance(w.count, n.CountFrom) and w.size is None
        if whole:  # as Kafka: the payload of a batch of no records is not read
            sg.say(f"int ds_{nm} = pos, de_{nm} = {sg.end}; byte[] d_{nm} = b;")
            sg.say(f"if (n_{nm} == 0) pos = {sg.end}; else {{")
            sg.say(f"int dp_{nm} = pos;")
        else:
            sg.say(f"byte[] d_{nm} = b; int dp_{nm} = pos, ds_{nm} = pos, de_{nm} = {region};")
        if w.compressed_by is not None:
            self._decompress()
        self._elements(counted)
        # what is left after the elements: as the python backend says it (a region's end is checked by its length)
        if w.compressed_by is not None:
            sg.say(f"if (d_{nm} != b && dp_{nm} != de_{nm}) throw cx.bad({sg.path(nm)}, pos, (de_{nm} - dp_{nm}) + "
                   '" bytes remain after the last element of the decompressed stream");')  # fmt: skip
        if w.size is not None:
            sg.say(f'if (dp_{nm} != de_{nm}) throw cx.bad({sg.path(nm)}, dp_{nm}, "length " + s_{nm} + " does not '
                   'match the content");')  # fmt: skip
        elif w.compressed_by is None and self.f is sg.st.fields[-1] and sg.end == "end":
            sg.say(f"if (dp_{nm} != de_{nm}) throw cx.bad({sg.path(nm)}, dp_{nm}, (de_{nm} - dp_{nm}) + "
                   '" bytes after the last element");')  # fmt: skip
        sg.say(f"pos = d_{nm} == b ? dp_{nm} : {sg.end};")
        if whole:
            sg.say("}")

    def _region(self) -> str:
        """The end of the elements' bytes: a size prefix's, else the struct's region."""
        sg, w, nm = self.sg, self.w, self.nm
        if w.size is None:
            return sg.end
        sg._prefix(f"s_{nm}", w.size, nm)
        sg.say(f"int se_{nm};")
        sg.negative(f"s_{nm}", nm, f"se_{nm} = pos;" if w.nullable else None)
        sg.say(
            f'    if (s_{nm} > {sg.end} - pos) throw cx.bad({sg.path(nm)}, pos, "length " + s_{nm} + " runs past the end");'
        )
        sg.say(f"    se_{nm} = pos + (int) s_{nm};")
        sg.say("}")
        return f"se_{nm}"

    def _limit(self) -> str:
        return "cx.maxRecords" if self.w.limit == "max_records" else "cx.maxHeaders"

    def _count(self) -> None:
        sg, w, nm = self.sg, self.w, self.nm
        if isinstance(w.count, n.CountFrom):
            sg.say(f"long n_{nm} = {self.g.long_expr(w.count.field, sg.st.name)};")
        else:
            sg._prefix(f"n_{nm}", w.count, nm)
        sg.say(f'if (n_{nm} < 0) throw cx.bad({sg.path(nm)}, pos, "negative count " + n_{nm});')
        sg.say(f"if (n_{nm} > {self._limit()}) throw cx.bad({sg.path(nm)}, pos, "
               f'"count " + n_{nm} + " exceeds the limit of " + {self._limit()});')  # fmt: skip

    def _decompress(self) -> None:
        sg, w, nm = self.sg, self.w, self.nm
        assert w.compressed_by is not None
        codec = self.g.long_expr(w.compressed_by, sg.st.name)
        sg.say(f"if ({codec} != 0) {{")
        sg.say(f"    cx.codecs.decompress((int) {codec}, {self.g.f.magic}, b, pos, {sg.end} - pos, {sg.path(nm)});")
        sg.say(f"    d_{nm} = cx.codecs.out; dp_{nm} = 0; ds_{nm} = 0; de_{nm} = cx.codecs.size;")
        sg.say("}")

    def _elements(self, counted: bool) -> None:
        """The elements, each one's error located in it (``path[i]``, CodecError.within) and, read from a
        decompressed stream, at the compressed bytes (CodecError.in_stream), as the python backend locates them."""
        sg, w, nm = self.sg, self.w, self.nm
        elem = self.g.by_name[w.elem]
        args = "".join(f", {self.g.long_expr(p, sg.st.name)}" for p in elem.params)
        if self.g.roles.get(w.elem) == "header" and self.g.root.role == "message":
            args += ", false"  # checked now, put out with the message's row
        call = (f"try {{ dp_{nm} = d_{w.elem}(cx, d_{nm}, dp_{nm}, de_{nm}{args}); }} catch (Bad e_) {{ throw "
                f"e_.within({sg.path(nm)}, i_{nm}, {jstr(w.elem)}); }}")  # fmt: skip
        stream = w.compressed_by is not None
        pad = "    " if stream else ""
        sg.say(f"long i_{nm} = 0;")
        if stream:
            sg.say("try {")
        if counted:
            sg.say(f"{pad}if (n_{nm} * {w.min_elem_size} > de_{nm} - dp_{nm}) throw cx.bad({sg.path(nm)}, dp_{nm}, "
                   f'"count " + n_{nm} + " needs at least " + n_{nm} * {w.min_elem_size} + " bytes, " + '
                   f'(de_{nm} - dp_{nm}) + " left");')  # fmt: skip
            sg.say(f"{pad}for (; i_{nm} < n_{nm}; i_{nm}++) {call}")
        else:
            sg.say(f"{pad}for (; dp_{nm} < de_{nm}; i_{nm}++) {{")
            sg.say(f"{pad}    if (i_{nm} >= {self._limit()}) throw cx.bad({sg.path(nm)}, dp_{nm}, "
                   f'"more than " + {self._limit()} + " elements");')  # fmt: skip
            sg.say(f"{pad}    {call}")
            sg.say(f"{pad}}}")
        if stream:
            assert w.compressed_by is not None
            codec = self.g.long_expr(w.compressed_by, sg.st.name)
            sg.say(
                f"}} catch (Bad e_) {{ throw d_{nm} != b ? e_.inStream(kfmt.jvm.Codecs.name((int) {codec}), pos) : e_; }}"
            )
