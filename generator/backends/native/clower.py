"""The native backend's lowering of the typed IR to C's terms, shared by its decoders and encoders: per struct
its slots and C types (:class:`Lowering`, :class:`StructC`), expressions and references in C, constants as C
literals and as new Python objects, and what it cannot lower (:class:`Unsupported`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import generator.ir.nodes as n
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
    blob: bool = False  # bytes or text: a null stays None (a list slot of kfmt.Record/Batch reads null as [])


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
                out.append(Slot(f.name, f"o_{f.name}", isinstance(f.wire, n.Blob)))
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
