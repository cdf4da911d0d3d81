"""Lowering of the typed IR to Java encoders: one ``e_<struct>`` method per struct, writing what the python
backend's encoder writes for the same records, byte for byte (the Spark source's writer, ``kfmt.jvm.LogWrite``,
encodes in the executors' JVM with them).

Values come from where kfmt.encode_batch takes them: a batch's fields from :class:`kfmt.jvm.Fields` (by the
schema's names, the schema's default when not given; a value derived from the records, such as base_timestamp,
derived unless given), a record's from :class:`kfmt.jvm.Recs` (offset, timestamp, key, value, headers: the
slots of kfmt.Record), a legacy message's from both (its own offset, timestamp, key and value, and the batch's
codec and timestamp type). A length or CRC is written as a placeholder and patched at the struct's end; what
follows a varint length is written into a scratch buffer first (its size is known only then).
"""

from __future__ import annotations

from generator.backends.jvm.base import JavaExpr, Unsupported, class_name, doc, jstr
from generator.ir import nodes as n

#: a record's values in kfmt.jvm.Recs (the slots of kfmt.runtime.model.Record a row carries)
ROW_LONGS = {"offset": "r.offset[i]", "timestamp": "r.timestamp[i]"}
ROW_BLOBS = {"key": "r.key[i]", "value": "r.value[i]"}
HEADER_BLOBS = {"key": "r.hkeys[i][j]", "value": "r.hvals[i][j]"}
_WRITE = {1: "i8", 2: "i16", 4: "i32", 8: "i64"}


def _literal(c: n.Const | n.EnumConst | None) -> str:
    if c is None:
        return "0L"
    if isinstance(c, n.EnumConst):
        return f"{c.value}L"
    if isinstance(c.value, bool) or not isinstance(c.value, int):
        return "1L" if c.value is True else "0L"
    return "Long.MIN_VALUE" if c.value == -(2**63) else f"{c.value}L"


