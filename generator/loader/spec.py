"""The spec a schema file loads into: its types (``Schema``, ``Struct``, ``Field`` and what a field carries: bits,
conditions, derived values, wrappers), the vocabulary of the schema language (wire types, roles, derive
functions, comparators) and its limits. Data only: reading and checking are the package's other modules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = {
    # name: (struct format char, size, signed)
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint8": ("B", 1),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
}


#: fixed-width values that are not integers (Kafka's message encoding): never a length, count or bit field
SCALARS = {
    "bool": ("?", 1),  # one byte; any non-zero byte reads true (Kafka's readByte() != 0), written as 1
    "float64": ("d", 8),  # IEEE 754 double, big-endian
    "uuid": ("16s", 16),  # 16 bytes (Kafka's Uuid: two longs), decoded as bytes
}


#: every fixed-width field type: its struct format and size
FIXED = {**PRIMITIVES, **SCALARS}


VARINTS = ("varint", "varlong", "uvarint")


#: Kafka's compact length or count (flexible versions): an unsigned varint holding N + 1, 0 for null
COMPACT = "compact"


#: what a length or a count may be besides the fixed-width integers
VAR_PREFIXES = (*VARINTS, COMPACT)


BLOBS = ("bytes", "string")


#: a field's type when it is a switch (its struct chosen by an integer read before it)
SWITCH = "switch"


#: the type of a struct's tagged-field section (Kafka's flexible versions): the struct's fields with a
#: ``tag`` are read from it by tag; the section field itself holds the tags no field names, kept raw
TAGGED = "tagged_fields"


ROLES = ("batch", "record", "message", "struct")


OFFSET_MODES = ("absolute", "relative_to_last", "relative_to_first")


REPRS = ("object", "tuple", "value")  # value: a one-field struct decoded as that field's value


DERIVE_FUNCS = ("length_of", "count_of", "crc32", "crc32c", "last_of", "first_of", "max_of", "delta_of")


COMPARATORS = ("eq", "ne", "ge", "gt", "le", "lt")


IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


# generated code keeps its own locals under these prefixes (n_key, p_attributes, e_0, body_0 ...)
RESERVED_PREFIX = re.compile(r"^(n|p|q|e|i|s|body|append)_|_$")


MAX_INT = 2**63 - 1


RESERVED = {
    "buf", "pos", "end", "out", "opts", "obj", "index", "items", "data", "start", "self",
    "cls", "path", "exc", "dpos", "dend", "c", "this", "value_",
    # builtins the generated code calls
    "len", "bytes", "str", "getattr", "max", "enumerate", "range", "bytearray", "type", "list", "tuple",
    "int", "bool", "dict", "object", "super", "property", "isinstance",
}  # fmt: skip


# module-level names of the generated modules (entry points, Construct objects' neighbours) and the
# model's methods: a struct or field of that name would shadow them
ENTRY_POINTS = {"decode", "decode_from", "decode_run", "encode", "encode_all", "encoded_size", "as_dict"}


MAX_DEPTH = 32  # YAML nesting (a format needs about 6)


MAX_SCALAR = 10_000  # characters in one YAML scalar (docs are capped at 4,000 after loading)


MAX_INT_DIGITS = 25  # an int64 in decimal, hex or binary fits; anything longer is a mistake or an attack


class SchemaError(Exception):
    """A schema is invalid; the message names file, line and YAML path."""


@dataclass(frozen=True)
class Cond:
    field: str
    op: str | None = None  # None: truthy
    value: int | str | None = None
    op2: str | None = None  # a range: the upper bound (le/lt) with ``op`` the lower one (ge/gt)
    value2: int | str | None = None

    def halves(self) -> tuple[Cond, ...]:
        """The comparisons it holds: itself, or a range's two."""
        if self.op2 is None:
            return (self,)
        return (Cond(self.field, self.op, self.value), Cond(self.field, self.op2, self.value2))


@dataclass(frozen=True)
class Bit:
    name: str
    mask: int
    doc: str = ""
    enum: str | None = None
    flag: bool = False
    const: int | None = None  # always written, checked on read
    is_null: str | None = None  # flag set when this field is None


@dataclass(frozen=True)
class Derive:
    func: str
    target: str  # field (or array.field) it is computed from
    base: str | None = None
    default: int | None = None
    overridable: bool = False
    replaced_by: str | None = None
    when: Cond | None = None
    to: str | None = None  # end of a crc range (a field name) instead of the end of the struct


@dataclass(frozen=True)
class Wraps:
    """A bytes field that, when ``when`` holds, is a compressed set of ``as_`` entries (a wrapper message)."""

    field: str  # name of the decoded list in the model
    as_: str
    when: Cond
    compressed_by: str
    offsets: str = "absolute"
    offset_field: str = "offset"
    timestamp_field: str | None = None  # inner timestamps replaced by this wrapper field...
    timestamps_when: Cond | None = None  # ...under this condition


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # primitive, varint kind, bytes/string, or a struct name
    line: int
    array: bool = False
    orig_name: str = ""
    doc: str = ""
    length: str | None = None  # bytes/string: a prefix type, 'rest' or a field name
    nullable: bool = False
    count: str | None = None  # array: a prefix type, a field name, or 'rest'
    default: Any = None
    const: int | None = None
    derive: Derive | None = None
    bits: tuple[Bit, ...] = ()
    compressed_by: str | None = None
    if_: Cond | None = None
    max: int | None = None
    wraps: Wraps | None = None
    switch: str | None = None  # type SWITCH: the integer field choosing the struct
    cases: tuple[tuple[int, str], ...] = ()  # (selector value, struct), by value
    tag: int | None = None  # a tagged field: read from its struct's tagged-field section
    tags: tuple[Field, ...] = ()  # type TAGGED: the struct's tagged fields, by tag (type: their value struct)
    absent: Any = None  # a tagged field: its value when its tag is not written (never written when equal)
    marker: str | None = None  # a nullable struct without a length: its null marker, int8 (-1/1) or uvarint (0/1)
    enum: str | None = None  # an enum-typed whole field: read as its one bit view <name> over every bit
    records: bool = False  # a bytes field holding a record set (Kafka's records type), decoded by the readers


@dataclass(frozen=True)
class View:
    name: str
    parse: str
    as_: str
    when: Cond | None
    keep_raw: bool = False  # on_error: raw (the parse failing leaves the bytes, its error in <name>_error)


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]
    line: int
    orig_name: str = ""
    doc: str = ""
    role: str = "struct"
    repr: str = "object"
    logical: tuple[tuple[str, tuple[str, ...]], ...] = ()
    views: tuple[View, ...] = ()
    requires: Cond | None = None  # decoded and encoded only when this holds (a message's valid versions)


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[tuple[int, str], ...]
    doc: str = ""


@dataclass
class Schema:
    id: str
    file: str
    doc: str
    doc_ref: str
    magic: int | None
    auto_detect: bool
    root: str | None
    structs: dict[str, Struct] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    sha256: str = ""
    fingerprint: str = ""
    sources: tuple[bytes, ...] = ()
    params: tuple[tuple[str, str], ...] = ()  # (name, integer type): values the caller passes to decode and encode
    trailing: str = "exact"  # bytes after the root: an error (exact), or what Kafka's reader ignores (ignore)
    api: dict | None = None  # a protocol message: its API (key, kind, name, versions...; see _api)
