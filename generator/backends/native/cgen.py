"""Lowering of the typed IR to C decoders: one ``d_<struct>`` function per struct, straight-line, every check
of the python backend's checked decoder made (bounds, regions, constants, CRCs, enums, counts, limits and
the memory budget before allocating), each failing one answered with ``KF_FALLBACK`` so that the python
backend decodes the same bytes and raises its exact error.  A decoder may fall back more often than
needed (legacy compressed wrappers do, for now), never less."""

from __future__ import annotations

import generator.ir.nodes as n
from generator.backends.native.clower import (
    LIST_SLOTS,
    Lowering,
    Slot,
    StructC,
    Unsupported,
    _camel,
    _refs_of,
    absent,
    c_bytes,
    c_str,
    is_scalar,
    load,
    own_requires,
    py_new,
)
from generator.backends.native.cwire import _WireReads
from generator.ir.empty import absent_bytes
from generator.ir.nodes import Struct


class _StructGen(_WireReads):
    """The body of ``d_<struct>``: fields in wire order, then views, deltas and the value.

    ``mode`` ``columns`` emits ``c_<struct>`` instead, for the Arrow columns (kf_cols): the records of a batch
    and their headers are appended as rows (no object), a batch is built with an empty ``records`` list."""

    def __init__(self, low: Lowering, st: Struct, mode: str = "object"):
        self.low = low
        self.st = st
        self.mode = mode
        self.role = low.column_roles.get(st.name) if mode == "columns" else None
        self.params = [low.param_decl(p) for p in st.params]
        self.lines: list[str] = []
        self.objects: list[str] = []  # owned PyObject* locals, released on every exit but success
        self.scalars: list[str] = []
        self.positions: set[str] = set()
        self.ends = ["end"]
        self.nregion = 0
        self.ptrs: list[str] = []  # blobs kept as pointers into the input (columns)
        names = [f.name for f in st.fields]
        self.region_first = {r.first: r for r in st.regions}
        self.region_last: dict[str, int] = {}  # last field -> how many regions end with it (nested ones may)
        for r in st.regions:
            self.region_last[r.last] = self.region_last.get(r.last, 0) + 1
        for r in st.regions:
            i = names.index(r.length_field)
            if i + 1 >= len(names) or names[i + 1] != r.first:
                raise Unsupported(f"{st.name}: region {r.first} does not follow its length {r.length_field}")
        # checksums: where each is checked (after the field named here is read) and over which range
        self.crc_at: dict[str, list[n.Field]] = {}
        for f in st.fields:
            if isinstance(f.derived, n.Checksum):
                d = f.derived
                # checked once the range is known: its end field reached (or the crc itself, when trailing)
                after = f.name if d.trailing else d.end if d.end else max((d.start, f.name), key=names.index)
                self.crc_at.setdefault(after, []).append(f)
                self.positions.add(d.start)
                if d.trailing:
                    self.positions.add(f.name)
                if d.end:
                    self.positions.add(d.end)

    def w(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    @property
    def end(self) -> str:
        return self.ends[-1]

    def obj(self, name: str) -> str:
        if name not in self.objects:
            self.objects.append(name)
        return name

    def scalar(self, name: str) -> str:
        if name not in self.scalars:
            self.scalars.append(name)
        return name

    # ------------------------------------------------------------------ emission

    def emit(self) -> str:
        st = self.st
        fields = list(st.fields)
        # a version this struct is not defined for: the python backend says so (its own field: once read)
        check = f"if (!{self.low.expr(st.requires, st)}) FALLBACK;" if st.requires is not None else None
        if check and not own_requires(st):
            self.w(check)
            check = None
        i = 0
        while i < len(fields):
            run = self.run_from(fields, i)
            if run:
                self.fixed_run(run)
            else:
                self.one(fields[i])
                self.after_field(fields[i])
                run = [fields[i]]
            i += len(run)
            if check and any(r.name in {f.name for f in run} for r in _refs_of(st.requires)):
                self.w(check)
                check = None
        for v in st.views:
            self.view(v)
        for wr in st.wrappers:
            self.wrapper(wr)
        for f in st.fields:
            if isinstance(f.derived, n.DeltaOf):
                self.w(f"{self.scalar('v_' + f.derived.logical)} = {self.low.expr(f.derived.decoded, st)};")
        return self.render()

    def run_from(self, fields: list[n.Field], i: int) -> list[n.Field]:
        """Consecutive unconditional fixed-width fields from ``i`` within one region: one bounds check."""
        run: list[n.Field] = []
        for f in fields[i:]:
            if not isinstance(f.wire, n.Int) or f.condition is not None:
                break
            if run and f.name in self.region_first:
                break
            run.append(f)
            if f.name in self.region_last or (isinstance(f.derived, n.LengthOf)):
                break
        return run

    def fixed_run(self, run: list[n.Field]) -> None:
        size = sum(f.wire.width for f in run if isinstance(f.wire, n.Int))
        if run[0].name in self.region_first:
            self.open_region(run[0])
        self.w(f"if ({self.end} - pos < {size}) FALLBACK;")
        off = 0
        for f in run:
            assert isinstance(f.wire, n.Int)
            if f.name in self.positions:
                self.w(f"{self.pos_var(f.name)} = pos + {off};")
            if f.wire.kind == "uuid":  # 16 bytes, as they are
                o = self.obj(f"o_{f.name}")
                self.w(f"{o} = PyBytes_FromStringAndSize((const char *)b + pos + {off}, 16);")
                self.w(f"if ({o} == NULL) ERROR;")
            else:
                self.w(f"{self.scalar('v_' + f.name)} = {load(f.wire, f'b + pos + {off}')};")
            off += f.wire.width
        self.w(f"pos += {size};")
        for f in run:
            self.checks(f)
        for f in run:
            self.after_field(f)

    def pos_var(self, name: str) -> str:
        self.positions.add(name)
        return f"p_{name}"

    def open_region(self, f: n.Field) -> None:
        r = self.region_first[f.name]
        e = f"e_{self.nregion}"
        self.nregion += 1
        self.w(f"Py_ssize_t {e} = pos + (Py_ssize_t)v_{r.length_field};")
        self.w(f"if (v_{r.length_field} < 0 || {e} > {self.end}) FALLBACK;")
        self.ends.append(e)

    def after_field(self, f: n.Field) -> None:
        for c in self.crc_at.get(f.name, []):
            self.crc_check(c)
        for _ in range(self.region_last.get(f.name, 0)):
            self.w(f"if (pos != {self.end}) FALLBACK;")
            self.ends.pop()

    def crc_check(self, f: n.Field) -> None:
        d = f.derived
        assert isinstance(d, n.Checksum)
        start = f"p_{d.start}"
        if d.trailing:
            stop = f"p_{f.name}"
        elif d.end is not None:
            stop = f"p_{d.end}"
            self.positions.add(d.end)
        else:  # to the end of the struct's region; without one, of the input it is decoded from
            stop = self.ends[1] if len(self.ends) > 1 else "end"
        self.w(f"if (cx->verify_crc && (int64_t)kf_{d.algo}(b + {start}, {stop} - {start}) != v_{f.name}) FALLBACK;")

    def checks(self, f: n.Field) -> None:
        """Constants and bit views of a fixed-width field just read."""
        if f.const is not None:
            self.w(f"if (v_{f.name} != {f.const}) FALLBACK;")
        for b in f.bits:
            v = self.scalar(f"v_{b.name}")
            raw = f"((v_{f.name} & {b.mask:#x}) >> {b.shift})"
            if b.const is not None:
                self.w(f"if ({raw} != {b.const}) FALLBACK;")
            if b.kind == "enum":
                assert b.enum is not None
                top = max(k for k, _ in self.low.enums[b.enum].values)
                self.w(f"{v} = {raw};")
                self.w(f"if ({v} > {top} || E_{b.enum}[{v}] == NULL) FALLBACK;")
            elif b.kind == "flag":
                self.w(f"{v} = {raw} != 0;")
            else:
                self.w(f"{v} = {raw};")

    def one(self, f: n.Field) -> None:
        wire = f.wire
        if f.name in self.region_first:
            self.open_region(f)
        if f.name in self.positions:
            self.w(f"{self.pos_var(f.name)} = pos;")
        if f.condition is not None and isinstance(wire, (n.Int, n.Varint)) and is_scalar(wire):  # not a uuid
            # present only when the condition holds; absent, the value is None (h_: whether it was read)
            self.scalar(f"h_{f.name}")
            self.w(f"if ({self.low.expr(f.condition, self.st)}) {{")
            self.w(f"h_{f.name} = 1;", 2)
            v = self.scalar(f"v_{f.name}")
            if isinstance(wire, n.Varint):
                self.varint(v, wire, 2)
            else:
                self.w(f"if ({self.end} - pos < {wire.width}) FALLBACK;", 2)
                self.w(f"{v} = {load(wire, 'b + pos')};", 2)
                self.w(f"pos += {wire.width};", 2)
            self.w("}")
            if f.const is not None or f.bits:
                raise Unsupported(f"{self.st.name}.{f.name}: a conditional field with a constant or bits")
            return
        if f.condition is not None:  # absent, its default; present, read as any other
            o, default = self.obj(f"o_{f.name}"), absent(self.st, f)
            self.w(f"{o} = {default};")
            if default != "Py_NewRef(Py_None)":
                self.w(f"if ({o} == NULL) ERROR;")
            self.w(f"if ({self.low.expr(f.condition, self.st)}) {{")
            self.w(f"Py_CLEAR({o});", 2)
            self.value(f, 2)
            self.w("}")
            return
        if isinstance(wire, n.Varint):
            self.varint(f"v_{f.name}", wire, 1)
            self.scalar(f"v_{f.name}")
            self.checks(f)
        else:
            self.value(f, 1)

    def value(self, f: n.Field, depth: int) -> None:
        """A field held as an object: read into ``o_<field>``."""
        wire = f.wire
        if isinstance(wire, n.Int):  # a conditional uuid (the others are read in runs)
            o = self.obj(f"o_{f.name}")
            self.w(f"if ({self.end} - pos < {wire.width}) FALLBACK;", depth)
            self.w(f"{o} = PyBytes_FromStringAndSize((const char *)b + pos, {wire.width});", depth)
            self.w(f"if ({o} == NULL) ERROR;", depth)
            self.w(f"pos += {wire.width};", depth)
        elif isinstance(wire, n.Blob):
            self.blob(f, wire, depth)
        elif isinstance(wire, n.ArrayType):
            self.array(f, wire)
        elif isinstance(wire, n.StructType):
            self.struct_field(f, wire, depth)
        elif isinstance(wire, n.Switch):
            self.switch(f, wire, depth)
        elif isinstance(wire, n.Tagged):
            self.tagged(f, wire)
        else:  # pragma: no cover - every wire type is named above
            raise Unsupported(f"{self.st.name}.{f.name}: {type(wire).__name__}")

    def struct_field(self, f: n.Field, wire: n.StructType, depth: int) -> None:
        """A nested struct; nullable ones behind their null marker (int8 -1 / uvarint 0: null; 1: present)."""
        o = self.obj(f"o_{f.name}")
        if wire.size is not None or (wire.nullable and wire.marker is None):
            raise Unsupported(f"{self.st.name}.{f.name}: a sized struct field")
        if wire.marker is None:
            self.call(wire.name, o, "b", "pos", self.end, "&pos", depth)
            return
        m = self.scalar(f"m_{f.name}")
        if isinstance(wire.marker, n.Varint):
            self.varint(m, wire.marker, depth)
        else:
            self.w(f"if (pos >= {self.end}) FALLBACK;", depth)
            self.w(f"{m} = b[pos++];", depth)
        null = 0 if isinstance(wire.marker, n.Varint) else 255
        self.w(f"if ({m} == {null}) {{", depth)
        self.w(f"{o} = Py_NewRef(Py_None);", depth + 1)
        self.w(f"}} else if ({m} == 1) {{", depth)
        self.call(wire.name, o, "b", "pos", self.end, "&pos", depth + 1)
        self.w("} else FALLBACK;", depth)

    def switch(self, f: n.Field, wire: n.Switch, depth: int) -> None:
        """One of several structs, by the selector's value; any other value falls back (the python backend
        names the known ones)."""
        o = self.obj(f"o_{f.name}")
        self.w(f"switch ({self.low.expr(wire.selector, self.st)}) {{", depth)
        for values, struct in wire.grouped():
            self.w(" ".join(f"case {v}:" for v in values), depth)
            self.call(struct, o, "b", "pos", self.end, "&pos", depth + 1)
            self.w("break;", depth + 1)
        self.w("default:", depth)
        self.w("FALLBACK;", depth + 1)
        self.w("}", depth)

    def tagged(self, f: n.Field, wire: n.Tagged) -> None:
        """A tagged-field section: known tags decoded (each exactly filling its size), the rest kept as
        (tag, bytes); tags in increasing order, as the python backend checks."""
        st, end = self.st, self.end
        o = self.obj(f"o_{f.name}")
        self.w(f"{o} = PyList_New(0);")
        self.w(f"if ({o} == NULL) ERROR;")
        for t in wire.fields:
            if isinstance(t.absent, n.EmptyStruct):  # new Type(): decoded from the bytes of the empty struct
                raw = absent_bytes(self.low.f, t)
                self.w("{")
                self.w("Py_ssize_t a_ = 0; (void)a_;", 2)
                self.call(t.struct, f"o_{t.name}", f"(const uint8_t *){c_bytes(raw)}", "0", str(len(raw)), "&a_", 2)
                self.w("}")
                continue
            self.w(f"{self.obj('o_' + t.name)} = {py_new(t.absent, f'{st.name}.{t.name}')};")
            self.w(f"if (o_{t.name} == NULL) ERROR;")
        self.w("{")
        self.w("uint64_t nt_, tag_, size_;", 2)
        self.w("int64_t last_ = -1;", 2)
        self.w(f"if (kf_uvarint(b, &pos, {end}, 5, &nt_) || (Py_ssize_t)nt_ > ({end} - pos) / 2) FALLBACK;", 2)
        self.w("for (uint64_t t_ = 0; t_ < nt_; t_++) {", 2)
        self.w(f"if (kf_uvarint(b, &pos, {end}, 5, &tag_) || kf_uvarint(b, &pos, {end}, 5, &size_)) FALLBACK;", 3)
        self.w(f"if ((int64_t)tag_ <= last_ || (Py_ssize_t)size_ > {end} - pos) FALLBACK;", 3)
        self.w("last_ = (int64_t)tag_;", 3)
        self.w("Py_ssize_t stop_ = pos + (Py_ssize_t)size_, q_ = pos;", 3)
        self.w("(void)q_;", 3)
        for i, t in enumerate(wire.fields):
            cond = f" && {self.low.expr(t.condition, st)}" if t.condition is not None else ""
            self.w(f"{'else if' if i else 'if'} (tag_ == {t.tag}{cond}) {{", 3)
            self.w(f"Py_CLEAR(o_{t.name});", 4)
            self.call(t.struct, f"o_{t.name}", "b", "pos", "stop_", "&q_", 4)
            self.w("if (q_ != stop_) FALLBACK;", 4)
            self.at_default(t, 4)
            self.w("}", 3)
        for t in wire.fields:  # a known tag not valid at this version: the python backend says so
            if t.condition is not None:
                self.w(f"else if (tag_ == {t.tag}) FALLBACK;", 3)
        self.w(f"{'else ' if wire.fields else ''}if (kf_tag_append({o}, tag_, b + pos, stop_ - pos) < 0) ERROR;", 3)
        self.w("pos = stop_;", 3)
        self.w("}", 2)
        self.w("}")

    def at_default(self, t: n.TaggedField, depth: int) -> None:
        """A tagged field written at the value it is left out at: the python backend keeps the section as read
        (kfmt.runtime.tagged.TagSection), so this decoder hands over."""
        if isinstance(t.absent, n.EmptyStruct):
            raw = absent_bytes(self.low.f, t)
            self.w(
                f"if (stop_ - pos == {len(raw)} && memcmp(b + pos, {c_bytes(raw)}, {len(raw)}) == 0) FALLBACK;", depth
            )
            return
        if t.absent is None:
            self.w(f"if (o_{t.name} == Py_None) FALLBACK;", depth)
            return
        self.w("{", depth)
        self.w(f"PyObject *a_ = {py_new(t.absent, f'{self.st.name}.{t.name}')};", depth + 1)
        self.w(f"int eq_ = a_ == NULL ? -1 : PyObject_RichCompareBool(o_{t.name}, a_, Py_EQ);", depth + 1)
        self.w("Py_XDECREF(a_);", depth + 1)
        self.w("if (eq_ != 0) { PyErr_Clear(); FALLBACK; }", depth + 1)
        self.w("}", depth)

    def wrapper(self, wr: n.Wrapper) -> None:
        """A compressed legacy wrapper: its value decompressed and decoded as inner entries (none of them a
        wrapper again), their offsets rebased and timestamps restamped as the python backend does."""
        st = self.st
        o = self.obj(f"o_{wr.into}")
        slots = [x.name for x in self.low.slots(self.low.by_name[wr.struct])]
        off = f"OFF_{wr.struct}[{slots.index(wr.offset_field)}]"
        src = f"o_{wr.source}"
        codec = self.low.ref(wr.codec, st)
        self.w(f"if ({self.low.expr(wr.condition, st)}) {{")
        d = 2
        self.w(f"if ({src} == Py_None || cx->depth >= cx->max_depth) FALLBACK;", d)
        path = c_str(f"{st.name}.{wr.source}")
        enum = self.low.enum_of(wr.codec)
        self.w(
            f"PyObject *data_ = kf_decompress_call(cx, E_{enum}[{codec}], (const uint8_t *)PyBytes_AS_STRING({src}), "
            f"PyBytes_GET_SIZE({src}), -1, {path});",
            d,
        )
        self.w("if (data_ == NULL) { rc_ = kf_error_or_fallback(); goto done; }", d)
        self.w("const uint8_t *db_ = (const uint8_t *)PyBytes_AS_STRING(data_);", d)
        self.w("Py_ssize_t dp_ = 0, de_ = PyBytes_GET_SIZE(data_);", d)
        self.w(f"long long cap_ = (cx->max_memory - de_) / {wr.cost};", d)
        self.w("if (cap_ > cx->max_records) cap_ = cx->max_records;", d)
        self.w(f"{o} = PyList_New(0);", d)
        self.w(f"if ({o} == NULL) {{ Py_DECREF(data_); ERROR; }}", d)
        self.w("int bad_ = 0;", d)
        self.w("cx->depth++;", d)
        self.w("while (dp_ < de_) {", d)
        self.w(f"if (PyList_GET_SIZE({o}) >= cap_) {{ bad_ = 1; break; }}", d + 1)
        self.w("PyObject *item_ = NULL;", d + 1)
        args = self.low.args(wr.struct, st)
        self.w(f"int r_ = d_{wr.struct}(cx, db_, dp_, de_{args}, &item_, &dp_);", d + 1)
        self.w("if (r_ != KF_OK) { bad_ = r_; break; }", d + 1)
        self.w(f"int a_ = PyList_Append({o}, item_);", d + 1)
        self.w("Py_DECREF(item_);", d + 1)
        self.w("if (a_ < 0) { bad_ = KF_ERROR; break; }", d + 1)
        self.w("}", d)
        self.w("cx->depth--;", d)
        self.w("Py_DECREF(data_);", d)
        self.w("if (bad_ == KF_ERROR) ERROR;", d)
        self.w(f"if (bad_ || PyList_GET_SIZE({o}) == 0) FALLBACK;", d)
        # offsets: absolute as they are; relative to the first, plus the wrapper's; relative to the last, rebased
        mine = f"v_{wr.offset_field}"
        if wr.offsets != "absolute":
            self.w("int64_t base_ = 0;", d)
            if wr.offsets == "relative_to_first":
                self.w(f"base_ = {mine};", d)
            else:
                self.w("int64_t last_;", d)
                self.w(
                    f"PyObject *lo_ = *(PyObject **)((char *)PyList_GET_ITEM({o}, PyList_GET_SIZE({o}) - 1) + {off});",
                    d,
                )
                self.w("if (lo_ == NULL || kf_as_i64(lo_, &last_)) FALLBACK;", d)
                self.w(f"if ({mine} == 0) base_ = 0;", d)
                self.w(f"else if ({mine} < last_) FALLBACK;", d)
                self.w(f"else if (__builtin_sub_overflow({mine}, last_, &base_)) FALLBACK;", d)
            self.w(f"for (Py_ssize_t i_ = 0; i_ < PyList_GET_SIZE({o}); i_++) {{", d)
            self.w(f"PyObject *m_ = PyList_GET_ITEM({o}, i_);", d + 1)
            self.w(f"PyObject *x_ = *(PyObject **)((char *)m_ + {off});", d + 1)
            self.w("int64_t v_;", d + 1)
            self.w("if (x_ == NULL || kf_as_i64(x_, &v_) || __builtin_add_overflow(v_, base_, &v_)) FALLBACK;", d + 1)
            self.w("PyObject *nv_ = PyLong_FromLongLong(v_);", d + 1)
            self.w("if (nv_ == NULL) ERROR;", d + 1)
            self.w(f"kf_set_slot(m_, {off}, nv_);", d + 1)
            self.w("}", d)
        if wr.timestamps_from is not None and wr.timestamps_when is not None:
            t = wr.timestamps_from
            toff = f"OFF_{wr.struct}[{slots.index(t)}]"
            woff = f"OFF_{wr.struct}[{slots.index('wire_' + t)}]"
            self.w(f"if ({self.low.expr(wr.timestamps_when, st)}) {{", d)
            self.w(f"for (Py_ssize_t i_ = 0; i_ < PyList_GET_SIZE({o}); i_++) {{", d + 1)
            self.w(f"PyObject *m_ = PyList_GET_ITEM({o}, i_);", d + 2)
            self.w(f"PyObject *t_ = *(PyObject **)((char *)m_ + {toff});", d + 2)
            self.w("PyObject *nt_ = PyLong_FromLongLong(v_" + t + ");", d + 2)
            self.w("if (t_ == NULL || nt_ == NULL) { Py_XDECREF(nt_); FALLBACK; }", d + 2)
            self.w(f"kf_set_slot(m_, {woff}, Py_NewRef(t_));", d + 2)
            self.w(f"kf_set_slot(m_, {toff}, nt_);", d + 2)
            self.w("}", d + 1)
            self.w("}", d)
        self.w("} else {")
        self.w(f"{o} = Py_NewRef(Py_None);", 2)
        self.w("}")

    def view(self, v: n.View) -> None:
        st = self.st
        o = self.obj(f"o_{v.name}")
        src = f"o_{v.source}"
        if v.source in self.ptrs:  # checked as the python backend checks it; the value is not a column
            inner = self.low.by_name[v.struct]
            cond = self.low.expr(v.condition, st) if v.condition is not None else "1"
            self.w(f"if ({cond}) {{")
            self.w(f"if (n_{v.source} < {max(inner.min_size, 0)}) FALLBACK;", 2)
            self.w("Py_ssize_t vend_;", 2)
            self.call(v.struct, o, f"bp_{v.source}", "0", f"n_{v.source}", "&vend_", 2)
            self.w("}")
            return
        inner = self.low.by_name[v.struct]
        cond = self.low.expr(v.condition, st) if v.condition is not None else "1"
        self.w(f"if ({cond}) {{")
        self.w(f"if ({src} == Py_None || PyBytes_GET_SIZE({src}) < {max(inner.min_size, 0)}) FALLBACK;", 2)
        self.w("Py_ssize_t vend_;", 2)
        self.call(
            v.struct, o, f"(const uint8_t *)PyBytes_AS_STRING({src})", "0", f"PyBytes_GET_SIZE({src})", "&vend_", 2
        )
        self.w("} else {")
        self.w(f"{o} = Py_NewRef(Py_None);", 2)
        self.w("}")

    def render(self) -> str:
        st = self.st
        head = [f"    int64_t {s} = 0;" for s in self.scalars]
        head += [f"    Py_ssize_t p_{p} = 0;" for p in sorted(self.positions)]
        head += [f"    PyObject *{o} = NULL;" for o in self.objects]
        head += [f"    const uint8_t *bp_{x} = NULL;" for x in self.ptrs]
        head.append("    int rc_ = KF_FALLBACK;")
        unused = [f"(void)p_{p};" for p in sorted(self.positions)] + [f"(void){s};" for s in self.scalars]
        head.append("    " + " ".join(unused + ["(void)cx;"]))
        build = self.build()
        free = [f"    Py_XDECREF({o});" for o in self.objects]
        params = "".join(f", {p}" for p in self.params)
        sig = (
            f"static int {'c' if self.mode == 'columns' else 'd'}_{st.name}(kf_ctx *cx, const uint8_t *b, Py_ssize_t pos, Py_ssize_t end{params}, "
            "PyObject **out, Py_ssize_t *npos)"
        )
        return "\n".join([sig + " {", *head, *self.lines, *build, "done:", *free, "    return rc_;", "}", ""])

    def build(self) -> list[str]:
        st = self.st
        if self.role == "header":
            return [
                "    { int r_ = kf_cols_header(cx->cols, bp_key, n_key, bp_value, n_value);",
                "    if (r_ < 0) ERROR;",
                "    if (r_) FALLBACK; }",
                "    *out = NULL;",
                "    *npos = pos;",
                "    return KF_OK;",
            ]
        if self.role == "record":
            ts = ("1", "v_timestamp") if "timestamp" in self.low.scalar_names(st) else ("0", "0")
            return [
                f"    {{ int r_ = kf_cols_row(cx->cols, v_offset, {ts[0]}, {ts[1]}, bp_key, n_key, bp_value, n_value);",
                "    if (r_ < 0) ERROR;",
                "    if (r_) FALLBACK; }",
                "    *out = NULL;",
                "    *npos = pos;",
                "    return KF_OK;",
            ]
        slots = self.low.slots(st)
        lines = []
        if st.repr == "value":  # its one field's value
            lines += self.take(slots[0], "*out = x_;", "")
            return lines + ["    *npos = pos;", "    return KF_OK;"]
        if st.repr == "tuple":
            lines.append(f"    PyObject *v_ = PyTuple_New({len(slots)});")
            lines.append("    if (v_ == NULL) ERROR;")
            for i, s in enumerate(slots):
                lines += self.take(s, f"PyTuple_SET_ITEM(v_, {i}, x_);")
        else:
            lines.append(f"    PyObject *v_ = T_{st.name}->tp_alloc(T_{st.name}, 0);")
            lines.append("    if (v_ == NULL) ERROR;")
            for i, s in enumerate(slots):
                lines += self.take(s, f"kf_set_slot(v_, OFF_{st.name}[{i}], x_);")
            lines.append(f"    if (kf_fill_extra(v_, X_{st.name}, NX_{st.name}) < 0) {{ Py_DECREF(v_); ERROR; }}")
        lines += ["    *out = v_;", "    *npos = pos;", "    return KF_OK;"]
        return lines

    def take(self, s: Slot, store: str, release: str = "Py_DECREF(v_); ") -> list[str]:
        if s.value.startswith("o_") and s.name in LIST_SLOTS and not s.blob:  # a null list reads as [], as in python
            return [
                "    {",
                f"    PyObject *x_ = {s.value};",
                f"    {s.value} = NULL;",
                "    if (x_ == Py_None) { Py_DECREF(x_); x_ = PyList_New(0); }",
                f"    if (x_ == NULL) {{ {release}ERROR; }}",
                f"    {store}",
                "    }",
            ]
        if s.value.startswith("o_"):
            return ["    {", f"    PyObject *x_ = {s.value};", f"    {s.value} = NULL;", f"    {store}", "    }"]
        return [
            "    {",
            f"    PyObject *x_ = {s.value};",
            f"    if (x_ == NULL) {{ {release}ERROR; }}",
            f"    {store}",
            "    }",
        ]


def struct_c(low: Lowering, st: Struct) -> StructC:
    """A struct's decoder in C, with its slots and C types."""
    g = _StructGen(low, st)
    cls = _camel(st.name) if st.repr == "object" else ""
    return StructC(st.name, cls, g.params, g.emit(), low.slots(st), low.extra(st))


def columns(low: Lowering) -> list[tuple[str, list[str], str]]:
    """The Arrow-direct decoders ``c_<struct>`` (name, params, code), the root last; empty where the format has
    no records to make rows of."""
    if not low.column_roles:
        return []
    out = []
    for st in low.f.structs:
        if st.name in low.column_roles or st.name == low.f.root:
            g = _StructGen(low, st, "columns")
            out.append((st.name, g.params, g.emit()))
    return out
