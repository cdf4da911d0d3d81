"""Lowering of the typed IR to C encoders: one ``e_<struct>`` function per struct, writing what the python
backend's encoder writes, byte for byte.  Values are read as the python backend reads them (the format's
own class: its slots; the runtime base class: its slots and the format's defaults; anything else:
``getattr`` with the default).  Whatever the python backend would refuse, and whatever this lowering does
not handle (compressed legacy wrappers, control keys built from their view), answers ``KF_FALLBACK``: the
python backend then encodes the value and raises its exact error.

One file (past 600 lines) because it is one thing, the encoders, as :mod:`.cgen` is the decoders: each wire
type's writer and its fallback sit together, and splitting them would split pairs that must change together.
"""

from __future__ import annotations

import hashlib

import generator.ir.nodes as n
from generator.backends.native.clower import Lowering, Unsupported, c_bytes, own_requires, py_new
from generator.ir.empty import absent_bytes

_RANGE = {
    (1, True): (-128, 127),
    (1, False): (0, 255),
    (2, True): (-(2**15), 2**15 - 1),
    (2, False): (0, 2**16 - 1),
    (4, True): (-(2**31), 2**31 - 1),
    (4, False): (0, 2**32 - 1),
}


def _not_encoded(st: n.Struct) -> str | None:
    """What this backend's encoder does not lower (the python backend's encoder then writes the format; its
    decoder may still be native)."""
    for f in st.fields:
        w = f.wire
        if isinstance(w, n.StructType) and (w.size is not None or (w.nullable and w.marker is None)):
            return f"{st.name}.{f.name}: a sized struct field"
    return None


def _null_count(x: object) -> bool:
    """A count prefix a null array is written in: -1 (a fixed-width integer), 0 (compact)."""
    return (isinstance(x, n.Varint) and x.compact) or (isinstance(x, n.Int) and x.signed)


def _lit(v: int) -> str:
    return "INT64_MIN" if v == -(2**63) else f"INT64_C({v})"