class EncodeGen(JavaExpr):
    """The Java source of one format's encoder (``<Name>Encoder``)."""

    def __init__(self, f: n.FormatIR, package: str):
        self.f, self.package = f, package
        self.by_name = {s.name: s for s in f.structs}
        self.root = self.by_name[f.root]
        self.enums = {e.name: e for e in f.enums}
        if self.root.role not in ("batch", "message") or f.magic is None:
            raise Unsupported(f"a root of role {self.root.role} (log entries are batches or messages)")
        self.kinds = self._kinds()

    def _kinds(self) -> dict[str, str]:
        """Where each struct's values come from: ``batch`` (Fields, and the records as its array), ``message``
        (a row and Fields), ``record`` (a row), ``header`` (a row's header)."""
        kinds: dict[str, str] = {self.root.name: self.root.role}
        row = self.root
        if self.root.role == "batch":
            arr = [f.wire for f in self.root.fields if isinstance(f.wire, n.ArrayType)]
            if len(arr) != 1:
                raise Unsupported("a batch without exactly one array of records")
            row = self.by_name[arr[0].elem]
            kinds[row.name] = "record"
        for f in row.fields:
            if isinstance(f.wire, n.ArrayType):
                if f.name != "headers":
                    raise Unsupported(f"an array {f.name} in a record")
                kinds[f.wire.elem] = "header"
        for st in self.by_name.values():
            for f in st.fields:
                if isinstance(f.wire, (n.StructType, n.Switch, n.Tagged)):
                    raise Unsupported(f"a {type(f.wire).__name__} field")
        return kinds

    def emit(self) -> str:
        cls = class_name(self.f.id) + "Encoder"
        methods = [StructEnc(self, self.by_name[name], kind).emit() for name, kind in self.kinds.items()]
        return "\n".join([
            f"package {self.package};",
            "",
            "import kfmt.jvm.Enc;",
            "import kfmt.jvm.Fields;",
            "import kfmt.jvm.Out;",
            "import kfmt.jvm.Recs;",
            "",
            f"/** Encoder of {doc(self.f.id)}: {doc(self.f.doc)} */",
            f"public final class {cls} implements kfmt.jvm.Encoder {{",
            f"    public String id() {{ return {jstr(self.f.id)}; }}",
            f"    public int magic() {{ return {self.f.magic}; }}",
            "",
            self._entry(),
            *methods,
            "}",
            "",
        ])  # fmt: skip

    def _entry(self) -> str:
        st = self.root
        head = [
            "    public void encode(Enc x, Recs r, int from, int to, Fields f) {",
            '        if (to <= from) throw new IllegalArgumentException("kafka-log writer: a batch with no records");',
        ]
        if st.role == "batch":
            return "\n".join([*head, f"        e_{st.name}(x, x.out, r, from, to, f);", "    }", ""])
        names = {fl.name for fl in st.fields}
        if "timestamp" in names:  # as kfmt.encode_batch: a message's timestamp is -1 (none) or a time
            head += [
                "        for (int i = from; i < to; i++) if (r.timestamp[i] < -1) throw new IllegalArgumentException(",
                '            "kafka-log writer: records[" + (i - from) + "].timestamp: invalid timestamp " + r.timestamp[i]);',
            ]  # fmt: skip
        plain = f"for (int i = from; i < to; i++) e_{st.name}(x, x.out, r, i, f, 0L, null, 0, 0);"
        if not st.wrappers:
            return "\n".join([
                *head,
                '        if (f.get("codec", 0L) != 0) throw new IllegalArgumentException("kafka-log writer: '
                f'{self.f.id} has no compressed wrapper messages; use codec none");',
                f"        {plain}",
                "    }",
                "",
            ])  # fmt: skip
        w = st.wrappers[0]
        edge = "r.offset[from]" if w.offsets == "relative_to_first" else "r.offset[to - 1]"
        return "\n".join([
            *head,
            f'        if (f.get("{w.codec.name}", 0L) == 0) {{',
            f"            {plain}",
            "            return;",
            "        }",
            '        long ts = f.has("max_timestamp") ? f.get("max_timestamp", -1L) : r.max(r.timestamp, from, to, -1L);',
            "        Recs w = new Recs();",
            f"        w.add({edge}, ts, null, null, null, null); // as Kafka: the wrapper's key is null",
            f"        e_{st.name}(x, x.out, w, 0, f, 0L, r, from, to);",
            "    }",
            "",
        ])  # fmt: skip


