"""Lowering of the typed IR to C decoders: one ``d_<struct>`` function per struct, straight-line, every check
of the python backend's checked decoder made (bounds, regions, constants, CRCs, enums, counts, limits and
the memory budget before allocating), each failing one answered with ``KF_FALLBACK`` so that the python
backend decodes the same bytes and raises its exact error.  A decoder may fall back more often than
needed (legacy compressed wrappers do, for now), never less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import generator.ir.nodes as n
from generator.ir.empty import absent_bytes
from generator.ir.nodes import FormatIR, Struct


class Unsupported(Exception):
    """An IR construct this backend does not lower yet (the generator names it; no module is emitted)."""


_LOAD = {(1, True): "kf_i8", (1, False): "kf_u8", (2, True): "kf_i16", (2, False): "kf_u16"}
_LOAD |= {(4, True): "kf_i32", (4, False): "kf_u32", (8, True): "kf_i64", (8, False): "kf_i64"}
#: slots the value classes always hold as lists (kfmt.runtime.model): a null array reads as []
LIST_SLOTS = ("records", "headers")
_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def c_str(s: str) -> str:
    """A C string literal (schema names are identifiers; this keeps any other text safe)."""
    return '"' + "".join(ch if ch.isalnum() or ch in "_. -" else f"\\x{ord(ch):02x}" for ch in s) + '"'


def c_bytes(raw: bytes) -> str:
    """A C string literal of exactly these bytes (each escaped: no hex escape runs into the next byte)."""
    return '"' + "".join(f"\\x{x:02x}" for x in raw) + '"'


@dataclass
class Slot:
    """One slot of a value class and the C expression giving its new reference."""

    name: str
    value: str


@dataclass
class StructC:
    name: str
    cls: str  # the model class (object repr), or "" for a tuple
    params: list[str]
    code: str
    slots: list[Slot] = field(default_factory=list)
    extra: list[tuple[str, str]] = field(default_factory=list)  # (base-class slot, KF_NONE | KF_LIST | KF_MINUS1)


class Lowering:
    def __init__(self, fir: FormatIR):
        self.f = fir
        self.by_name = {s.name: s for s in fir.structs}
        self.enums = {e.name: e for e in fir.enums}
        # structs whose entries a wrapper holds, and the timestamp it restamps: a wire_<t> slot
        self.wrapped_ts: dict[str, str] = {}
        self.wrapped_by: dict[str, str] = {}  # struct a wrapper holds -> its offset field
        for st in fir.structs:
            for w in st.wrappers:
                self.wrapped_by[w.struct] = w.offset_field
                if w.timestamps_from:
                    self.wrapped_ts[w.struct] = w.timestamps_from
        from kfmt.runtime.model import Record

        self.base_slots: tuple[str, ...] = tuple(Record.__slots__)
        self.column_roles = self._column_roles()

    def _column_roles(self) -> dict[str, str]:
        """For Arrow-direct decoding: the struct whose elements are the rows (``record``: its ``offset``,
        ``timestamp``, ``key`` and ``value``) and the struct of its ``headers`` (``header``: text ``key``,
        bytes ``value``), named as kfmt.runtime.model names them; empty where the format has no such shape
        (a message format, whose entries are not batches of records, or headers of another type)."""
        root = self.by_name[self.f.root]
        arr = next((f.wire for f in root.fields if isinstance(f.wire, n.ArrayType)), None)
        if root.role != "batch" or arr is None or root.wrappers:
            return {}
        rec = self.by_name[arr.elem]
        blobs = {f.name: f.wire for f in rec.fields if isinstance(f.wire, n.Blob) and f.condition is None}
        if "offset" not in self.scalar_names(rec) or not {"key", "value"} <= set(blobs) or rec.wrappers:
            return {}
        if any(blobs[k].text for k in ("key", "value")) or len(blobs) != 2:
            return {}
        roles = {rec.name: "record"}
        heads = next((f.wire for f in rec.fields if f.name == "headers"), None)
        if heads is not None:
            if not isinstance(heads, n.ArrayType):
                return {}
            h = self.by_name[heads.elem]
            hb = {f.name: f.wire for f in h.fields if isinstance(f.wire, n.Blob) and f.condition is None}
            if set(hb) != {"key", "value"} or len(h.fields) != 2 or not hb["key"].text or hb["value"].text:
                return {}
            roles[h.name] = "header"
        elif any(isinstance(f.wire, n.ArrayType) for f in rec.fields):
            return {}
        return roles

    # ------------------------------------------------------------------ names and expressions

    def scalar_names(self, st: Struct) -> set[str]:
        out = set()
        for f in st.fields:
            if isinstance(f.wire, n.Varint) or (isinstance(f.wire, n.Int) and f.wire.kind != "uuid"):
                out.add(f.name)
            out |= {b.name for b in f.bits}
            if isinstance(f.derived, n.DeltaOf):
                out.add(f.derived.logical)
        return out

    def is_text(self, r: n.Ref) -> bool:
        """Whether ``r`` names a string field (held as a str object; compared with a string literal)."""
        st = self.by_name.get(r.owner)
        f = next((f for f in st.fields if f.name == r.name), None) if st else None
        return f is not None and isinstance(f.wire, n.Blob) and f.wire.text

    def param_decl(self, p: n.Ref) -> str:
        """A parameter of a struct's decoder: an integer, or a borrowed str (a string of an enclosing struct)."""
        return f"PyObject *a_{p.name}" if self.is_text(p) else f"int64_t a_{p.name}"

    def ref(self, r: n.Ref, st: Struct) -> str:
        if r.owner != st.name:
            return f"a_{r.name}"
        if r.name in self.scalar_names(st):
            return f"v_{r.name}"
        if self.is_text(r):
            return f"o_{r.name}"
        raise Unsupported(f"{st.name}: a reference to non-scalar {r.name}")

    def text_compare(self, e: n.Compare, st: Struct) -> str:
        """A string field against a string literal (a str equal to it; None is equal to nothing)."""
        ref, lit = (e.left, e.right) if isinstance(e.right, n.Const) else (e.right, e.left)
        if e.op not in ("eq", "ne") or not isinstance(ref, n.Ref) or not isinstance(lit, n.Const):
            raise Unsupported(f"{st.name}: a string ordered by {e.op}")
        value = str(lit.value)
        if not value.isascii():
            raise Unsupported(f"{st.name}: a comparison with the non-ASCII string {value!r}")
        return f"{'' if e.op == 'eq' else '!'}kf_str_eq({self.ref(ref, st)}, {c_bytes(value.encode())})"

    def expr(self, e: n.Expr, st: Struct) -> str:
        if isinstance(e, n.Const):
            if e.value is None:
                raise Unsupported("a null constant in an expression")
            return str(int(e.value)) if isinstance(e.value, bool) else f"INT64_C({e.value})"
        if isinstance(e, n.EnumConst):
            return str(e.value)
        if isinstance(e, n.Ref):
            return self.ref(e, st)
        if isinstance(e, n.Compare) and any(isinstance(getattr(x, "value", None), str) for x in (e.left, e.right)):
            return self.text_compare(e, st)
        if isinstance(e, n.Compare):
            return f"({self.expr(e.left, st)} {_OPS[e.op]} {self.expr(e.right, st)})"
        if isinstance(e, n.Truthy):
            return f"({self.expr(e.operand, st)} != 0)"
        if isinstance(e, n.All):
            return "(" + " && ".join(self.expr(x, st) for x in e.operands) + ")"
        if isinstance(e, n.Arith):
            a, b = self.expr(e.left, st), self.expr(e.right, st)
            if not e.wrap64:  # Python's integers do not overflow: an int64 result is not guaranteed
                raise Unsupported("arithmetic without int64 wrapping")
            return f"kf_wrap_{e.op}({a}, {b})"
        if isinstance(e, n.Choose):
            return f"({self.expr(e.cond, st)} ? {self.expr(e.then, st)} : {self.expr(e.otherwise, st)})"
        raise Unsupported(f"expression {type(e).__name__} when decoding")

    def args(self, callee: str, st: Struct, text_objects: bool = False) -> str:
        """The arguments of a call of ``callee``'s decoder (or encoder) from ``st``'s: the values its parameters
        name; with ``text_objects`` a string field of ``st`` is passed as its object (``l_<name>``, the encoder's)."""
        return "".join(
            f", l_{p.name}" if text_objects and p.owner == st.name and self.is_text(p) else f", {self.ref(p, st)}"
            for p in self.by_name[callee].params
        )

    def enum_of(self, ref: n.Ref) -> str:
        st = self.by_name[ref.owner]
        bit = next(b for f in st.fields for b in f.bits if b.name == ref.name)
        assert bit.enum is not None
        return bit.enum

    def none_id(self, ref: n.Ref) -> int:
        return next(k for k, v in self.enums[self.enum_of(ref)].values if v == "none")

    # ------------------------------------------------------------------ one struct

    def slots(self, st: Struct) -> list[Slot]:
        """The value class's fields (as the python backend's model lists them) and their values."""
        out: list[Slot] = []
        for f in st.fields:
            if f.bits:
                for b in f.bits:
                    if b.kind == "enum":
                        out.append(Slot(b.name, f"Py_NewRef(E_{b.enum}[v_{b.name}])"))
                    elif b.kind == "flag":
                        out.append(Slot(b.name, f"PyBool_FromLong(v_{b.name})"))
                    else:
                        out.append(Slot(b.name, f"PyLong_FromLongLong(v_{b.name})"))
            elif is_scalar(f.wire) and f.condition is not None:
                # an absent field reads as its default, as in the python backend
                out.append(Slot(f.name, f"(h_{f.name} ? {box(f.wire, 'v_' + f.name)} : {absent(st, f)})"))
            elif is_scalar(f.wire):
                out.append(Slot(f.name, box(f.wire, f"v_{f.name}")))
            elif isinstance(f.wire, n.Tagged):  # the unknown tags, then each tagged field
                out.append(Slot(f.name, f"o_{f.name}"))
                out += [Slot(t.name, f"o_{t.name}") for t in f.wire.fields]
            else:
                out.append(Slot(f.name, f"o_{f.name}"))
        for f in st.fields:
            if isinstance(f.derived, n.DeltaOf):
                out.append(Slot(f.derived.logical, f"PyLong_FromLongLong(v_{f.derived.logical})"))
        for v in st.views:  # on_error: raw: a parse that fails hands the bytes to python, which keeps its error
            out += [Slot(v.name, f"o_{v.name}")] + (
                [Slot(f"{v.name}_error", "Py_NewRef(Py_None)")] if v.keep_raw else []
            )
        out += [Slot(w.into, f"o_{w.into}") for w in st.wrappers]
        if st.name in self.wrapped_ts:
            out.append(Slot(f"wire_{self.wrapped_ts[st.name]}", "Py_NewRef(Py_None)"))
        return out

    def extra(self, st: Struct) -> list[tuple[str, str]]:
        """Slots of the runtime base class the format has no field for, with the value the python backend
        gives them: a new empty list for headers, -1 for a message's timestamp, else None."""
        from kfmt.runtime.model import Record

        if st.repr != "object" or st.role not in ("record", "message"):
            return []
        mine = {s.name for s in self.slots(st)}
        out = []
        for slot in Record.__slots__:
            if slot not in mine:
                kind = (
                    "KF_LIST"
                    if slot == "headers"
                    else "KF_MINUS1"
                    if slot == "timestamp" and st.role == "message"
                    else "KF_NONE"
                )
                out.append((slot, kind))
        return out

    def struct(self, st: Struct) -> StructC:
        g = _StructGen(self, st)
        cls = _camel(st.name) if st.repr == "object" else ""
        return StructC(st.name, cls, g.params, g.emit(), self.slots(st), self.extra(st))

    def columns(self) -> list[tuple[str, list[str], str]]:
        """The Arrow-direct decoders ``c_<struct>`` (name, params, code), the root last; empty where the
        format has no records to make rows of."""
        if not self.column_roles:
            return []
        out = []
        for st in self.f.structs:
            if st.name in self.column_roles or st.name == self.f.root:
                g = _StructGen(self, st, "columns")
                out.append((st.name, g.params, g.emit()))
        return out


