"""The typed IR: frozen nodes every backend reads, and nothing else.

No node holds target-language text: values are :data:`Expr` trees over a closed vocabulary, wire types
are :data:`Wire` nodes, and names are the schema's own (a backend chooses its local variable names).
The passes in :mod:`generator.ir.passes` build a :class:`FormatIR` from a validated
:class:`generator.loader.spec.Schema`; :mod:`generator.ir.printer` shows one as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

# ---------------------------------------------------------------- expressions (the closed vocabulary)


@dataclass(frozen=True)
class Const:
    """A literal: an integer, a boolean, a float, or None (a null)."""

    value: int | bool | float | None


@dataclass(frozen=True)
class EnumConst:
    """A named value of an enum, with its wire id."""

    enum: str
    name: str
    value: int


@dataclass(frozen=True)
class Ref:
    """The decoded value of field (or bit view) ``name`` of struct ``owner``: the struct being decoded, or
    one enclosing it (then it is one of the struct's :attr:`StructIR.params`)."""

    name: str
    owner: str


@dataclass(frozen=True)
class ElementIndex:
    """The position of the element being encoded in its array (0, 1, 2 ...)."""


CmpOp = Literal["eq", "ne", "lt", "le", "gt", "ge"]


@dataclass(frozen=True)
class Compare:
    op: CmpOp
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Truthy:
    """A flag or a non-zero / non-null value."""

    operand: Expr


@dataclass(frozen=True)
class Arith:
    """``left + right`` or ``left - right``; with ``wrap64`` the result wraps as a Java ``long`` does
    (Kafka's ``baseOffset + offsetDelta`` arithmetic)."""

    op: Literal["add", "sub"]
    left: Expr
    right: Expr
    wrap64: bool = False


@dataclass(frozen=True)
class Length:
    """The number of elements of an array, or of bytes of a blob."""

    operand: Expr


@dataclass(frozen=True)
class Fold:
    """``member`` of the first or last element of ``array``, or its largest value; ``default`` when the
    array is empty."""

    func: Literal["first", "last", "max"]
    array: Ref
    member: str
    default: Expr


@dataclass(frozen=True)
class Choose:
    """``then`` if ``cond`` holds, else ``otherwise``."""

    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True)
class All:
    """Every operand holds (a version range: ``version >= 1`` and ``version <= 3``)."""

    operands: tuple[Expr, ...]


Expr = Union[Const, EnumConst, Ref, ElementIndex, Compare, Truthy, Arith, Length, Fold, Choose, All]

# ---------------------------------------------------------------- wire types


@dataclass(frozen=True)
class Int:
    """A fixed-width value of ``width`` bytes: a big-endian two's-complement (or unsigned) integer, or
    (``kind``) one of Kafka's message-encoding scalars: ``bool`` (a byte, non-zero true), ``float64`` (an
    IEEE 754 double), ``uuid`` (16 bytes). Every fixed-width field is one, so runs of them are read and
    written together whatever their kind."""

    width: Literal[1, 2, 4, 8, 16]
    signed: bool
    kind: Literal["int", "bool", "float64", "uuid"] = "int"


@dataclass(frozen=True)
class Varint:
    """Kafka's varint: ``bits`` 32 or 64, ``zigzag`` for the signed kinds; at most 5 or 10 bytes."""

    bits: Literal[32, 64]
    zigzag: bool
    compact: bool = False  # Kafka's compact length/count: the wire holds N + 1, 0 for null (read as -1)

    @property
    def max_bytes(self) -> int:
        return 5 if self.bits == 32 else 10


@dataclass(frozen=True)
class Rest:
    """Up to the end of the enclosing region, less ``trailer`` bytes of fixed-width fields after it."""

    trailer: int = 0


@dataclass(frozen=True)
class CountFrom:
    """A count given by an earlier field."""

    field: Ref


Prefix = Union[Int, Varint]
Extent = Union[Int, Varint, Rest, CountFrom]


@dataclass(frozen=True)
class Blob:
    """Bytes, or UTF-8 text, of a length given by ``length``; ``nullable``: a negative length is null; ``view``: a
    record set (Kafka's ``records`` type), read as a read-only view of the input instead of a copy (the bytes
    are large and the record codecs read them later, if at all) and written from any contiguous buffer."""

    length: Extent
    nullable: bool
    text: bool
    max: int | None = None
    view: bool = False


