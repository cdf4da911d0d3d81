"""The operation lists of one struct: decoding (fixed-width fields read together in one run, derived values
checked, nested structs and arrays) and writing (fixed-width fields written together, varint-length
regions, nested structs)."""

from __future__ import annotations

import struct as _struct
from typing import Any

from generator.backends.python.expr import py
from generator.backends.python.lowered import Op
from generator.loader.spec import FIXED, PRIMITIVES, Field, Struct


class _DecodeOps:
    """The decode ops of one struct, field by field: a run of fixed-width fields is read at once, a length
    field opens a region its fields must fill, a CRC is checked over its range, a conditional field is
    decoded under its condition (else its default)."""

    def __init__(self, b: Any, name: str, st: Struct, path: str):
        self.b, self.name, self.st, self.path = b, name, st, path
        fnames = [f.name for f in st.fields]
        self.needpos = b.positions_needed(st)
        self.dec: list[Op] = []
        self.regions: list[tuple[str, str]] = []  # (end var, length field)
        self.end = "end"
        self.depth = 0
        self.run: list[Field] = []
        self.pending_region: dict[str, Field] = {}  # from-field -> length field
        self.pending_crc: dict[str, Field] = {}  # from-field -> crc field (leading)
        self.deferred_crc: dict[str, Op] = {}  # end field -> CRC check waiting for it
        for f in st.fields:
            if f.derive and f.derive.func == "length_of":
                self.pending_region[f.derive.target] = f
            if f.derive and f.derive.func in ("crc32", "crc32c"):
                if fnames.index(f.name) < fnames.index(f.derive.target):
                    self.pending_crc[f.derive.target] = f

    def ops(self) -> list[Op]:
        for i, f in enumerate(self.st.fields):
            k = self.b.kind(f)
            if f.name in self.needpos or f.if_ or k != "int":
                self.flush_run()
            if f.if_:
                self.dec.append(Op("if", self.depth, dict(expr=py(self.b.typed(self.st, f).condition))))
                self.depth += 1
            if f.name in self.needpos:
                self.positions(i, f)
            self.field(i, f, k)
            self.after(f)
        self.flush_run()
        for end_var, length in reversed(self.regions):
            self.dec.append(Op("region_end", 0, dict(end=end_var, length=length, path=f"{self.path}.{length}")))
        return self.dec

    def flush_run(self) -> None:
        run = self.run
        if not run:
            return
        fmt = ">" + "".join(FIXED[x.type][0] for x in run)
        const = self.b.const(fmt, ", ".join(f"{x.name} => {x.type}" for x in run))
        signed1 = len(run) == 1 and run[0].type == "int8"
        byte1 = len(run) == 1 and run[0].type in ("int8", "uint8")  # a bool is read by its format ("?")
        self.dec.append(Op("run", self.depth, dict(const=const, size=_struct.calcsize(fmt), names=[x.name for x in run],
                                                   end=self.end, path=self.path, signed1=signed1, byte1=byte1,
                                                   fmt=fmt[1:])))  # fmt: skip
        for x in run:
            self.post_decode(x)
        self.run = []

    def crc_check(self, cf: Field, stop: str) -> Op:
        """Check of the CRC field ``cf`` over its target's start up to ``stop``."""
        return Op("crc_check", self.depth, dict(func=cf.derive.func, crc=cf.name, start=f"p_{cf.derive.target}",
                                                stop=stop, path=f"{self.path}.{cf.name}"))  # fmt: skip

    def post_decode(self, x: Field) -> None:
        path = f"{self.path}.{x.name}"
        if x.const is not None:
            self.dec.append(Op("const_check", self.depth, dict(name=x.name, value=x.const, path=path)))
        if x.bits:
            self.dec.append(Op("bits", self.depth, dict(src=x.name, items=self.b.bit_decode(self.st, x), path=path)))

    def positions(self, i: int, f: Field) -> None:
        """A field whose position is needed: marked; a region or a CRC range may start there."""
        self.dec.append(Op("mark", self.depth, dict(var=f"p_{f.name}")))
        if f.name in self.pending_region:
            lf = self.pending_region[f.name]
            new_end = f"e_{len(self.regions)}"
            self.dec.append(Op("region", self.depth, dict(length=lf.name, start=f"p_{f.name}", end=new_end,
                                                          outer=self.end, min=self.b.min_size(self.name, i),
                                                          path=f"{self.path}.{lf.name}")))  # fmt: skip
            self.regions.append((new_end, lf.name))
            self.end = new_end
        if f.name in self.pending_crc:
            cf = self.pending_crc[f.name]
            check = self.crc_check(cf, f"p_{cf.derive.to}" if cf.derive.to else self.end)
            if cf.derive.to:
                self.deferred_crc[cf.derive.to] = check  # checked once the end of its range is known
            else:
                self.dec.append(check)
        if f.name in self.deferred_crc:
            self.dec.append(self.deferred_crc.pop(f.name))

    def field(self, i: int, f: Field, k: str) -> None:
        b, st, path, end, depth = self.b, self.st, self.path, self.end, self.depth
        if k == "int":
            self.run.append(f)
            if f.if_:
                self.flush_run()
        elif k == "varint":
            self.dec.append(Op("varint", depth, dict(name=f.name, vkind=f.type, end=end, path=f"{path}.{f.name}")))
        elif k == "blob":
            self.dec.append(Op("blob", depth, b.blob_attrs(st, i, f, end, path)))
        elif k == "switch":
            self.dec.append(Op("switch", depth, dict(b.switch_attrs(f, path), name=f.name, end=end)))
        elif k == "tagged":
            self.dec.append(Op("tagged", depth, dict(b.tagged_attrs(st, f, path), name=f.name, end=end)))
        else:
            self.nested(i, f, k)

    def nested(self, i: int, f: Field, k: str) -> None:
        """An array or a struct: inside a length prefix, behind a null marker, or as it is."""
        b, path, end = self.b, self.path, self.end
        inner_end = f"s_{f.name}" if f.length else end
        if k == "array":
            inner = Op("array", 0, b.array_attrs(self.st, i, f, inner_end, path, self.regions))
        else:
            inner = Op("struct", 0, dict(name=f.name, elem=f.type, args=b.params(f.type), end=inner_end,
                                         path=f"{path}.{f.name}"))  # fmt: skip
        if f.length:
            self.dec.append(Op("sized", self.depth, dict(b.prefix_attrs(f), name=f.name, end=end, inner=inner,
                                                         nullable=f.nullable, path=f"{path}.{f.name}")))  # fmt: skip
        elif k == "struct" and f.nullable:
            self.dec.append(Op("nullmark", self.depth, dict(name=f.name, mkind=f.marker or "int8", end=end,
                                                            inner=inner, path=f"{path}.{f.name}")))  # fmt: skip
        else:
            inner.depth = self.depth
            self.dec.append(inner)

    def after(self, f: Field) -> None:
        """A trailing CRC checked once read; a conditional field closed (its default when absent)."""
        if (
            f.derive
            and f.derive.func in ("crc32", "crc32c")
            and f.name not in [c.name for c in self.pending_crc.values()]
        ):
            self.flush_run()
            self.dec.append(self.crc_check(f, f"p_{f.derive.to or f.name}"))
        if f.if_:
            self.flush_run()
            self.depth -= 1
            self.dec.append(Op("else", self.depth, {}))
            self.dec.append(Op("assign", self.depth + 1, dict(name=f.name, expr=self.b.field_default(f))))


