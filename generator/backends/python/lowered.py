"""The lowered form the python backend's templates render: per struct its decode and encode operations
(:class:`Op`), its model and its shapes (:class:`StructIR`), per format the whole (:class:`FormatIR`), and the
small helpers that name and print values."""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.ir.empty import absent_bytes, py_at_default
from generator.ir.nodes import EmptyStruct
from generator.loader.spec import Field

MASK64 = "0xFFFFFFFFFFFFFFFF"

VERSION_FIELDS = (
    "version",
    "record_type",
    "api_version",
)  # the fields a struct version is compared through (Kafka's versions)


BIAS64 = "0x8000000000000000"


def _at_default(ir, t, x) -> str:
    """A decoded tagged field held at the value it is left out at when encoding: then its section is kept
    as read."""
    if isinstance(x.absent, EmptyStruct):
        return f"buf[pos:stop_] == {absent_bytes(ir, x)!r}"
    return py_at_default(x, t.name)


@dataclass
class Op:
    kind: str
    depth: int = 0
    a: dict = field(default_factory=dict)

    def __getattr__(self, k):
        try:
            return self.a[k]
        except KeyError:
            raise AttributeError(k) from None


@dataclass
class StructIR:
    name: str
    cls: str | None
    role: str
    repr: str
    doc: str
    orig_name: str
    model_fields: list[tuple[str, str]]  # (name, default repr)
    base_slots: tuple[str, ...]
    logical: list[tuple[str, str]]  # (name, expression over self.)
    params: list[str]
    min_size: int
    decode_ops: list[Op]
    encode_ops: list[Op]
    result: str  # expression building the decoded value
    path: str
    post_ops: list[Op] = field(default_factory=list)  # logical values and views, computed after the wire fields
    layout: list = field(default_factory=list)  # (field, type, orig_name): what tools show of the struct
    init_extra: list = field(default_factory=list)  # (slot, expr): base-class slots the format has no field for
    dec_extra: str = ""  # extra keyword parameters of the decoder (nesting depth)
    enc_extra: str = ""  # extra keyword parameters of the encoder (inner offset base, timestamp restore)
    lists: tuple[str, ...] = ()  # fields the runtime base classes promise as lists (None becomes [])
    kafka: tuple = ()  # (field, Kafka's name, kind: "uuid", "bytes", "uuid[]", "bytes[]", "float64", ...): how tools name them
    kafka_tagged: tuple = ()  # (field, its value when absent): tagged fields, which Kafka's JSON leaves out at it

    @property
    def wraps_itself(self) -> bool:
        """A wrapper holding its own kind (v0/v1): gets a leaf fast decoder for the inner ones."""
        return any(op.kind == "wraps" and op.recursive for op in self.decode_ops)


@dataclass
class FormatIR:
    id: str
    file: str
    doc: str
    doc_ref: str
    magic: int | None
    auto_detect: bool
    root: str
    sha256: str
    fingerprint: str
    structs: list[StructIR]
    struct_consts: list[tuple[str, str, str]]  # (name, format, comment)
    enums: list[tuple[str, list[tuple[int, str]]]]
    wrap_offsets: str | None = None  # how a root wrapper numbers its inner messages (None: not a wrapper format)
    index_offsets: bool = False  # the root encoder numbers a value without an offset by its index
    trailing: str = "exact"  # the schema's policy for bytes after the root
    magic_offset: int | None = None  # where the root's magic byte is (decode_run dispatches on it)
    params: tuple[str, ...] = ()  # the schema's parameters: keyword-only arguments of the entry points
    gathers: bool = False  # record sets may be handed out by reference (an ``encode_parts``): FormatIR.gathers

    @property
    def pargs(self) -> str:
        """The parameters passed on to the root's functions (``, record_type``)."""
        return "".join(f", {p}" for p in self.params)

    @property
    def pkw(self) -> str:
        """The parameters as keyword-only arguments of an entry point, after a ``*`` (``record_type, ``)."""
        return "".join(f"{p}, " for p in self.params)


def _versions(cond) -> tuple[int, int] | None:
    """The versions ``lo``..``hi`` a field is in, when its condition is one on a message's version."""
    if cond is None or cond.field not in VERSION_FIELDS:
        return None
    lo, hi = 0, 1 << 15
    for h in cond.halves():
        v = int(h.value)
        lo, hi = {"eq": (v, v), "ge": (v, hi), "gt": (v + 1, hi), "le": (lo, v), "lt": (lo, v - 1)}.get(h.op, (lo, hi))
    return lo, hi


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _pyrepr(v) -> str:
    return repr(v)


def _view_slots(v) -> list[str]:
    """A view's slots: its value, and with ``on_error: raw`` why its parse failed (None: it did not)."""
    return [v.name, f"{v.name}_error"] if v.keep_raw else [v.name]


def _field_default(f: Field) -> str:
    """A plain field's default in the value class: its schema default, a uuid's zero (Kafka's
    ``Uuid.ZERO_UUID``), else None (the encoder then says the value is missing)."""
    if f.default is not None:
        return _pyrepr(float(f.default) if f.type == "float64" else f.default)
    return repr(bytes(16)) if f.type == "uuid" else "None"