@dataclass(frozen=True)
class StructType:
    """An embedded struct, optionally preceded by its byte size (``size``)."""

    name: str
    size: Prefix | None = None
    nullable: bool = False
    marker: Prefix | None = None  # nullable without a size: a null marker before it (int8 -1/1, uvarint 0/1)


@dataclass(frozen=True)
class NestedArray:
    """An array inside each element of another array, counted against that array's memory budget."""

    field: str
    cost: int
    min_size: int


@dataclass(frozen=True)
class Budget:
    """The ``max_memory`` estimate of an array: ``cost`` bytes per element, and the arrays in each element
    (``nested``); ``accounted``: this array's elements are counted by an enclosing array's budget."""

    cost: int
    nested: tuple[NestedArray, ...] = ()
    accounted: bool = False


@dataclass(frozen=True)
class ArrayType:
    """Elements of struct ``elem``; ``count`` a prefix, an earlier field or the rest of the region;
    ``size`` an optional byte-size prefix; ``compressed_by`` the field naming the stream's codec."""

    elem: str
    count: Extent
    size: Prefix | None = None
    nullable: bool = False
    compressed_by: Ref | None = None
    limit: Literal["max_records", "max_headers"] = "max_headers"
    min_elem_size: int = 1
    budget: Budget | None = None


@dataclass(frozen=True)
class Switch:
    """One of several structs, chosen by the integer ``selector`` read before it (Kafka's records chosen by
    their apiKey or type): ``cases`` maps selector values to struct names; any other value is an error."""

    selector: Ref
    cases: tuple[tuple[int, str], ...]

    def structs(self) -> tuple[str, ...]:
        """The case structs, each once, in case order."""
        return tuple(dict.fromkeys(c for _, c in self.cases))

    def grouped(self) -> tuple[tuple[tuple[int, ...], str], ...]:
        """The cases by struct: (the selector values, the struct), in case order."""
        return tuple((tuple(v for v, c in self.cases if c == s), s) for s in self.structs())


@dataclass(frozen=True)
class EmptyStruct:
    """A struct-valued tagged field's value when its tag is absent: the struct with each field at its default,
    as Kafka's ``new Type()`` (a spec default of JSON null for a struct field: FieldSpec.fieldDefault). Backends
    decode it from :func:`generator.ir.empty.absent_bytes` and leave the tag out when a value encodes to them."""

    struct: str

    def __repr__(self) -> str:
        return f"EmptyStruct({self.struct!r})"


@dataclass(frozen=True)
class TaggedField:
    """A field of a tagged-field section: its ``tag``, decoded through the one-field struct ``struct``
    when its tag is present (and ``condition`` holds), else ``absent``, written only when not ``absent``."""

    tag: int
    name: str
    struct: str
    condition: Expr | None
    absent: object
    nullable: bool


@dataclass(frozen=True)
class Tagged:
    """Kafka's tagged-field section: an unsigned varint count, then per field its tag, its size and its bytes
    (unsigned varints, then the bytes), in increasing tag order; the section's own value is the tags no
    field names, kept raw as (tag, bytes) pairs so that a round trip is byte-exact."""

    fields: tuple[TaggedField, ...]


Wire = Union[Int, Varint, Blob, StructType, ArrayType, Switch, Tagged]

# ---------------------------------------------------------------- derived values


@dataclass(frozen=True)
class LengthOf:
    """The byte count from field ``start`` to the end of the struct (a region the decoder checks)."""

    start: str


@dataclass(frozen=True)
class CountOf:
    array: str


@dataclass(frozen=True)
class Checksum:
    """CRC-32 or CRC-32C over ``[start, end)`` (``end`` None: the end of the struct); ``trailing``: the
    field sits after the bytes it covers."""

    algo: Literal["crc32", "crc32c"]
    start: str
    end: str | None
    trailing: bool


@dataclass(frozen=True)
class FoldOf:
    """Informational: computed from the elements (``value``), or given by the caller if ``overridable``."""

    value: Fold
    overridable: bool


@dataclass(frozen=True)
class DeltaOf:
    """The wire value is ``logical - base``; decoding exposes ``logical`` as ``decoded``."""

    logical: str
    base: Expr
    decoded: Expr
    numbered: bool  # an element without a value takes its index (offsets 0, 1, 2 ...)


Derived = Union[LengthOf, CountOf, Checksum, FoldOf, DeltaOf]

# ---------------------------------------------------------------- fields and structs