class _WriteOps:
    """The write ops of one struct's encoder, field by field: runs of fixed-width fields packed at once (with
    placeholders for lengths and CRCs patched at the end), varint lengths written after what they count,
    conditional fields under their condition."""

    def __init__(self, b: Any, st: Struct, path: str, ops: list[Op]):
        self.b, self.st, self.path, self.ops = b, st, path, ops
        self.needpos = b.positions_needed(st, skip_varint_regions=True)
        self.out = "out"
        self.depth = 0
        self.run: list[Field] = []
        self.regions: list[dict] = []
        self.crcs: list[dict] = []

    def write(self) -> None:
        b, st = self.b, self.st
        for i, f in enumerate(st.fields):
            k = b.kind(f)
            is_varint_len = bool(f.derive and f.derive.func == "length_of" and k == "varint")
            # a fixed field that starts a range stays in its run: its position is marked inside the run
            in_run = k == "int" and not f.if_ and not b._trailing_crc(st, f)
            if (f.name in self.needpos and not in_run) or f.if_ or k != "int" or is_varint_len:
                self.flush()
            if f.if_:
                self.ops.append(Op("if", self.depth, dict(expr=py(b.typed(st, f).condition))))
                self.depth += 1
            if f.name in self.needpos and not in_run:
                self.ops.append(Op("mark", self.depth, dict(var=f"p_{f.name}", out=self.out)))
            self.field(i, f, k, is_varint_len)
            if f.if_:
                self.flush()
                self.depth -= 1
        self.flush()
        self.close()

    def flush(self) -> None:
        run, b, st = self.run, self.b, self.st
        if not run:
            return
        fmt = ">" + "".join(FIXED[x.type][0] for x in run)
        const = b.const(fmt, ", ".join(f"{x.name} => {x.type}" for x in run))
        values = [b._run_value(st, x) for x in run]
        marks = []  # positions inside the packed run: placeholders (q_) and range starts (p_)
        off = 0
        for x in run:
            if x.name in self.needpos:
                marks.append((f"p_{x.name}", off))
            if x.derive and x.derive.func in ("length_of", "crc32", "crc32c") and not b._trailing_crc(st, x):
                marks.append((f"q_{x.name}", off))
            off += FIXED[x.type][1]
        byte = len(run) == 1 and run[0].type in ("int8", "uint8") and not marks
        self.ops.append(Op("run", self.depth, dict(const=const, values=values, out=self.out, marks=marks, byte=byte,
                                                   byte_type=run[0].type, byte_max=127 if run[0].type == "int8" else 255,
                                                   path=f"{self.path}.{run[0].name}")))  # fmt: skip
        self.run = []

    def field(self, i: int, f: Field, k: str, is_varint_len: bool) -> None:
        b, st, depth, out, path = self.b, self.st, self.depth, self.out, self.path
        if b._trailing_crc(st, f):
            self.ops.append(Op("crc_append", depth, dict(func=f.derive.func, start=f"p_{f.derive.target}", out=out,
                                                         const=b.const(">I", f"{f.name} => uint32"))))  # fmt: skip
        elif is_varint_len:
            self.varint_length(i, f)
        elif k == "int":
            self.fixed(f)
        elif k == "varint":
            self.ops.append(Op("varint", depth, dict(value=f.name, vkind=f.type, out=out, path=f"{path}.{f.name}")))
        elif k == "blob":
            if f.wraps:
                self.ops.append(Op("wraps_enc", depth, b.wraps_attrs(st, f, path)))
            self.ops.append(Op("blob", depth, dict(b.blob_attrs(st, i, f, "end", path), value=f.name, out=out)))
        elif k == "switch":
            self.ops.append(Op("switch", depth, dict(b.switch_attrs(f, path), value=f.name, out=out)))
        elif k == "tagged":
            self.ops.append(Op("tagged", depth, dict(b.tagged_attrs(st, f, path), value=f.name, out=out)))
        else:
            self.nested(i, f, k)

    def varint_length(self, i: int, f: Field) -> None:
        if self.depth == 0 and self.b._plain_tail(self.st, i, self.needpos):
            # nothing after the length refers to a position: write the rest into a buffer of its own,
            # then its length and the buffer (cheaper than widening a placeholder byte in place)
            buf = f"counted_{f.name}"  # the bytes the length counts
            self.ops.append(Op("region_open", self.depth, dict(buf=buf)))
            self.regions.append(dict(kind="buffer", field=f.name, vkind=f.type, buf=buf, parent=self.out))
            self.out = buf
        else:
            # reserve one byte for the length, write the fields after it, then patch (or widen) it
            body = f"q_{f.name}"
            self.ops.append(Op("mark", self.depth, dict(var=body, out=self.out)))
            self.ops.append(Op("assign", self.depth, dict(name=f"{self.out}.append", expr=None, call="0")))
            self.regions.append(dict(kind="varint", field=f.name, vkind=f.type, body=body, parent=self.out))

    def fixed(self, f: Field) -> None:
        b, out = self.b, self.out
        if f.derive and f.derive.func == "length_of":
            self.regions.append(dict(kind="fixed", field=f.name, start=f"p_{f.derive.target}", out=out,
                                     const=b.const(">" + PRIMITIVES[f.type][0], f"{f.name} => {f.type}")))  # fmt: skip
        if f.derive and f.derive.func in ("crc32", "crc32c"):
            self.crcs.append(dict(field=f.name, func=f.derive.func, start=f"p_{f.derive.target}",
                                  stop=f"p_{f.derive.to}" if f.derive.to else None, out=out,
                                  const=b.const(">I", f"{f.name} => uint32")))  # fmt: skip
        self.run.append(f)
        if f.if_:
            self.flush()

    def nested(self, i: int, f: Field, k: str) -> None:
        b, out, path = self.b, self.out, self.path
        if k == "array":
            a = b.array_attrs(self.st, i, f, "end", path, [])
            a.update(out=out, magic=b.s.magic if b.s.magic is not None else 2, value=f.name)
            inner = Op("array", 0, a)
        else:
            inner = Op("struct", 0, dict(value=f.name, elem=f.type, args=b.params(f.type), out=out))
        if f.length:
            self.ops.append(Op("sized", self.depth, dict(b.prefix_attrs(f), value=f.name, out=out, inner=inner,
                                                         nullable=f.nullable, path=f"{path}.{f.name}")))  # fmt: skip
        elif k == "struct" and f.nullable:
            self.ops.append(Op("nullmark", self.depth, dict(value=f.name, mkind=f.marker or "int8", out=out,
                                                            inner=inner)))  # fmt: skip
        else:
            inner.depth = self.depth
            self.ops.append(inner)

    def close(self) -> None:
        """Lengths and CRCs patched once what they cover is written."""
        for r in reversed(self.regions):
            if r["kind"] == "buffer":
                self.ops.append(Op("region_close", 0, dict(r, path=f"{self.path}.{r['field']}")))
                self.out = r["parent"]
            elif r["kind"] == "varint":
                self.ops.append(Op("region_varint", 0, dict(r, path=f"{self.path}.{r['field']}")))
                self.out = r["parent"]
            else:
                self.ops.append(Op("region_fixed", 0, r))
        for c in self.crcs:
            self.ops.append(Op("crc_patch", 0, c))