def load(w: n.Int, at: str) -> str:
    """The C expression reading fixed-width scalar ``w`` at ``at`` into an int64_t (a float64: its bits)."""
    if w.kind == "bool":
        return f"((*({at})) != 0)"
    if w.kind == "float64":
        return f"kf_i64({at})"
    return f"{_LOAD[(w.width, w.signed)]}({at})"


def is_scalar(w: n.Wire) -> bool:
    """Read into an int64_t local (integers, bools, a float64's bits), boxed when the value is built."""
    return isinstance(w, n.Varint) or (isinstance(w, n.Int) and w.kind != "uuid")


def box(w: n.Wire, var: str) -> str:
    """The new reference holding scalar ``var`` as the python backend gives it."""
    kind = w.kind if isinstance(w, n.Int) else "int"
    return {"bool": "PyBool_FromLong", "float64": "kf_float_from_bits"}.get(kind, "PyLong_FromLongLong") + f"({var})"


def py_new(value: object, where: str) -> str:
    """A C expression giving a new reference to the constant ``value`` (NULL only when out of memory)."""
    if value is None:
        return "Py_NewRef(Py_None)"
    if isinstance(value, bool):
        return f"PyBool_FromLong({int(value)})"
    if isinstance(value, int) and -(2**63) < value < 2**63:
        return f"PyLong_FromLongLong(INT64_C({value}))"
    if isinstance(value, float) and math.isfinite(value):
        return f"PyFloat_FromDouble({value!r})"
    if isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        lit = c_bytes(raw)
        if isinstance(value, str):
            return f'PyUnicode_DecodeUTF8({lit}, {len(raw)}, "surrogateescape")'
        return f"PyBytes_FromStringAndSize({lit}, {len(raw)})"
    if value == []:
        return "PyList_New(0)"
    raise Unsupported(f"{where}: a default of {value!r}")


