"""The python backend's lowering of a struct's encoder: the values loaded from the object (derived ones
computed), then the write operations, as a mixin of :class:`generator.backends.python.lowering.Builder`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generator.backends.python.expr import py
from generator.backends.python.lowered import (
    Op,
    _camel,
)
from generator.backends.python.ops import _WriteOps
from generator.loader.spec import Field, Schema, SchemaError, Struct


class EncodeLowering:
    """The encoder side of :class:`generator.backends.python.lowering.Builder` (whose state and helpers it uses)."""

    s: Schema
    base_slots: dict
    params: Callable[..., list[str]]
    field_default: Callable[..., str]
    wrapped_by: Callable[..., Any]
    bit_decode: Callable[..., list[dict]]
    typed: Callable[..., Any]

    def encode_ops(self, st: Struct, params: list[str], path: str) -> list[Op]:
        """Encoding, in three steps: load the stored values, derive what is known before writing, write."""
        ops = self._load_ops(st)
        self._derived_ops(st, path, ops)
        self._write_ops(st, path, ops)
        return ops

    def _load_ops(self, st: Struct) -> list[Op]:
        ops: list[Op] = []
        # slots of the runtime base class (offset, key, value, timestamp...) are read directly: any kfmt.Record
        # has them, so records can be encoded as legacy messages without a copy.  Attributes the base class
        # only answers for (codec, timestamp_type...) are read like the format's own fields.
        base = set(self.base_slots.get(st.role, ()))
        # 1. load stored values
        for f in st.fields:
            if f.bits:
                for b in f.bits:
                    ops.append(Op("load", 0, dict(name=b.name, attr=b.name, obj=st.repr, base=b.name in base,
                                                  index=None, default=self.bit_default(b))))  # fmt: skip
            elif f.const is not None:
                continue
            elif f.derive and not f.derive.overridable and f.derive.func != "delta_of":
                continue
            elif f.derive and f.derive.func == "delta_of":
                ops.append(Op("load", 0, dict(name=f.derive.target, attr=f.derive.target, obj=st.repr,
                                              base=f.derive.target in base, index=self._tuple_index(st, f.derive.target),
                                              default="None")))  # fmt: skip
                if f.derive.replaced_by:
                    ops.append(Op("load", 0, dict(name=f"{f.name}_kept", attr=f.name, obj=st.repr, base=False,
                                                  index=None, default="None")))  # fmt: skip
            else:
                ops.append(Op("load", 0, dict(name=f.name, attr=f.name, obj=st.repr, base=f.name in base,
                                              index=self._tuple_index(st, f.name), default=self.field_default(f))))  # fmt: skip
        for f in st.fields:
            if f.wraps:
                ops.append(Op("load", 0, dict(name=f.wraps.field, attr=f.wraps.field, obj=st.repr, base=False,
                                              index=None, default="None")))  # fmt: skip
        for v in st.views:
            ops.append(Op("load", 0, dict(name=v.name, attr=v.name, obj=st.repr, base=v.name in base, index=None,
                                          default="None")))  # fmt: skip
            ops.append(Op("view_enc", 0, dict(name=v.name, parse=v.parse, elem=v.as_, args=self.params(v.as_))))
        wb = self.wrapped_by(st.name)
        if wb:
            o = wb.offset_field
            ops.append(Op("assign", 0, dict(name=o, expr=f"{o} - rebase_ if {o} is not None else index")))
            if wb.timestamp_field:
                t = wb.timestamp_field
                ops.append(Op("assign", 0, dict(
                    name=t, expr=f"obj.wire_{t} if restamp_ and getattr(obj, 'wire_{t}', None) is not None else {t}")))  # fmt: skip
        # objects of the format's own class have every field: read them directly, others through getattr
        # (every load names a model field, a slot the generated __init__ always sets)
        # (all at once, first: a load reads a slot and nothing before it changes one)
        own = [op for op in ops if op.kind == "load" and not op.base] if st.repr == "object" else []
        if len(own) > 1:
            ops = [Op("own_loads", 0, dict(cls=_camel(st.name), loads=[op.a for op in own]))] + [
                op for op in ops if not any(op is o for o in own)
            ]
        return ops

    def _derived_ops(self, st: Struct, path: str, ops: list[Op]) -> None:
        # 2. derived values known before writing
        for f in st.fields:
            d = f.derive
            if not d:
                continue
            if d.func == "count_of":
                ops.append(Op("assign", 0, dict(name=f.name, expr=f"len({d.target})")))
            elif d.func in ("first_of", "last_of", "max_of"):
                arr, attr = d.target.split(".")
                expr = self.element_expr(arr, attr, d.func)
                default = d.default if d.default is not None else 0
                full = expr.format(default=default)
                if d.overridable:
                    ops.append(Op("assign_if_none", 0, dict(name=f.name, expr=full)))
                else:
                    ops.append(Op("assign", 0, dict(name=f.name, expr=full)))
        for f in st.fields:
            if f.bits:
                ops.append(Op("bits_pack", 0, dict(name=f.name, items=self.bit_decode(st, f), path=f"{path}.{f.name}")))
        for f in st.fields:
            d = f.derive
            if d and d.func == "delta_of":
                expr = f"{d.target} - {d.base} if {d.target} is not None else index"
                if d.replaced_by:
                    when = py(self.typed(st, f).derived.decoded.cond)  # under it, the wire value is kept
                    expr = f"{f.name}_kept if {when} and {f.name}_kept is not None else {d.target} - {d.base}"
                ops.append(Op("assign", 0, dict(name=f.name, expr=expr)))

    def _run_value(self, st: Struct, x: Field) -> str:
        """What a fixed-width field packs as in its run: its constant, 0 for a length or CRC patched later,
        a uuid checked to be 16 bytes (struct's "16s" would pad or cut silently), else its value."""
        if x.const is not None:
            return repr(x.const)
        if x.derive and x.derive.func in ("length_of", "crc32", "crc32c") and not self._trailing_crc(st, x):
            return "0"
        return f"_uuid16({x.name})" if x.type == "uuid" else x.name

    def _write_ops(self, st: Struct, path: str, ops: list[Op]) -> None:
        # 3. write
        _WriteOps(self, st, path, ops).write()

    def _plain_tail(self, st: Struct, i: int, needpos: set[str]) -> bool:
        """True if no field after ``st.fields[i]`` is a position mark, a CRC, a fixed-width length or
        conditional: then the encoder may write them into a buffer of their own."""
        for f in st.fields[i + 1 :]:
            if f.name in needpos or f.if_:
                return False
            if f.derive and f.derive.func in ("crc32", "crc32c", "length_of"):
                return False
        return True

    def _trailing_crc(self, st: Struct, f: Field) -> bool:
        fn = [x.name for x in st.fields]
        return bool(f.derive and f.derive.func in ("crc32", "crc32c") and fn.index(f.name) > fn.index(f.derive.target))

    def _tuple_index(self, st: Struct, name: str):
        if st.repr != "tuple":
            return None
        names = [f.name for f in st.fields]
        return names.index(name)

    def bit_default(self, b) -> str:
        if b.enum:
            return repr(dict(self.s.enums[b.enum].values).get(0))
        return "False" if b.flag else "0"

    def element_expr(self, arr: str, attr: str, func: str) -> str:
        """Expression over the elements of ``arr`` for first_of / last_of / max_of."""
        elem_name = None
        for st in self.s.structs.values():
            for f in st.fields:
                if f.name == arr and f.array:
                    elem_name = f.type
        elem = self.s.structs[elem_name]
        # an attribute of the element may itself be a delta (offset_delta = offset - base, or the index)
        delta = next((f for f in elem.fields if f.name == attr and f.derive and f.derive.func == "delta_of"), None)
        if delta is not None:
            t, b = delta.derive.target, delta.derive.base
            one = f"(({arr}[-1].{t} - {b}) if {arr}[-1].{t} is not None else len({arr}) - 1)"
            if func == "last_of":
                return f"{one} if {arr} else {{default}}"
            raise SchemaError(f"{self.s.file}: {func} of a delta field is not supported")
        if func == "first_of":
            return f"{arr}[0].{attr} if {arr} else {{default}}"
        if func == "last_of":
            return f"{arr}[-1].{attr} if {arr} else {{default}}"
        return f"max([r.{attr} for r in {arr}]) if {arr} else {{default}}"