class StructEnc:
    """One ``e_<struct>`` method: the values loaded or derived, then the fields written, then lengths and CRCs
    patched."""

    def __init__(self, g: EncodeGen, st: n.Struct, kind: str):
        self.g, self.st, self.kind = g, st, kind
        self.out: list[str] = []
        self.buf = "o"  # where the fields are being written
        self.at: dict[str, str] = {}  # a position's buffer
        self.tails: list[str] = []  # after the patches: a varint length's scratch put out, innermost first
        self.starts: set[str] = set()
        for f in st.fields:
            c = f.derived
            if isinstance(c, n.Checksum):
                self.starts.add(c.start)
                if c.end is not None:
                    self.starts.add(c.end)

    def say(self, line: str) -> None:
        self.out.append("        " + line)

    def path(self, field: str) -> str:
        return f"{self.st.name}.{field}"

    def signature(self) -> str:
        head = f"    void e_{self.st.name}(Enc x, Out o, Recs r"
        params = "".join(f", long a_{p.name}" for p in self.st.params)
        return (
            head
            + {
                "batch": ", int from, int to, Fields f",
                "message": ", int i, Fields f, long rebase, Recs in, int from, int to",
                "record": ", int i, Fields f",
                "header": ", int i, int j",
            }[self.kind]
            + params
            + ") {"
        )

    def emit(self) -> str:
        if self.st.requires is not None:
            raise Unsupported("a struct with 'requires'")
        blobs = [f for f in self.st.fields if isinstance(f.wire, n.Blob)]
        for f in blobs:
            self._load_blob(f)
        for f in self.st.fields:
            self._load(f)
        for f in self.st.fields:
            if isinstance(f.derived, n.DeltaOf):
                d = f.derived
                self.say(f"long v_{f.name} = {self._long(d.logical, None)} - {self.g.long_expr(d.base, self.st.name)};")
        for w in self.st.wrappers:
            self._wrapper(w)
        for f in self.st.fields:
            self._write(f)
        self._patch()
        return "\n".join([self.signature(), *self.out, "    }", ""])

    # ------------------------------------------------------------------ values
    def _long(self, name: str, default: str | None) -> str:
        """A stored integer value: a row's column, a batch value given (else ``default``)."""
        if self.kind in ("message", "record") and name in ROW_LONGS:
            return ROW_LONGS[name] + (" - rebase" if name == "offset" and self.kind == "message" else "")
        if default is None or self.kind == "header":  # a header is (key, value): nothing else to default
            raise Unsupported(f"the value {self.path(name)} (not a record's)")
        return f'f.get("{name}", {default})' if self.kind in ("batch", "message") else default

    def _load_blob(self, f: n.Field) -> None:
        src = HEADER_BLOBS if self.kind == "header" else ROW_BLOBS if self.kind in ("message", "record") else {}
        if f.name not in src:
            raise Unsupported(f"the bytes {self.path(f.name)} (not a record's)")
        self.say(f"byte[] b_{f.name} = {src[f.name]};")

    def _load(self, f: n.Field) -> None:
        d = f.derived
        if f.bits:
            self._bits(f)
        elif f.const is not None or isinstance(d, (n.LengthOf, n.Checksum, n.DeltaOf)):
            return
        elif isinstance(d, n.CountOf):
            self.say(f"long v_{f.name} = {self._count(d.array)};")
        elif isinstance(d, n.FoldOf):
            fold = self._fold(d.value)
            if d.overridable and self.kind == "batch":
                fold = f'f.has("{f.name}") ? f.get("{f.name}", 0L) : {fold}'
            self.say(f"long v_{f.name} = {fold};")
        elif isinstance(f.wire, (n.Int, n.Varint)):
            if isinstance(f.wire, n.Int) and f.wire.kind != "int":
                raise Unsupported(f"an {f.wire.kind} field")
            self.say(f"long v_{f.name} = {self._long(f.name, _literal(f.default))};")

    def _bits(self, f: n.Field) -> None:
        parts = []
        for bv in f.bits:
            if bv.const is not None:
                v = f"{bv.const}L"
            elif bv.null_marker_for:
                v = f"(b_{bv.null_marker_for} == null ? 1L : 0L)"
            else:
                v = self._long(bv.name, "0L")
            self.say(f"long v_{bv.name} = {v};")
            parts.append(f"((v_{bv.name} << {bv.shift}) & {bv.mask}L)")
        self.say(f"long v_{f.name} = {' | '.join(parts)};")

    def _count(self, array: str) -> str:
        if self.kind == "batch":
            return "(long) (to - from)"
        if self.kind in ("message", "record") and array == "headers":
            return "(long) r.hkeys[i].length"
        raise Unsupported(f"the count of {self.path(array)}")

    def _fold(self, fold: n.Fold) -> str:
        """first, last or max of a record value over the batch's records."""
        if self.kind != "batch":
            raise Unsupported(f"a fold in {self.st.name}")
        elem = self.g.by_name[next(f.wire.elem for f in self.st.fields if isinstance(f.wire, n.ArrayType))]
        member = next((f for f in elem.fields if f.name == fold.member), None)
        col, minus = fold.member, ""
        if member is not None and isinstance(member.derived, n.DeltaOf):  # offset_delta: offset - base
            col = member.derived.logical
            minus = f" - {self.g.long_expr(member.derived.base, self.st.name)}"
        if col not in ROW_LONGS:
            raise Unsupported(f"a fold of {fold.member}")
        dflt = self.g.long_expr(fold.default, self.st.name)
        if fold.func == "max":
            if minus:
                raise Unsupported("the largest of a delta")
            return f"r.max(r.{col}, from, to, {dflt})"
        at = "from" if fold.func == "first" else "to - 1"
        return f"(to > from ? r.{col}[{at}]{minus} : {dflt})"

    def _wrapper(self, w: n.Wrapper) -> None:
        """A legacy wrapper's value: the inner messages (``in``), compressed."""
        if w.struct != self.st.name:
            raise Unsupported("a wrapper of another struct")
        cond = self.g.bool_expr(w.condition, self.st.name)
        rb = "0L" if w.offsets == "absolute" else "in.offset[from]"
        self.say(f"if ({cond} && in != null) {{")
        self.say("    Out t = x.scratch();")
        self.say(f'    Fields fi = f.with("{w.codec.name}", 0L);')
        self.say(f"    for (int k = from; k < to; k++) e_{self.st.name}(x, t, in, k, fi, {rb}, null, 0, 0);")
        self.say(f"    b_{w.source} = x.compressed((int) v_{w.codec.name}, {self.g.f.magic}, t);")
        self.say("    x.release(t);")
        self.say("}")

    # ------------------------------------------------------------------ writing
    def _write(self, f: n.Field) -> None:
        if f.name in self.starts:
            self.say(f"int p_{f.name} = {self.buf}.n;")
            self.at[f.name] = self.buf
        w, d = f.wire, f.derived
        if f.condition is not None:
            if not isinstance(w, n.Blob):
                raise Unsupported("a conditional field other than bytes")
            self.say(f"if ({self.g.bool_expr(f.condition, self.st.name)}) {{")
            self._blob(f, w)
            self.say("}")
        elif isinstance(w, n.Int):
            self._int(f, w, d)
        elif isinstance(w, n.Varint):
            if isinstance(d, n.LengthOf):
                self._varint_length(f, w)
            elif d is not None and not isinstance(d, (n.CountOf, n.FoldOf, n.DeltaOf)):
                raise Unsupported(f"a varint {type(d).__name__}")
            else:
                self.say(f"{self.buf}.{self._varint(w)}(v_{f.name});")
        elif isinstance(w, n.Blob):
            self._blob(f, w)
        elif isinstance(w, n.ArrayType):
            self._array(f, w)
        else:
            raise Unsupported(f"a {type(w).__name__} field")

    def _int(self, f: n.Field, w: n.Int, d: n.Derived | None) -> None:
        op = _WRITE.get(w.width)
        if op is None:
            raise Unsupported(f"a {w.width}-byte integer")
        if isinstance(d, n.Checksum) and d.trailing:
            end = f"p_{d.end}" if d.end is not None else f"{self.buf}.n"
            self.say(f"{self.buf}.{op}(x.{d.algo}({self.at[d.start]}.b, p_{d.start}, {end}));")
        elif isinstance(d, (n.LengthOf, n.Checksum)):
            if w.width != 4:
                raise Unsupported(f"a {w.width}-byte length or CRC")
            self.say(f"int q_{f.name} = {self.buf}.n;")
            self.at[f"q_{f.name}"] = self.buf
            self.say(f"{self.buf}.i32(0L);")
            if isinstance(d, n.LengthOf):
                self.say(f"int s_{f.name} = {self.buf}.n;")
        elif f.const is not None:
            self.say(f"{self.buf}.{op}({f.const}L);")
        else:
            self.say(f"{self.buf}.{op}(v_{f.name});")

    def _varint(self, w: n.Varint) -> str:
        if w.compact:
            raise Unsupported("a compact varint")
        if not w.zigzag:
            return "uvarint"
        return "varint" if w.bits == 32 else "varlong"

    def _varint_length(self, f: n.Field, w: n.Varint) -> None:
        """The region after a varint length goes to a scratch buffer, put out after its length at the end."""
        outer, self.buf = self.buf, f"s_{f.name}"
        self.say(f"Out {self.buf} = x.scratch();")
        self.tails.insert(0, f"{outer}.{self._varint(w)}({self.buf}.n); {outer}.bytes({self.buf}.b, 0, {self.buf}.n); "
                             f"x.release({self.buf});")  # fmt: skip

    def _prefix(self, x: n.Extent, value: str, indent: str = "") -> None:
        if isinstance(x, n.Int) and x.kind == "int" and x.width in _WRITE:
            self.say(f"{indent}{self.buf}.{_WRITE[x.width]}({value});")
        elif isinstance(x, n.Varint):
            self.say(f"{indent}{self.buf}.{self._varint(x)}({value});")
        elif not isinstance(x, n.Rest):
            raise Unsupported(f"a length given by {type(x).__name__}")

    def _blob(self, f: n.Field, w: n.Blob) -> None:
        nm = f.name
        if w.nullable and not isinstance(w.length, n.Rest):
            self.say(f"if (b_{nm} == null) {{")
            self._prefix(w.length, "-1L", "    ")
            self.say("} else {")
        else:
            self.say(f"if (b_{nm} == null) throw new IllegalArgumentException("
                     f'"kafka-log writer: {self.path(nm)}: null is not allowed here");')  # fmt: skip
            self.say("{")
        self._prefix(w.length, f"b_{nm}.length", "    ")
        self.say(f"    {self.buf}.bytes(b_{nm});")
        self.say("}")

    def _array(self, f: n.Field, w: n.ArrayType) -> None:
        if w.size is not None or w.nullable:
            raise Unsupported("a sized or nullable array")
        elem = self.g.by_name[w.elem]
        if not isinstance(w.count, n.CountFrom):
            self._prefix(w.count, self._count(f.name))
        target = self.buf
        if w.compressed_by is not None:
            codec = self.g.long_expr(w.compressed_by, self.st.name)
            target = f"c_{f.name}"
            self.say(f"Out {target} = {codec} != 0 ? x.scratch() : {self.buf};")
        args = "".join(f", {self.g.long_expr(p, self.st.name)}" for p in elem.params)
        if self.kind == "batch":
            self.say(f"for (int i = from; i < to; i++) e_{w.elem}(x, {target}, r, i, f{args});")
        else:
            self.say(f"for (int j = 0; j < r.hkeys[i].length; j++) e_{w.elem}(x, {target}, r, i, j{args});")
        if w.compressed_by is not None:
            self.say(f"if ({target} != {self.buf}) {{")
            self.say(f"    x.compress((int) {codec}, {self.g.f.magic}, {target}, {self.buf});")
            self.say(f"    x.release({target});")
            self.say("}")

    def _patch(self) -> None:
        """Lengths (the bytes after them, to the struct's end), then CRCs over what they cover, then the scratch
        regions after varint lengths put out."""
        for f in self.st.fields:
            if isinstance(f.derived, n.LengthOf) and isinstance(f.wire, n.Int):
                b = self.at[f"q_{f.name}"]
                self.say(f"{b}.patch32(q_{f.name}, {b}.n - s_{f.name});")
        for f in self.st.fields:
            d = f.derived
            if isinstance(d, n.Checksum) and not d.trailing:
                b = self.at[f"q_{f.name}"]
                end = f"p_{d.end}" if d.end is not None else f"{b}.n"
                if self.at[d.start] != b:
                    raise Unsupported("a CRC over a varint length's region")
                self.say(f"{b}.patch32(q_{f.name}, x.{d.algo}({b}.b, p_{d.start}, {end}));")
        for t in self.tails:
            self.say(t)