def _refs_of(x) -> list:
    from generator.ir.passes.scope import refs

    return refs(x)


def own_requires(st: Struct) -> bool:
    """Whether the struct's ``requires`` names one of its own fields: checked once that field is read."""
    own = {f.name for f in st.fields}
    return st.requires is not None and any(r.name in own and r.owner == st.name for r in _refs_of(st.requires))


def absent(st: Struct, f: n.Field) -> str:
    """The value of a conditional field its condition leaves out: its schema default, else None."""
    if isinstance(f.default, n.EnumConst):
        raise Unsupported(f"{st.name}.{f.name}: a conditional field with an enum default")
    return py_new(f.default.value if f.default is not None else None, f"{st.name}.{f.name}")


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


class _StructGen:
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
        if f.condition is not None and isinstance(wire, (n.Int, n.Varint)):
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

    def varint(self, var: str, wire: n.Varint, depth: int, end: str | None = None) -> None:
        end = end or self.end
        self.w("{", depth)
        self.w("uint64_t u_;", depth + 1)
        self.w(f"if (kf_uvarint(b, &pos, {end}, {wire.max_bytes}, &u_)) FALLBACK;", depth + 1)
        if wire.zigzag:
            self.w(f"{var} = kf_zigzag{wire.bits}(u_);", depth + 1)
        elif wire.compact:  # Kafka's compact length or count: N + 1 on the wire, 0 for null (-1)
            self.w(f"{var} = (int64_t)u_ - 1;", depth + 1)
        else:
            self.w(f"{var} = (int64_t)u_;", depth + 1)
        self.w("}", depth)

    def prefix(self, var: str, wire: n.Int | n.Varint, depth: int) -> None:
        if isinstance(wire, n.Varint):
            self.varint(var, wire, depth)
        else:
            self.w(f"if ({self.end} - pos < {wire.width}) FALLBACK;", depth)
            self.w(f"{var} = {_LOAD[(wire.width, wire.signed)]}(b + pos);", depth)
            self.w(f"pos += {wire.width};", depth)

    def blob(self, f: n.Field, wire: n.Blob, depth: int) -> None:
        if self.role in ("record", "header"):  # a column: where its bytes are, no object
            self.blob_ptr(f, wire, depth)
            return
        o = self.obj(f"o_{f.name}")
        nv = self.blob_length(f, wire, depth)
        if wire.nullable and not isinstance(wire.length, n.Rest):
            self.w(f"if ({nv} < 0) {{", depth)
            self.w(f"{o} = Py_NewRef(Py_None);", depth + 1)
            self.w("} else {", depth)
            depth += 1
        else:
            self.w(f"if ({nv} < 0) FALLBACK;", depth)
        limit = f" || {nv} > {wire.max}" if wire.max is not None else ""
        self.w(f"if ({nv} > cx->max_bytes || {nv} > {self.end} - pos{limit}) FALLBACK;", depth)
        if wire.text:
            self.w(f"{o} = kf_text(b + pos, {nv});", depth)
        else:
            self.w(f"{o} = PyBytes_FromStringAndSize((const char *)b + pos, {nv});", depth)
        self.w(f"if ({o} == NULL) ERROR;", depth)
        self.w(f"pos += {nv};", depth)
        if wire.nullable and not isinstance(wire.length, n.Rest):
            self.w("}", depth - 1)

    def blob_length(self, f: n.Field, wire: n.Blob, depth: int) -> str:
        """Read a blob's length into ``n_<field>`` (the rest of the region, or its prefix)."""
        nv = self.scalar(f"n_{f.name}")
        if isinstance(wire.length, n.Rest):
            self.w(f"{nv} = {self.end} - pos - {wire.length.trailer};", depth)
        elif isinstance(wire.length, (n.Int, n.Varint)):
            self.prefix(nv, wire.length, depth)
        else:
            raise Unsupported(f"{self.st.name}.{f.name}: a blob counted by another field")
        return nv

    def blob_ptr(self, f: n.Field, wire: n.Blob, depth: int) -> None:
        self.ptrs.append(f.name)
        nv = self.blob_length(f, wire, depth)
        nullable = wire.nullable and not isinstance(wire.length, n.Rest)
        self.w(f"if ({nv} < 0) {{", depth)
        self.w(f"{nv} = -1;" if nullable else "FALLBACK;", depth + 1)
        self.w("} else {", depth)
        limit = f" || {nv} > {wire.max}" if wire.max is not None else ""
        self.w(f"if ({nv} > cx->max_bytes || {nv} > {self.end} - pos{limit}) FALLBACK;", depth + 1)
        self.w(f"bp_{f.name} = b + pos;", depth + 1)
        self.w(f"pos += {nv};", depth + 1)
        self.w("}", depth)

    def call(self, elem: str, target: str, buf: str, pos: str, end: str, npos: str, depth: int) -> None:
        self.obj(target)
        args = self.low.args(elem, self.st)
        self.w(f"if ((rc_ = d_{elem}(cx, {buf}, {pos}, {end}{args}, &{target}, {npos})) != KF_OK) goto done;", depth)

    def array(self, f: n.Field, wire: n.ArrayType) -> None:
        """An array: its size prefix (optional), its count, its (perhaps compressed) elements."""
        st = self.st
        rest = isinstance(wire.count, n.Rest)
        nv = self.scalar(f"n_{f.name}")
        sized_end = self.array_size(f, wire) if wire.size is not None else None
        if isinstance(wire.count, n.CountFrom):
            self.w(f"{nv} = {self.low.ref(wire.count.field, st)};")
        elif isinstance(wire.count, (n.Int, n.Varint)):
            self.prefix(nv, wire.count, 1)
        elif not rest:
            raise Unsupported(f"{st.name}.{f.name}: count {wire.count}")
        null_count = wire.nullable and wire.size is None and not rest
        if null_count:  # a negative count (compact: 0) is a null array
            self.w(f"if ({nv} < 0) {{ {self.obj('o_' + f.name)} = Py_NewRef(Py_None); }} else {{")
        if not rest:
            self.w(f"if ({nv} < 0 || {nv} > cx->{wire.limit}) FALLBACK;")
        end = self.end
        self.w("{")
        self.w("const uint8_t *db_ = b;", 2)
        self.w(f"Py_ssize_t dp_ = pos, de_ = {end};", 2)
        self.w("PyObject *data_ = NULL;", 2)
        if wire.compressed_by is not None:
            self.array_stream(f, wire, nv, rest)
        self.w("int ok_ = 0, bad_ = 0;", 2)
        self.w("do {", 2)
        if rest:
            self.elements_to_end(f, wire)
        else:
            self.counted_elements(f, wire, nv)
        self.w("ok_ = 1;", 3)
        self.w("} while (0);", 2)
        self.w("if (data_ != NULL) {", 2)
        self.w("Py_DECREF(data_);", 3)
        self.w("if (!ok_ || dp_ != de_) FALLBACK;", 3)
        self.w(f"pos = {end};", 3)
        self.w("} else {", 2)
        self.w("if (!ok_) FALLBACK;", 3)
        self.w("pos = dp_;", 3)
        self.w("}", 2)
        self.w("}")
        if null_count:
            self.w("}")
        if isinstance(wire.count, n.CountFrom) and st.fields[-1].name == f.name:
            self.w(f"if (!{nv}) pos = {end};  /* as Kafka: an empty batch's payload is not read */")
        if sized_end is not None:
            self.w(f"if (pos != {sized_end}) FALLBACK;")
            self.ends.pop()
            self.w("}")

    def array_size(self, f: n.Field, wire: n.ArrayType) -> str:
        """An array's byte-size prefix (null when negative, if nullable): the end its elements must reach."""
        o = self.obj(f"o_{f.name}")
        if not isinstance(wire.size, n.Int):
            raise Unsupported(f"{self.st.name}.{f.name}: an array sized by a varint")
        sz = self.scalar(f"s_{f.name}")
        self.prefix(sz, wire.size, 1)
        if wire.nullable:
            self.w(f"if ({sz} < 0) {{ {o} = Py_NewRef(Py_None); }} else {{")
        else:
            self.w(f"if ({sz} < 0) FALLBACK;")
            self.w("{")
        sized_end = f"se_{f.name}"
        self.w(f"Py_ssize_t {sized_end} = pos + {sz};")
        self.w(f"if ({sized_end} > {self.end}) FALLBACK;")
        self.ends.append(sized_end)
        return sized_end

    def array_stream(self, f: n.Field, wire: n.ArrayType, nv: str, rest: bool) -> None:
        """A compressed array: its elements are read from the decompressed stream."""
        st, end = self.st, self.end
        assert wire.compressed_by is not None
        codec = self.low.ref(wire.compressed_by, st)
        when = f"{codec} != {self.low.none_id(wire.compressed_by)}" + ("" if rest else f" && {nv}")
        self.w(f"if ({when}) {{", 2)
        self.w(
            f"data_ = kf_decompress_call(cx, E_{self.low.enum_of(wire.compressed_by)}[{codec}], b + pos, {end} - pos, "
            f"pos, {c_str(st.name + '.' + f.name)});",
            3,
        )
        self.w("if (data_ == NULL) { rc_ = kf_error_or_fallback(); goto done; }", 3)
        self.w("db_ = (const uint8_t *)PyBytes_AS_STRING(data_);", 3)
        self.w("dp_ = 0;", 3)
        self.w("de_ = PyBytes_GET_SIZE(data_);", 3)
        self.w("}", 2)

    def elements_to_end(self, f: n.Field, wire: n.ArrayType) -> None:
        o, d, bud = self.obj(f"o_{f.name}"), 3, f"bud_{f.name}"
        budget = wire.budget or n.Budget(0)
        if not budget.accounted:
            self.w(f"int64_t {bud} = cx->max_memory - (de_ - dp_);", d)
        if not (self.mode == "columns" and wire.elem in self.low.column_roles and self.role):
            self.w(f"{o} = PyList_New(0);", d)
            self.w(f"if ({o} == NULL) {{ Py_XDECREF(data_); ERROR; }}", d)
        self.w("Py_ssize_t i_ = 0;", d)
        self.w("while (dp_ < de_) {", d)
        self.w(f"if (i_ >= cx->{wire.limit}) {{ bad_ = 1; break; }}", d + 1)
        if not budget.accounted:
            self.w(f"{bud} -= {budget.cost};", d + 1)
            self.w(f"if ({bud} < 0) {{ bad_ = 1; break; }}", d + 1)
        self.element(wire, bud, budget, "PyList_Append", d + 1)
        self.w("i_++;", d + 1)
        self.w("}", d)
        self.w("if (bad_) break;", d)
        if budget.accounted:
            self.w(f"cx->spent += (int64_t)i_ * {budget.cost};", d)

    def counted_elements(self, f: n.Field, wire: n.ArrayType, nv: str) -> None:
        o, d, bud = self.obj(f"o_{f.name}"), 3, f"bud_{f.name}"
        budget = wire.budget or n.Budget(0)
        self.w(f"if ({nv} * {wire.min_elem_size} > de_ - dp_) break;", d)
        if not budget.accounted:
            self.w(f"int64_t {bud} = cx->max_memory - (de_ - dp_) - {nv} * {budget.cost};", d)
            self.w(f"if ({bud} < 0) break;", d)
        else:
            self.w(f"cx->spent += {nv} * {budget.cost};", d)
        rows = self.mode == "columns" and wire.elem in self.low.column_roles
        if not (rows and self.role):  # a row keeps no list of its headers; a batch an empty records list
            self.w(f"{o} = PyList_New({0 if rows else nv});", d)
            self.w(f"if ({o} == NULL) {{ Py_XDECREF(data_); ERROR; }}", d)
        self.w("Py_ssize_t i_ = 0;", d)
        self.w(f"for (; i_ < {nv}; i_++) {{", d)
        self.element(wire, bud, budget, "SET", d + 1)
        self.w("}", d)
        self.w("if (bad_) break;", d)

    def element(self, wire: n.ArrayType, bud: str, budget: n.Budget, store: str, d: int) -> None:
        args = self.low.args(wire.elem, self.st)
        self.w("PyObject *item_ = NULL;", d)
        if budget.nested and not budget.accounted:
            self.w("cx->spent = 0;", d)
        rows = self.mode == "columns" and wire.elem in self.low.column_roles
        self.w(f"int r_ = {'c' if rows else 'd'}_{wire.elem}(cx, db_, dp_, de_{args}, &item_, &dp_);", d)
        self.w("if (r_ == KF_ERROR) { Py_XDECREF(data_); rc_ = KF_ERROR; goto done; }", d)
        self.w("if (r_ != KF_OK) { bad_ = 1; break; }", d)
        if rows:  # appended to the columns: nothing to keep
            pass
        elif store == "SET":
            self.w(f"PyList_SET_ITEM(o_{wire_name(self, wire)}, i_, item_);", d)
        else:
            self.w(f"int a_ = PyList_Append(o_{wire_name(self, wire)}, item_);", d)
            self.w("(void)a_;", d)
            self.w("Py_DECREF(item_);", d)
            self.w("if (a_ < 0) { Py_XDECREF(data_); ERROR; }", d)
        if budget.nested and not budget.accounted:
            self.w(f"{bud} -= cx->spent;", d)
            self.w(f"if ({bud} < 0) {{ bad_ = 1; break; }}", d)

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
        if s.value.startswith("o_") and s.name in LIST_SLOTS:  # an absent (null) list reads as [], as in python
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


def wire_name(g: _StructGen, wire: n.ArrayType) -> str:
    return next(f.name for f in g.st.fields if f.wire is wire)