@dataclass(frozen=True)
class BitView:
    """``(raw & mask) >> shift`` of an integer field, exposed as ``name``."""

    name: str
    mask: int
    shift: int
    kind: Literal["enum", "flag", "int"]
    enum: str | None = None
    const: int | None = None  # always this raw value: written, checked on read
    null_marker_for: str | None = None  # set when that field is null
    doc: str = ""
    selects_codec: bool = False  # names a compression codec: an unknown id is an unsupported codec


@dataclass(frozen=True)
class Field:
    name: str
    wire: Wire
    line: int
    orig_name: str = ""
    doc: str = ""
    offset: int | None = None  # from the struct's start, when every field before it is fixed-width
    const: int | None = None
    default: Const | EnumConst | None = None
    condition: Expr | None = None  # present only when this holds
    bits: tuple[BitView, ...] = ()
    derived: Derived | None = None


@dataclass(frozen=True)
class Region:
    """Fields ``first``..``last`` are the bytes counted by the length field ``length_field``."""

    length_field: str
    first: str
    last: str


@dataclass(frozen=True)
class FixedRun:
    """Consecutive unconditional fixed-width fields: one read of ``size`` bytes."""

    fields: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class View:
    """Blob field ``source`` parsed as struct ``struct`` (when ``condition`` holds), exposed as ``name``."""

    name: str
    source: str
    struct: str
    condition: Expr | None
    keep_raw: bool = False  # a parse that fails leaves ``name`` None and its error in ``name``_error


@dataclass(frozen=True)
class Wrapper:
    """Blob field ``source`` holds, when ``condition`` holds, a set of ``struct`` entries compressed by the
    codec ``codec``, exposed as ``into``; inner offsets are ``offsets`` (Kafka v0 absolute, v1 relative to
    the last); under ``timestamps_when`` inner timestamps read as the wrapper's ``timestamps_from``."""

    source: str
    into: str
    struct: str
    condition: Expr
    codec: Ref
    offsets: Literal["absolute", "relative_to_last", "relative_to_first"]
    offset_field: str
    timestamps_from: str | None
    timestamps_when: Expr | None
    cost: int


@dataclass(frozen=True)
class Logical:
    """A read-only value computed from fields."""

    name: str
    value: Expr


Role = Literal["batch", "record", "message", "struct"]


@dataclass(frozen=True)
class Struct:
    name: str
    role: Role
    repr: Literal["object", "tuple"]
    fields: tuple[Field, ...]
    line: int
    orig_name: str = ""
    doc: str = ""
    params: tuple[Ref, ...] = ()  # values of enclosing structs this one reads
    regions: tuple[Region, ...] = ()
    runs: tuple[FixedRun, ...] = ()
    views: tuple[View, ...] = ()
    wrappers: tuple[Wrapper, ...] = ()
    logical: tuple[Logical, ...] = ()
    min_size: int = 0
    fixed_size: int | None = None  # every field fixed-width and unconditional
    requires: Expr | None = None  # decoded and encoded only when this holds (else an error naming it)

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def view(self, name: str) -> View:
        return next(v for v in self.views if v.name == name)


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[tuple[int, str], ...]
    doc: str = ""


@dataclass(frozen=True)
class FormatIR:
    id: str
    doc: str
    doc_ref: str
    file: str
    magic: int | None
    auto_detect: bool
    root: str
    structs: tuple[Struct, ...]  # dependencies first, the root last
    enums: tuple[Enum, ...]
    fingerprint: str
    trailing: Literal["exact", "ignore"] = "exact"  # bytes after the root: an error, or what Kafka ignores

    def struct(self, name: str) -> Struct:
        return next(s for s in self.structs if s.name == name)

    def gathers(self) -> bool:
        """Whether a gather writer may hand a record set (a ``view`` blob) out by reference, as its own buffer
        between the pieces it writes, instead of copying it: only where nothing is written back into bytes
        already written (a length of bytes, a CRC, a byte-size prefix, a compressed run), for those would have
        to cover the record set. Kafka's protocol messages are such; its record formats are not."""
        views = False
        for s in self.structs:
            if s.regions or s.wrappers:
                return False
            for f in s.fields:
                if isinstance(f.derived, (LengthOf, Checksum)) or _written_back(f.wire):
                    return False
                views = views or (isinstance(f.wire, Blob) and f.wire.view)
        return views


def _written_back(w: Wire) -> bool:
    """A wire type whose bytes are counted or compressed after they are written."""
    if isinstance(w, (StructType, ArrayType)) and w.size is not None:
        return True
    return isinstance(w, ArrayType) and w.compressed_by is not None