class EncGen:
    """The body of ``e_<struct>(w, obj, index, params...)``."""

    def __init__(self, low: Lowering, st: n.Struct, base_slots: tuple[str, ...]):
        why = _not_encoded(st)
        if why:
            raise Unsupported(why)
        self.low = low
        self.st = st
        self.base = set(base_slots) if st.role in ("record", "message") and st.repr == "object" else set()
        self.lines: list[str] = []
        self.objs: list[str] = []  # new references, released on every exit
        self.names: set[str] = set()  # attribute names read through getattr (interned N_<name>)
        self.scalars: list[str] = []
        self.base_used: set[str] = set()  # runtime base-class slots read (BOFF_<name>)
        self.consts: set[int] = set()  # integer defaults (K_<n>, created once)
        self.objconsts: dict[str, str] = {}  # other constants (O_<n>: a tagged field's absent value), C expressions
        self.model = [s.name for s in low.slots(st)]
        names = [f.name for f in st.fields]
        self.index = {nm: i for i, nm in enumerate(names)}
        if any(isinstance(f.derived, n.LengthOf) and isinstance(f.wire, n.Varint) for f in st.fields) and any(
            isinstance(f.derived, n.Checksum) and not f.derived.trailing for f in st.fields
        ):
            raise Unsupported(f"{st.name}: a checksum patched after a varint length")

    def w(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    def scalar(self, name: str) -> str:
        if name not in self.scalars:
            self.scalars.append(name)
        return name

    # ------------------------------------------------------------------ loading values

    def load(self, var: str, attr: str, default: str) -> None:
        """``var`` = a new reference to the value of ``attr`` (NULL: fall back)."""
        self.objs.append(var)
        st = self.st
        if st.repr == "value":  # a struct of one field: the value is the field's
            self.w(f"{var} = Py_NewRef(obj);")
            return
        if st.repr == "tuple":
            self.w(f"{var} = Py_NewRef(PyTuple_GET_ITEM(obj, {self.model.index(attr)}));")
            return
        own = self.model.index(attr) if attr in self.model else None
        if attr in self.base:
            self.names.add(attr)
            self.base_used.add(attr)
            self.w(f"{var} = kf_base_slot(obj, BOFF_{attr}, N_{attr});")
        elif own is not None:
            self.names.add(attr)
            self.w(f"{var} = own_ ? kf_own_slot(obj, OFF_{st.name}[{own}]) : kf_getattr(obj, N_{attr}, {default});")
        else:
            self.names.add(attr)
            self.w(f"{var} = kf_getattr(obj, N_{attr}, {default});")
        self.w(f"if ({var} == NULL) FALLBACK;")

    def default(self, f: n.Field | None, c: n.Const | n.EnumConst | None) -> str:
        if isinstance(c, n.EnumConst):
            return f"E_{c.enum}[{c.value}]"
        if c is None or c.value is None:
            return "Py_None"
        if isinstance(c.value, bool):
            return "Py_True" if c.value else "Py_False"
        if isinstance(c.value, (float, str, bytes)):  # missing from a foreign object: the python backend decides
            return "NULL"
        return self.const(c.value)

    def const(self, v: int) -> str:
        self.consts.add(v)
        return f"K_{'m' if v < 0 else ''}{abs(v)}"

    def int_of(self, var: str, obj: str) -> None:
        self.w(f"if (kf_as_i64({obj}, &{self.scalar(var)})) FALLBACK;")

    # ------------------------------------------------------------------ the body

    def emit(self) -> str:
        st = self.st
        if own_requires(st):
            raise Unsupported(f"{st.name}: requires on its own field")  # the python encoder checks it
        if st.requires is not None:  # a version this struct is not defined for: the python backend says so
            self.w(f"if (!{self.low.expr(st.requires, st)}) FALLBACK;")
        if st.repr == "tuple":
            self.w(f"if (!PyTuple_CheckExact(obj) || PyTuple_GET_SIZE(obj) != {len(self.model)}) FALLBACK;")
        elif st.repr == "object":
            self.w(f"int own_ = Py_IS_TYPE(obj, T_{st.name});")
            self.w("(void)own_;")
        self.load_stored()  # 1. the stored values
        self.derive()  # 2. what is derived before writing
        self.write_fields()  # 3. write
        return self.render()

    def load_stored(self) -> None:
        """The value's stored fields (derived ones are computed, constants written); plain integers as int64."""
        st = self.st
        for f in st.fields:
            d = f.derived
            if f.bits:
                for b in f.bits:
                    self.load(f"l_{b.name}", b.name, self.bit_default(b))
            elif f.const is not None or isinstance(d, (n.LengthOf, n.CountOf, n.Checksum)):
                continue
            elif isinstance(d, n.DeltaOf):
                self.load(f"l_{d.logical}", d.logical, "Py_None")
                if isinstance(d.decoded, n.Choose):
                    self.load(f"l_{f.name}_kept", f.name, "Py_None")
            elif isinstance(f.wire, n.Tagged):  # the unknown tags, then each named one (None when missing)
                self.load(f"l_{f.name}", f.name, "Py_None")
                for t in f.wire.fields:
                    self.load(f"l_{t.name}", t.name, "Py_None")
            else:
                self.load(f"l_{f.name}", f.name, self.default(f, f.default))
        for wr in st.wrappers:
            self.load(f"l_{wr.into}", wr.into, "Py_None")
            self.w(f"if (l_{wr.into} != Py_None) FALLBACK; /* a compressed wrapper: the python backend */")
        for v in st.views:
            self.load(f"l_{v.name}", v.name, "Py_None")
            self.w(f"if (l_{v.name} != Py_None && l_{v.source} == Py_None) FALLBACK; /* a key built from its view */")
        if st.name in self.low.wrapped_by:
            o = self.low.wrapped_by[st.name]
            self.w(
                f"if (l_{o} == Py_None) {{ Py_SETREF(l_{o}, PyLong_FromLongLong(index)); if (l_{o} == NULL) ERROR; }}"
            )
        for f in st.fields:
            self.checked_input(f)

    def checked_input(self, f: n.Field) -> None:
        """A plain integer as an int64 (what struct.pack and the varint writers accept); an array as a list."""
        plain = f.const is None and not f.bits and f.derived is None
        if isinstance(f.wire, n.Int) and f.wire.kind != "int":
            return  # bool, float64, uuid: checked where written
        if plain and isinstance(f.wire, (n.Int, n.Varint)):
            if f.condition is not None:
                self.w(f"if (l_{f.name} != Py_None && kf_as_i64(l_{f.name}, &{self.scalar('v_' + f.name)})) FALLBACK;")
            else:
                self.int_of(f"v_{f.name}", f"l_{f.name}")
        w = f.wire
        if f.condition is not None:
            return  # absent in some versions: checked where written (arrays), as the python backend does
        if isinstance(w, n.ArrayType) and not (w.nullable and (w.size is not None or _null_count(w.count))):
            self.w(f"if (!PyList_CheckExact(l_{f.name}) && !PyTuple_CheckExact(l_{f.name})) FALLBACK;")

    def derive(self) -> None:
        """Counts, first/last/max values, bit fields and deltas, before anything is written."""
        fields = self.st.fields
        for f in fields:
            d = f.derived
            if isinstance(d, n.CountOf):
                self.w(f"{self.scalar('v_' + f.name)} = PySequence_Fast_GET_SIZE(l_{d.array});")
            elif isinstance(d, n.FoldOf):
                self.fold(f, d)
        for f in fields:
            if f.bits:
                self.pack_bits(f)
        for f in fields:
            if isinstance(f.derived, n.DeltaOf):
                self.delta(f, f.derived)

    def write_field(self, f: n.Field, depth: int, regions: list, crcs: list) -> None:
        """One field's bytes; a length or a leading CRC written as a placeholder, patched after."""
        d, wire = f.derived, f.wire
        if isinstance(wire, n.Int):
            self.write_int(f, wire, depth, regions, crcs)
        elif isinstance(wire, n.Varint):
            if isinstance(d, n.LengthOf):
                regions.append((f, "varint"))
                self.w("if (kf_w_reserve(w, 1)) ERROR;", depth)
                self.w("w->n += 1;", depth)
            else:
                self.put_varint(wire, f"v_{f.name}", depth)
        elif isinstance(wire, n.Blob):
            self.blob(f, wire, depth)
        elif isinstance(wire, n.ArrayType):
            self.array(f, wire, depth)
        elif isinstance(wire, n.StructType):
            self.struct_field(f, wire, depth)
        elif isinstance(wire, n.Switch):
            self.switch(f, wire, depth)
        elif isinstance(wire, n.Tagged):
            self.tagged(f, wire, depth)

    def struct_field(self, f: n.Field, wire: n.StructType, depth: int) -> None:
        """A nested struct; a nullable one behind its marker (int8 -1 / uvarint 0: null; 1: present)."""
        call = f"if ((rc_ = e_{wire.name}(w, l_{f.name}, 0{self.args(wire.name)})) != KF_OK) goto done;"
        if wire.marker is None:
            self.w(call, depth)
            return
        null = "0" if isinstance(wire.marker, n.Varint) else "0xFF"
        self.w("if (kf_w_reserve(w, 1)) ERROR;", depth)
        self.w(f"w->p[w->n++] = (char)(l_{f.name} == Py_None ? {null} : 1);", depth)
        self.w(f"if (l_{f.name} != Py_None) {{", depth)
        self.w(call, depth + 1)
        self.w("}", depth)

    def switch(self, f: n.Field, wire: n.Switch, depth: int) -> None:
        """The struct the selector names, the value of its class (a nested switch: any); else fall back."""
        self.w(f"switch ({self.low.expr(wire.selector, self.st)}) {{", depth)
        for values, struct in wire.grouped():
            self.w(" ".join(f"case {v}:" for v in values), depth)
            if self.low.by_name[struct].repr == "object":
                self.w(f"if (!Py_IS_TYPE(l_{f.name}, T_{struct})) FALLBACK;", depth + 1)
            self.w(f"if ((rc_ = e_{struct}(w, l_{f.name}, 0{self.args(struct)})) != KF_OK) goto done;", depth + 1)
            self.w("break;", depth + 1)
        self.w("default:", depth)
        self.w("FALLBACK;", depth + 1)
        self.w("}", depth)

    def tagged(self, f: n.Field, wire: n.Tagged, depth: int) -> None:
        """The tagged-field section: each named field not None and not at its absent value (and present in this
        version), encoded into a buffer of its own; then merged with the unknown tags (kf_w_tagged)."""
        k, d = max(len(wire.fields), 1), depth + 1
        self.w("{", depth)
        self.w(f"kf_w t_[{k}];", d)
        self.w("memset(t_, 0, sizeof t_);", d)
        self.w(f"int has_[{k}] = {{0}};", d)
        self.w(f"const int64_t tags_[{k}] = {{{', '.join(str(t.tag) for t in wire.fields) or '0'}}};", d)
        self.w("int r_ = 0;", d)
        for i, t in enumerate(wire.fields):
            cond = f" && {self.low.expr(t.condition, self.st)}" if t.condition is not None else ""
            lv = f"l_{t.name}"
            if isinstance(t.absent, n.EmptyStruct):  # encoded (a null too), left out when it is the empty struct
                raw = absent_bytes(self.low.f, t)
                self.w(f"if (r_ == 0{cond} && (r_ = e_{t.struct}(&t_[{i}], {lv}, 0{self.args(t.struct)})) == KF_OK)", d)
                self.w(f"has_[{i}] = !(t_[{i}].n == {len(raw)} && memcmp(t_[{i}].p, {c_bytes(raw)}, {len(raw)}) == 0);",
                       d + 1)  # fmt: skip
                continue
            self.w(f"if (r_ == 0 && {lv} != Py_None{cond}) {{", d)
            self.w(f"int ne_ = PyObject_RichCompareBool({lv}, {self.obj_const(t.absent)}, Py_NE);", d + 1)
            self.w("if (ne_ < 0) { PyErr_Clear(); r_ = KF_FALLBACK; }", d + 1)
            self.w(f"else if (ne_ && (r_ = e_{t.struct}(&t_[{i}], {lv}, 0{self.args(t.struct)})) == KF_OK) has_[{i}] = 1;",
                   d + 1)  # fmt: skip
            self.w("}", d)
        self.w(f"if (r_ == 0) {{ int x_ = kf_w_tagged(w, {len(wire.fields)}, tags_, t_, has_, l_{f.name});", d)
        self.w("r_ = x_ < 0 ? KF_ERROR : x_ ? KF_FALLBACK : KF_OK; }", d)
        self.w(f"for (int i_ = 0; i_ < {k}; i_++) kf_w_free(&t_[i_]);", d)
        self.w("if (r_ != KF_OK) { rc_ = r_; goto done; }", d)
        self.w("}", depth)

    def obj_const(self, value: object) -> str:
        """A constant object (created once): None, a bool, an int, or another value py_new builds."""
        if value is None:
            return "Py_None"
        if isinstance(value, bool):
            return "Py_True" if value else "Py_False"
        if isinstance(value, int) and -(2**63) < value < 2**63:
            return self.const(value)
        expr = py_new(value, self.st.name)
        name = f"O_{hashlib.sha256(expr.encode()).hexdigest()[:12]}"
        self.objconsts[name] = expr
        return name

    def write_int(self, f: n.Field, wire: n.Int, depth: int, regions: list, crcs: list) -> None:
        d = f.derived
        if wire.kind != "int":
            self.write_scalar(f"l_{f.name}", wire, depth)
        elif isinstance(d, n.LengthOf):
            regions.append((f, "fixed"))
            self.put_int(wire, "0", depth)
        elif isinstance(d, n.Checksum) and not d.trailing:
            crcs.append(f)
            self.put_int(wire, "0", depth)
        elif isinstance(d, n.Checksum):
            self.put_int(wire, f"(int64_t)kf_{d.algo}((const uint8_t *)w->p + p_{d.start}, w->n - p_{d.start})", depth)
        elif f.const is not None:
            self.put_int(wire, str(f.const), depth)
        else:
            self.put_int(wire, f"v_{f.name}", depth, checked=not f.bits)

    def write_scalar(self, lv: str, wire: n.Int, depth: int) -> None:
        """A bool (its truth, as struct's "?" packs it), a float64 (a float; an int falls back) or a uuid (16
        bytes; a uuid.UUID falls back)."""
        if wire.kind == "bool":
            self.w(f"{{ int t_ = PyObject_IsTrue({lv}); if (t_ < 0) {{ PyErr_Clear(); FALLBACK; }}", depth)
            self.w("if (kf_w_reserve(w, 1)) ERROR;", depth)
            self.w("w->p[w->n++] = (char)t_; }", depth)
        elif wire.kind == "float64":
            self.w(f"if (!PyFloat_CheckExact({lv})) FALLBACK;", depth)
            self.w("if (kf_w_reserve(w, 8)) ERROR;", depth)
            self.w(f"kf_put_be(w->p + w->n, 8, kf_double_bits(PyFloat_AS_DOUBLE({lv})));", depth)
            self.w("w->n += 8;", depth)
        else:
            self.w(f"if (!PyBytes_CheckExact({lv}) || PyBytes_GET_SIZE({lv}) != 16) FALLBACK;", depth)
            self.w(f"if (kf_w_put(w, PyBytes_AS_STRING({lv}), 16)) ERROR;", depth)

    def bit_default(self, b: n.BitView) -> str:
        if b.kind == "enum":
            assert b.enum is not None
            first = dict(self.low.enums[b.enum].values).get(0)
            return "E_{}[0]".format(b.enum) if first is not None else "Py_None"
        return "Py_False" if b.kind == "flag" else self.const(0)

    def fold(self, f: n.Field, d: n.FoldOf) -> None:
        fold = d.value
        arr = f"l_{fold.array.name}"
        v = self.scalar(f"v_{f.name}")
        elem = self.array_elem(fold.array.name)
        member = next((x for x in self.low.by_name[elem].fields if x.name == fold.member), None)
        default = (
            self.low.expr(fold.default, self.st) if not isinstance(fold.default, n.Const) else str(fold.default.value)
        )
        self.w(f"if (l_{f.name} != Py_None) {{")
        self.w(f"if (kf_as_i64(l_{f.name}, &{v})) FALLBACK;", 2)
        self.w(f"}} else if (PySequence_Fast_GET_SIZE({arr}) == 0) {{")
        self.w(f"{v} = {default};", 2)
        self.w("} else {")
        items = f"PySequence_Fast_ITEMS({arr})"
        last = f"{items}[PySequence_Fast_GET_SIZE({arr}) - 1]"
        if member is not None and isinstance(member.derived, n.DeltaOf):
            if fold.func != "last":
                raise Unsupported(f"{self.st.name}.{f.name}: {fold.func} of a delta")
            dd = member.derived
            base = self.low.expr(dd.base, self.low.by_name[elem]).replace("a_", "v_")
            self.w("PyObject *m_ = " + self.elem_attr(elem, last, dd.logical) + ";", 2)
            self.w("if (m_ == NULL) FALLBACK;", 2)
            self.w(f"if (m_ == Py_None) {{ {v} = PySequence_Fast_GET_SIZE({arr}) - 1; Py_DECREF(m_); }}", 2)
            self.w("else {", 2)
            self.w("int64_t x_;", 3)
            self.w("int bad_ = kf_as_i64(m_, &x_);", 3)
            self.w("Py_DECREF(m_);", 3)
            self.w(f"if (bad_ || __builtin_sub_overflow(x_, {base}, &{v})) FALLBACK;", 3)
            self.w("}", 2)
        elif fold.func in ("first", "last"):
            src = f"{items}[0]" if fold.func == "first" else last
            self.w("PyObject *m_ = " + self.elem_attr(elem, src, fold.member) + ";", 2)
            self.w("if (m_ == NULL) FALLBACK;", 2)
            self.w(f"int bad_ = kf_as_i64(m_, &{v});", 2)
            self.w("Py_DECREF(m_);", 2)
            self.w("if (bad_) FALLBACK;", 2)
        else:
            self.w(f"for (Py_ssize_t i_ = 0; i_ < PySequence_Fast_GET_SIZE({arr}); i_++) {{", 2)
            self.w("PyObject *m_ = " + self.elem_attr(elem, f"{items}[i_]", fold.member) + ";", 3)
            self.w("if (m_ == NULL) FALLBACK;", 3)
            self.w("int64_t x_;", 3)
            self.w("int bad_ = kf_as_i64(m_, &x_);", 3)
            self.w("Py_DECREF(m_);", 3)
            self.w("if (bad_) FALLBACK;", 3)
            self.w(f"if (i_ == 0 || x_ > {v}) {v} = x_;", 3)
            self.w("}", 2)
        self.w("}")

    def array_elem(self, name: str) -> str:
        f = self.st.field(name)
        assert isinstance(f.wire, n.ArrayType)
        return f.wire.elem

    def elem_attr(self, elem: str, item: str, attr: str) -> str:
        """A new reference to attribute ``attr`` of element ``item`` of struct ``elem`` (NULL: fall back)."""
        est = self.low.by_name[elem]
        self.names.add(attr)
        base = attr in self.low.base_slots and est.role in ("record", "message") and est.repr == "object"
        if base:
            self.base_used.add(attr)
            return f"kf_base_slot({item}, BOFF_{attr}, N_{attr})"
        slots = [s.name for s in self.low.slots(est)]
        if est.repr == "object" and attr in slots:
            return f"(Py_IS_TYPE({item}, T_{elem}) ? kf_own_slot({item}, OFF_{elem}[{slots.index(attr)}]) : kf_getattr({item}, N_{attr}, NULL))"
        return f"kf_getattr({item}, N_{attr}, NULL)"

    def pack_bits(self, f: n.Field) -> None:
        v = self.scalar(f"v_{f.name}")
        self.w(f"{v} = 0;")
        for b in f.bits:
            bv = self.scalar(f"v_{b.name}")
            lv = f"l_{b.name}"
            if b.kind == "enum":
                assert b.enum is not None
                top = max(k for k, _ in self.low.enums[b.enum].values)
                if b.const is not None:
                    self.w(f"if ({lv} != Py_None && kf_enum_id(E_{b.enum}, {top}, {lv}) != {b.const}) FALLBACK;")
                    self.w(f"{bv} = {b.const};")
                else:
                    self.w(f"if (({bv} = kf_enum_id(E_{b.enum}, {top}, {lv})) < 0) FALLBACK;")
            elif b.const is not None:
                self.w(f"{bv} = {int(b.const != 0) if b.kind == 'flag' else b.const};")
            elif b.null_marker_for is not None:
                self.w(f"{bv} = l_{b.null_marker_for} == Py_None;")
            elif b.kind == "flag":
                self.w(f"if (({bv} = PyObject_IsTrue({lv})) < 0) {{ PyErr_Clear(); FALLBACK; }}")
            else:
                self.w(f"if ({lv} == Py_None) {bv} = 0;")
                self.w(f"else if (kf_as_i64({lv}, &{bv})) FALLBACK;")
                self.w(f"else if (!PyObject_IsTrue({lv})) {bv} = 0;")
            if b.kind == "int" and b.const is None and b.null_marker_for is None:
                self.w(f"{v} |= (int64_t)(((uint64_t){bv} << {b.shift}) & {b.mask:#x});")
            else:
                self.w(f"{v} |= (int64_t)((uint64_t){bv} << {b.shift});")

    def delta(self, f: n.Field, d: n.DeltaOf) -> None:
        v = self.scalar(f"v_{f.name}")
        base = self.low.expr(d.base, self.st)
        logical = f"l_{d.logical}"
        self.w("{")
        self.w("int64_t x_;", 2)
        if isinstance(d.decoded, n.Choose):
            cond = self.low.expr(d.decoded.cond, self.st)
            self.w(f"if (({cond}) && l_{f.name}_kept != Py_None) {{", 2)
            self.w(f"if (kf_as_i64(l_{f.name}_kept, &{v})) FALLBACK;", 3)
            self.w(f"}} else if (kf_as_i64({logical}, &x_) || __builtin_sub_overflow(x_, {base}, &{v})) FALLBACK;", 2)
        elif d.numbered:
            self.w(f"if ({logical} == Py_None) {v} = index;", 2)
            self.w(f"else if (kf_as_i64({logical}, &x_) || __builtin_sub_overflow(x_, {base}, &{v})) FALLBACK;", 2)
        else:
            self.w(f"if (kf_as_i64({logical}, &x_) || __builtin_sub_overflow(x_, {base}, &{v})) FALLBACK;", 2)
        self.w("}")

    # ------------------------------------------------------------------ writing

    def write_fields(self) -> None:
        st = self.st
        regions: list[tuple[n.Field, str]] = []
        crcs: list[n.Field] = []
        for f in st.fields:
            self.w(f"Py_ssize_t p_{f.name} = w->n;")
            self.w(f"(void)p_{f.name};")
            depth = 1
            if f.condition is not None:
                self.w(f"if ({self.low.expr(f.condition, st)}) {{")
                depth = 2
                if f.const is None and not f.bits and f.derived is None and isinstance(f.wire, (n.Int, n.Varint)):
                    self.w(f"if (l_{f.name} == Py_None) FALLBACK;  /* present in this version: a value needed */", 2)
            self.write_field(f, depth, regions, crcs)
            if f.condition is not None:
                self.w("}")
        for f, kind in reversed(regions):
            d = f.derived
            assert isinstance(d, n.LengthOf)
            if kind == "fixed":
                assert isinstance(f.wire, n.Int)
                self.w(f"if (w->n - p_{d.start} > {_RANGE[(f.wire.width, f.wire.signed)][1]}) FALLBACK;")
                self.w(f"kf_put_be(w->p + p_{f.name}, {f.wire.width}, (uint64_t)(w->n - p_{d.start}));")
            else:
                assert isinstance(f.wire, n.Varint)
                zz = "1" if f.wire.zigzag else "0"
                self.w(f"{{ int r_ = kf_w_close_varint(w, p_{f.name}, {zz}); if (r_ < 0) ERROR; if (r_) FALLBACK; }}")
        for f in crcs:
            d = f.derived
            assert isinstance(d, n.Checksum)
            stop = f"p_{d.end}" if d.end else "w->n"
            self.w(
                f"kf_put_be(w->p + p_{f.name}, 4, kf_{d.algo}((const uint8_t *)w->p + p_{d.start}, {stop} - p_{d.start}));"
            )

    def put_int(self, wire: n.Int, value: str, depth: int, checked: bool = False) -> None:
        if checked and wire.width < 8:
            lo, hi = _RANGE[(wire.width, wire.signed)]
            self.w(f"if ({value} < {_lit(lo)} || {value} > {_lit(hi)}) FALLBACK;", depth)
        self.w(f"if (kf_w_reserve(w, {wire.width})) ERROR;", depth)
        self.w(f"kf_put_be(w->p + w->n, {wire.width}, (uint64_t)({value}));", depth)
        self.w(f"w->n += {wire.width};", depth)

    def put_varint(self, wire: n.Varint, value: str, depth: int) -> None:
        if wire.zigzag and wire.bits == 32:
            self.w(f"if ({value} < INT32_MIN || {value} > INT32_MAX) FALLBACK;", depth)
            self.w(
                f"if (kf_w_uvarint(w, (uint32_t)(((uint32_t){value} << 1) ^ (uint32_t)({value} >> 31)))) ERROR;", depth
            )
        elif wire.zigzag:
            self.w(f"if (kf_w_uvarint(w, ((uint64_t){value} << 1) ^ (uint64_t)({value} >> 63))) ERROR;", depth)
        elif wire.compact:  # N + 1, null (-1) as 0
            if value == "-1":
                self.w("if (kf_w_uvarint(w, 0)) ERROR;", depth)
            else:
                self.w(f"if ({value} < -1 || {value} >= (int64_t)UINT32_MAX) FALLBACK;", depth)
                self.w(f"if (kf_w_uvarint(w, (uint64_t)({value} + 1))) ERROR;", depth)
        else:
            hi = "UINT32_MAX" if wire.bits == 32 else "INT64_MAX"
            self.w(f"if ({value} < 0 || {value} > {hi}) FALLBACK;", depth)
            self.w(f"if (kf_w_uvarint(w, (uint64_t){value})) ERROR;", depth)

    def put_length(self, ext: n.Extent, value: str, depth: int) -> None:
        if isinstance(ext, n.Varint):
            self.put_varint(ext, value, depth)
        elif isinstance(ext, n.Int):
            self.put_int(ext, value, depth, checked=True)
        elif not isinstance(ext, n.Rest):
            raise Unsupported(f"{self.st.name}: a length given by another field")

    def blob(self, f: n.Field, wire: n.Blob, depth: int) -> None:
        lv = f"l_{f.name}"
        self.w(f"if ({lv} == Py_None) {{", depth)
        if wire.nullable and not isinstance(wire.length, n.Rest):
            self.put_length(wire.length, "-1", depth + 1)
        else:
            self.w("FALLBACK;", depth + 1)
        self.w("} else {", depth)
        d = depth + 1
        self.w("const char *s_;", d)
        self.w("Py_ssize_t k_;", d)
        if wire.text:
            self.w(f"if (!PyUnicode_CheckExact({lv}) || (s_ = PyUnicode_AsUTF8AndSize({lv}, &k_)) == NULL) {{", d)
            self.w("PyErr_Clear();", d + 1)
            self.w("FALLBACK;", d + 1)
            self.w("}", d)
        elif wire.view:  # a record set: bytes, or a view of a frame read (kf_view)
            self.w(f"if (kf_blob_of({lv}, &s_, &k_)) FALLBACK;", d)
        else:
            self.w(f"if (!PyBytes_CheckExact({lv})) FALLBACK;", d)
            self.w(f"s_ = PyBytes_AS_STRING({lv});", d)
            self.w(f"k_ = PyBytes_GET_SIZE({lv});", d)
        if wire.max is not None:
            self.w(f"if (k_ > {wire.max}) FALLBACK;", d)
        k = self.scalar("k64_")
        self.w(f"{k} = k_;", d)
        self.put_length(wire.length, k, d)
        if wire.view and self.low.f.gathers():  # a gather writer hands it out by reference (kf_w_set)
            self.w(f"if (kf_w_set(w, {lv}, s_, k_)) ERROR;", d)
        else:
            self.w("if (kf_w_put(w, s_, k_)) ERROR;", d)
        self.w("}", depth)

    def args(self, callee: str) -> str:
        """The values of ``callee``'s parameters: int64s, and strings of this struct as their objects."""
        return self.low.args(callee, self.st, text_objects=True)

    def array(self, f: n.Field, wire: n.ArrayType, depth: int) -> None:
        lv = f"l_{f.name}"
        d = depth
        # a list or tuple (a null sized array: None where nullable); anything else falls back
        if wire.size is not None:
            # as the python backend: a nullable sized array that is None or empty is written as null (-1)
            empty = (
                f" || ((PyList_CheckExact({lv}) || PyTuple_CheckExact({lv})) && PySequence_Fast_GET_SIZE({lv}) == 0)"
            )
            self.w(f"if ({lv} == Py_None{empty if wire.nullable else ''}) {{", d)
            if wire.nullable:
                self.put_length(wire.size, "-1", d + 1)
            else:
                self.w("FALLBACK;", d + 1)
            self.w("} else {", d)
            d += 1
        null_count = wire.nullable and wire.size is None and _null_count(wire.count)
        if null_count:  # a null array: a count of -1 (compact: 0)
            self.w(f"if ({lv} == Py_None) {{", d)
            self.put_length(wire.count, "-1", d + 1)
            self.w("} else {", d)
            d += 1
        self.w(f"if (!PyList_CheckExact({lv}) && !PyTuple_CheckExact({lv})) FALLBACK;", d)
        nv = f"PySequence_Fast_GET_SIZE({lv})"
        if wire.size is not None:
            self.w(f"Py_ssize_t q_{f.name} = w->n;", d)
            self.put_int(wire.size, "0", d)  # type: ignore[arg-type]
        if isinstance(wire.count, (n.Int, n.Varint)):
            c = self.scalar(f"c_{f.name}")
            self.w(f"{c} = {nv};", d)
            self.put_length(wire.count, c, d)
        args = self.args(wire.elem)
        loop = [
            f"for (Py_ssize_t i_ = 0; i_ < {nv}; i_++) {{",
            f"    if ((rc_ = e_{wire.elem}(W_, PySequence_Fast_ITEMS({lv})[i_], i_{args})) != KF_OK) {{ CLEANUP_; goto done; }}",
            "}",
        ]
        if wire.compressed_by is not None:
            codec = self.low.ref(wire.compressed_by, self.st)
            enum = self.low.enum_of(wire.compressed_by)
            self.w(f"if ({codec} != {self.low.none_id(wire.compressed_by)} && {nv}) {{", d)
            self.w("kf_w t_ = {0};", d + 1)
            for line in loop:
                self.w(line.replace("W_", "&t_").replace("CLEANUP_", "kf_w_free(&t_)"), d + 1)
            self.w(f"PyObject *z_ = kf_compress_call(E_{enum}[{codec}], &t_);", d + 1)
            self.w("kf_w_free(&t_);", d + 1)
            self.w("if (z_ == NULL) { rc_ = kf_error_or_fallback(); goto done; }", d + 1)
            self.w("int bad_ = kf_w_put(w, PyBytes_AS_STRING(z_), PyBytes_GET_SIZE(z_));", d + 1)
            self.w("Py_DECREF(z_);", d + 1)
            self.w("if (bad_) ERROR;", d + 1)
            self.w("} else {", d)
            for line in loop:
                self.w(line.replace("W_", "w").replace("CLEANUP_", "(void)0"), d + 1)
            self.w("}", d)
        else:
            for line in loop:
                self.w(line.replace("W_", "w").replace("CLEANUP_", "(void)0"), d)
        if wire.size is not None:
            assert isinstance(wire.size, n.Int)
            hi = _RANGE[(wire.size.width, wire.size.signed)][1] if wire.size.width < 8 else 2**62
            self.w(f"if (w->n - q_{f.name} - {wire.size.width} > {hi}) FALLBACK;", d)
            self.w(
                f"kf_put_be(w->p + q_{f.name}, {wire.size.width}, (uint64_t)(w->n - q_{f.name} - {wire.size.width}));",
                d,
            )
            self.w("}", depth)
        if null_count:
            self.w("}", depth)

    def render(self) -> str:
        st = self.st
        params = "".join(f", {self.low.param_decl(p)}" for p in st.params)
        sig = f"static int e_{st.name}(kf_w *w, PyObject *obj, int64_t index{params})"
        head = [f"    PyObject *{o} = NULL;" for o in dict.fromkeys(self.objs)]
        head += [f"    int64_t {s} = 0;" for s in self.scalars]
        head += ["    int rc_ = KF_FALLBACK;", "    (void)index;"]
        free = [f"    Py_XDECREF({o});" for o in dict.fromkeys(self.objs)]
        return "\n".join(
            [sig + " {", *head, *self.lines, "    rc_ = KF_OK;", "done:", *free, "    return rc_;", "}", ""]
        )
