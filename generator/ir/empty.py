"""The bytes of a struct with each field at its default: what a struct-valued tagged field reads as when its tag
is absent (Kafka's ``new Type()``, :class:`generator.ir.nodes.EmptyStruct`), and what it is left out at. One
definition, which every backend decodes the absent value from and compares an encoded value with."""

from __future__ import annotations

import struct as _struct

from generator.ir import nodes as n
from kfmt.runtime.varint import write_uvarint, write_varint, write_varlong


class NoEmptyValue(ValueError):
    """A struct whose fields this cannot lay out at their defaults (a switch, a derived or conditional field)."""


def absent_bytes(ir: n.FormatIR, t: n.TaggedField) -> bytes:
    """The bytes of tagged field ``t``'s value struct holding the empty struct its absent value names."""
    return struct_bytes(ir, t.struct)


def py_at_default(t: n.TaggedField, var: str) -> str:
    """The Python test (for both python backends) that a decoded tagged field ``var`` holds the value its
    encoders leave it out at (its absent value, or None when it is not nullable); a struct whose absent value
    is the empty struct is compared as bytes, by :func:`absent_bytes`, instead."""
    if t.nullable:
        return f"{var} == {t.absent!r}"
    return f"({var} == {t.absent!r} or {var} is None)"


def py_empty_test(ir: n.FormatIR, t: n.TaggedField, var: str, cls: str) -> str | None:
    """A Python test that ``var`` (a struct-valued tagged field's value, class ``cls``) holds the empty struct, so
    that it encodes to :func:`absent_bytes` and is left out, without encoding it: each integer field at its default
    (an int, as encoders take it) and no tags. None where the struct has other kinds of field: then the value is
    encoded and its bytes compared with :func:`absent_bytes`, as every such value may be."""
    (value,) = ir.struct(t.struct).fields
    if not isinstance(value.wire, n.StructType) or value.wire.marker is not None:
        return None
    terms = [f"{var}.__class__ is {cls}"]
    for f in ir.struct(value.wire.name).fields:
        w = f.wire
        if f.condition is not None or f.derived is not None:
            return None
        if isinstance(w, n.Tagged) and not w.fields:
            terms.append(f"not {var}.{f.name}")
        elif isinstance(w, n.Varint) or (isinstance(w, n.Int) and w.kind == "int"):
            d = _default(f)
            if isinstance(d, bool) or not isinstance(d, int):
                return None
            terms.append(f"{var}.{f.name}.__class__ is int and {var}.{f.name} == {d}")
        else:
            return None
    return " and ".join(terms)


def py_empty(ir: n.FormatIR, t: n.TaggedField, var: str, camel) -> dict:
    """What the python backend's templates use of a tagged field ``t`` (its value in ``var``): ``empty_test``,
    ``empty_value`` and ``empty_build`` (:func:`py_empty_fields`) of its empty struct, and the class ``empty_cls``
    (``camel``: the backend's class names); all None where its absent value is not an empty struct."""
    if not isinstance(t.absent, n.EmptyStruct):
        return dict(empty_test=None, empty_value=None, empty_build=None)
    wire = ir.struct(t.struct).fields[0].wire
    cls = camel(wire.name) if isinstance(wire, n.StructType) else ""
    value = py_empty_value(ir, t, cls)
    build = py_empty_fields(ir, t) if value is not None else None
    return dict(empty_test=py_empty_test(ir, t, var, cls), empty_value=value, empty_cls=cls, empty_build=build)


def py_empty_value(ir: n.FormatIR, t: n.TaggedField, cls: str) -> str | None:
    """A Python expression building what :func:`absent_bytes` decodes to, for the structs :func:`py_empty_test`
    tells without encoding (integer fields and a tag section): ``cls`` with each field at its default and no tags.
    None for any other struct: its absent value is decoded from the bytes."""
    fields = py_empty_fields(ir, t)
    if fields is None or py_empty_test(ir, t, "v", cls) is None:
        return None
    return f"{cls}({', '.join(f'{name}={value}' for name, value in fields)})"


def py_empty_fields(ir: n.FormatIR, t: n.TaggedField) -> list[tuple[str, str]] | None:
    """The fields of what :func:`py_empty_value` builds, each with its value as a Python expression (a new list for
    the tag section), in the struct's order: every slot of its value class (a struct of integers and a tag section
    has no other), set directly by the python backend; None where :func:`py_empty_value` is None."""
    if py_empty_test(ir, t, "v", "C") is None:
        return None
    (value,) = ir.struct(t.struct).fields
    return [(f.name, "[]" if isinstance(f.wire, n.Tagged) else repr(_default(f)))
            for f in ir.struct(value.wire.name).fields]  # type: ignore[union-attr]  # fmt: skip


def _default(f: n.Field):
    """A field's value in the empty struct: its default, 0 where it has none (or a null one)."""
    return f.default.value if isinstance(f.default, n.Const) and f.default.value is not None else 0


def struct_bytes(ir: n.FormatIR, name: str) -> bytes:
    st = ir.struct(name)
    return b"".join(_field(ir, f) for f in st.fields)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    write_uvarint(out, v)
    return bytes(out)


def _varint(w: n.Varint, v: int) -> bytes:
    out = bytearray()
    if not w.zigzag:
        write_uvarint(out, v + 1 if w.compact else v)
    else:
        (write_varint if w.bits == 32 else write_varlong)(out, v)
    return bytes(out)


def _count(extent, what: str) -> bytes:
    """An empty blob's length or an empty array's count, as its prefix writes 0."""
    if isinstance(extent, n.Int):
        return bytes(extent.width)
    if isinstance(extent, n.Varint):
        return _varint(extent, 0)
    raise NoEmptyValue(f"{what} without a length or count prefix")


def _field(ir: n.FormatIR, f: n.Field) -> bytes:
    if f.condition is not None or f.derived is not None:
        raise NoEmptyValue(f"field {f.name!r} is conditional or derived")
    w = f.wire
    value = _default(f)
    if isinstance(w, n.Int):
        if w.kind == "float64":
            return _struct.pack(">d", float(value))
        if w.kind == "uuid":
            return bytes(16)
        return int(value).to_bytes(w.width, "big", signed=w.signed)
    if isinstance(w, n.Varint):
        return _varint(w, int(value))
    if isinstance(w, (n.Blob, n.ArrayType)):
        if isinstance(w, n.ArrayType) and w.size is not None:
            raise NoEmptyValue(f"field {f.name!r} has a byte-size prefix")
        return _count(w.length if isinstance(w, n.Blob) else w.count, f"field {f.name!r}")
    if isinstance(w, n.StructType):
        if w.size is not None:
            raise NoEmptyValue(f"field {f.name!r} has a byte-size prefix")
        present = b"\x01" if w.marker is not None else b""  # int8 1 or uvarint 1: present, not null
        return present + struct_bytes(ir, w.name)
    if isinstance(w, n.Tagged):
        return _uvarint(0)
    raise NoEmptyValue(f"field {f.name!r} is a switch")
