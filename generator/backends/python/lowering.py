"""Passes from a validated schema to a fully resolved IR that templates only render.

Passes, in order:
1. resolve types (primitives, varints, blobs, structs, arrays) and check references;
2. link derived fields to what they cover (regions, CRC ranges, counts, deltas);
3. compute each struct's outer references (values it needs from enclosing structs);
4. lay out decode and encode operations, merging adjacent fixed-width fields into
   one ``struct`` format with computed offsets.

Every decision is made here; templates loop over ``ops`` and substitute."""

from __future__ import annotations

from generator.backends.python.encode_lowering import EncodeLowering
from generator.backends.python.expr import py
from generator.backends.python.lowered import (
    FormatIR,
    Op,
    StructIR,
    _at_default,
    _camel,
    _field_default,
    _versions,
    _view_slots,
)
from generator.backends.python.ops import _DecodeOps
from generator.ir.empty import absent_bytes, py_empty
from generator.ir.nodes import EmptyStruct
from generator.ir.nodes import FormatIR as TypedIR
from generator.ir.passes.validate import Validator, _err
from generator.loader.spec import FIXED, PRIMITIVES, VAR_PREFIXES, Field, Schema, SchemaError, Struct

#: the field naming a message's version in the schemas import-kafka-spec writes (a key's is its record type)


#: the fields kfmt.Record (headers) and kfmt.Batch (records) promise as lists: a value class of theirs sets [] for
#: None (a bytes field so named, a Kafka message's nullable records, keeps its None; as in the native backend)
LIST_SLOTS = ("records", "headers")


class Builder(EncodeLowering, Validator):
    def __init__(self, schema: Schema, base_slots: dict[str, tuple[str, ...]], base_class_attrs: dict, typed: TypedIR):
        super().__init__(schema)
        self.ir = typed  # the typed IR (generator.ir), for what its passes already decided
        self.base_slots = base_slots  # per role: slots of the runtime base class (kfmt.runtime.model)
        self.base_class_attrs = base_class_attrs  # per role: attributes the base class answers for
        self.consts: dict[str, tuple[str, str]] = {}

    # ------------------------------------------------------------ pass 3: params
    def params(self, name: str) -> list[str]:
        st = self.s.structs[name]
        loc = self.locals_of(st)
        need = [r for r in self.refs_of(st) if r not in loc]
        for f in st.fields:
            for inner in self.inner_structs(f):
                for p in self.params(inner):
                    if p not in loc and p not in need:
                        need.append(p)
        return need

    # ------------------------------------------------------------ sizes
    def min_size(self, name: str, start: int = 0) -> int:
        st = self.s.structs[name]
        total = 0
        for f in st.fields[start:]:
            if f.if_:
                continue
            k = self.kind(f)
            if k == "int":
                total += FIXED[f.type][1]
            elif k == "varint":
                total += 1
            elif k == "blob":
                total += PRIMITIVES[f.length][1] if f.length in PRIMITIVES else (1 if f.length in VAR_PREFIXES else 0)
            elif k == "array":
                total += PRIMITIVES[f.count][1] if f.count in PRIMITIVES else (1 if f.count in VAR_PREFIXES else 0)
            elif k == "struct":
                total += self.min_size(f.type)
            elif k == "switch":
                total += min(self.min_size(c) for c in self.inner_structs(f))
            elif k == "tagged":
                total += 1
        return total

    def trailer_size(self, st: Struct, i: int) -> int:
        """Static size of the fixed fields after field ``i`` (for 'rest' blobs)."""
        total = 0
        for f in st.fields[i + 1 :]:
            if self.kind(f) != "int" or f.if_:
                raise SchemaError(f"{self.s.file}:{f.line}: only fixed-width fields may follow a 'rest' field")
            total += FIXED[f.type][1]
        return total

    def const(self, fmt: str, comment: str) -> str:
        for name, (f, _c) in self.consts.items():
            if f == fmt:
                return name
        name = f"_S{len(self.consts)}"
        self.consts[name] = (fmt, comment)
        return name

    # ------------------------------------------------------------ conditions
    # ------------------------------------------------------------ pass 2+4: struct layout
    def positions_needed(self, st: Struct, skip_varint_regions: bool = False) -> set[str]:
        """Fields whose start position the code must remember (region and CRC starts, trailing CRCs).

        An encoder writes a varint-length region in place and needs no mark for it.
        """
        need = set()
        for f in st.fields:
            if skip_varint_regions and f.derive and f.derive.func == "length_of" and self.kind(f) == "varint":
                continue
            if f.derive and f.derive.func in ("length_of", "crc32", "crc32c"):
                need.add(f.derive.target)
                if f.derive.to:
                    need.add(f.derive.to)
                elif f.derive.func != "length_of":
                    fn = [x.name for x in st.fields]
                    if fn.index(f.name) > fn.index(f.derive.target):
                        need.add(f.name)  # trailing CRC: range ends where the CRC starts
        return need

    def struct_ir(self, name: str) -> StructIR:
        st = self.s.structs[name]
        params = self.params(name)
        path = name
        model = self._model_fields(name, st)
        wrapped_by = self.wrapped_by(name)
        dec = self._decode_ops(name, st, path)
        requires = self.requires_op(name, path)
        own = bool(requires) and st.requires is not None and any(f.name == st.requires.field for f in st.fields)
        at = self._read_by(dec, st.requires.field) if own and st.requires is not None else 0
        dec[at:at] = requires  # its own field: checked once read
        # logical values computed from deltas, and views
        first_post = len(dec)
        self._post_ops(st, path, wrapped_by, dec)
        self.prefetch(dec)
        post_ops = dec[first_post:]
        if st.repr == "value":  # a one-field struct: its value
            result = model[0][0]
        elif st.repr == "tuple":
            names = [m for m, _ in model]
            result = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
        else:
            result = f"{_camel(name)}(" + ", ".join(m for m, _ in model) + ")"

        # ---- encode ops
        enc = self.encode_ops(st, params, path)
        loads = max((i + 1 for i, op in enumerate(enc) if op.kind in ("load", "own_loads")), default=0) if own else 0
        enc[loads:loads] = requires  # an own field's value is loaded first
        base = self.base_slots.get(st.role, ()) if st.repr == "object" else ()
        blobs = {f.name for f in st.fields if self.kind(f) == "blob"}  # bytes, not a list: null stays None
        empty_lists = {t.name for f in st.fields if self.kind(f) == "tagged" for t in f.tags if t.absent == []}
        return StructIR(
            name=name,
            cls=_camel(name) if st.repr == "object" else None,
            role=st.role,
            repr=st.repr,
            doc=st.doc or st.orig_name or name,
            orig_name=st.orig_name,
            model_fields=model,
            base_slots=tuple(b for b in base),
            logical=[(lg.name, py(lg.value, ref=lambda r: f"self.{r.name}")) for lg in self.ir.struct(name).logical],
            params=params,
            min_size=max(self.min_size(name), 1),
            decode_ops=dec,
            encode_ops=enc,
            result=result,
            path=path,
            post_ops=post_ops,
            layout=[(f.name, self.type_label(st, f), f.orig_name) for f in st.fields],
            kafka=self.kafka_names(st) if st.orig_name else (),
            kafka_tagged=self.kafka_tagged(st) if st.orig_name else (),
            init_extra=[
                (
                    slot,
                    "[]" if slot == "headers" else ("-1" if slot == "timestamp" and st.role == "message" else "None"),
                )
                for slot in base
                if slot not in [m for m, _ in model]
            ],
            dec_extra=", depth_=0" if any(f.wraps for f in st.fields) else "",
            lists=tuple(m for m, _ in model if (m in LIST_SLOTS and m not in blobs) or m in empty_lists),
            enc_extra=", rebase_=0, restamp_=False" if wrapped_by else "",
        )

    def _model_fields(self, name: str, st: Struct) -> list[tuple[str, str]]:
        """The value class's fields with their defaults: bit views, fields, delta values, views, wrapped sets."""
        model: list[tuple[str, str]] = []
        for f in st.fields:
            if self.kind(f) == "tagged":  # the unknown tags, then each tagged field
                model.append((f.name, "None"))
                # an absent value of [] (a tagged array Kafka defaults to empty) is made per object, not shared
                # a struct Kafka defaults to new Type() defaults to None here (null is written as null)
                model += [(t.name, "None" if t.absent == [] or isinstance(t.absent, EmptyStruct) else repr(t.absent))
                          for t in f.tags]  # fmt: skip
                continue
            if f.bits:
                for b in f.bits:
                    default = "'none'" if b.enum else ("False" if b.flag else "0")
                    if b.enum:
                        vals = dict(self.s.enums[b.enum].values)
                        default = repr(vals.get(0, next(iter(vals.values()))))
                    model.append((b.name, default))
                continue
            if f.const is not None:
                model.append((f.name, repr(f.const)))
            elif f.derive and f.derive.func != "delta_of":
                model.append((f.name, "None"))
            elif self.kind(f) == "array":
                model.append((f.name, "None"))
            else:
                model.append((f.name, _field_default(f)))
        for f in st.fields:
            if f.derive and f.derive.func == "delta_of":
                model.append((f.derive.target, "None"))
        model += [(x, "None") for v in st.views for x in _view_slots(v)]
        wrapped_by = self.wrapped_by(name)
        for f in st.fields:
            if f.wraps:
                model.append((f.wraps.field, "None"))
        if wrapped_by and wrapped_by.timestamp_field:
            model.append((f"wire_{wrapped_by.timestamp_field}", "None"))

        return model

    def _decode_ops(self, name: str, st: Struct, path: str) -> list[Op]:
        """Decoding the wire fields: runs of fixed-width fields, regions, CRC checks, conditionals."""
        return _DecodeOps(self, name, st, path).ops()

    def _post_ops(self, st: Struct, path: str, wrapped_by, dec: list[Op]) -> None:
        """After the wire: wrapped inner sets, values from deltas, views."""
        if wrapped_by and wrapped_by.timestamp_field:
            dec.append(Op("assign", 0, dict(name=f"wire_{wrapped_by.timestamp_field}", expr="None")))
        for f in st.fields:
            if f.wraps:
                dec.append(Op("wraps", 0, self.wraps_attrs(st, f, path)))
        for f in st.fields:
            d = f.derive
            if d and d.func == "delta_of":
                # Java adds int64s with wrap-around; the optimistic decoder adds plainly and falls back
                # to the checked one (which wraps) in the rare case the sum leaves the int64 range
                decoded = self.typed(st, f).derived.decoded
                plain, fast = py(decoded), py(decoded, fast=True)
                dec.append(Op("delta", 0, dict(name=d.target, expr=plain, fast=fast)))
        for v in st.views:
            vst = self.s.structs[v.as_]
            dec.append(
                Op(
                    "view",
                    0,
                    dict(
                        name=v.name,
                        parse=v.parse,
                        elem=v.as_,
                        args=self.params(v.as_),
                        min=self.min_size(v.as_),
                        cond=py(vt.condition) if (vt := self.ir.struct(st.name).view(v.name)).condition else "True",
                        path=f"{path}.{v.name}",
                        tuple=vst.repr == "tuple",
                        keep_raw=v.keep_raw,
                    ),
                )
            )

    @staticmethod
    def _read_by(dec: list[Op], field: str) -> int:
        """The position after the decode op that reads ``field`` (a run of fixed-width fields, or its own)."""
        for i, op in enumerate(dec):
            if field in op.a.get("names", ()) or op.a.get("name") == field:
                return i + 1
        raise SchemaError(f"no decode op reads {field!r}")

    def requires_op(self, name: str, path: str) -> list[Op]:
        """The check of a struct's ``requires`` (its message's valid versions), first thing decoded and encoded."""
        cond = self.ir.struct(name).requires
        if cond is None:
            return []
        from generator.ir.printer import expr

        return [Op("requires", 0, dict(expr=py(cond), text=expr(cond, name), field=self.s.structs[name].requires.field,
                                        what=self.s.structs[name].orig_name or name, path=path))]  # fmt: skip

    def switch_attrs(self, f: Field, path: str) -> dict:
        """A switch's selector and its cases grouped by struct: (values, struct, class, the struct's params)."""
        structs = list(dict.fromkeys(c for _, c in f.cases))
        cases = [dict(values=tuple(v for v, x in f.cases if x == c), elem=c, args=self.params(c),
                      cls=_camel(c) if self.s.structs[c].repr == "object" else None)  # a nested switch checks its own
                 for c in structs]  # fmt: skip
        return dict(sel=f.switch, cases=cases, path=f"{path}.{f.name}")

    def kafka_names(self, st: Struct) -> tuple:
        """Each value field with Kafka's name for it, the kind of bytes it holds (a uuid is shown as Kafka
        shows one) and the versions it is in (None: every one): what ``kfmt.payloads`` turns a decoded message
        into Kafka's JSON with, each version's fields only."""
        out = []
        viewed = {v.parse: v for v in st.views}
        for f in st.fields:
            if f.name in viewed:  # bytes holding a message: shown as it when the view decoded it
                v = viewed[f.name]
                out.append((f.name, f.orig_name or f.name, f"view:{v.name}:{_camel(v.as_)}", _versions(f.if_)))
            elif self.kind(f) == "tagged":
                out.append((f.name, "_unknownTaggedFields", "tags", _versions(f.if_)))
                inner = [(t, self.s.structs[t.type].fields[0]) for t in f.tags]
                out += [(t.name, t.orig_name or t.name, self._bytes_kind(x), _versions(t.if_)) for t, x in inner]
            elif f.enum:  # an enum-typed whole field: its name, read through its one bit view
                out.append((f.bits[0].name, f.orig_name or f.bits[0].name, f"enum:{f.enum}", _versions(f.if_)))
            elif not f.bits:
                out.append((f.name, f.orig_name or f.name, self._bytes_kind(f), _versions(f.if_)))
        return tuple(out)

    def kafka_tagged(self, st: Struct) -> tuple:
        """Each tagged field with its value when absent (Kafka's default), which Kafka's JSON converters leave
        out (JsonConverterGenerator: a tagged field is written when it is not its default)."""
        out = []
        for f in st.fields:
            if self.kind(f) != "tagged":
                continue
            for t, x in zip(f.tags, self.typed(st, f).wire.fields):
                if isinstance(t.absent, EmptyStruct):  # new Type(): its value struct and the bytes it decodes from
                    out.append((t.name, ("empty", t.type, absent_bytes(self.ir, x))))
                else:
                    out.append((t.name, t.absent))
        return tuple(out)

    def _bytes_kind(self, f: Field) -> str:
        """How a field reads in Kafka's JSON: uuid, bytes (or arrays of them), struct:<Class> / struct[]:<Class>."""
        if f.records:
            return "records"
        st = self.s.structs.get(f.type)
        if f.array and st is not None and st.repr == "value":
            inner = st.fields[0].type
            return f"{inner}[]" if inner in ("uuid", "bytes") else ""
        if st is not None and st.repr == "object":
            return f"struct{'[]' if f.array else ''}:{_camel(f.type)}"
        if f.type == "float64" and not f.array:
            return "float64"  # NaN and infinities are written as Jackson writes them: "NaN", "Infinity"
        return f.type if f.type in ("uuid", "bytes") and not f.array else ""

    def tagged_attrs(self, st: Struct, f: Field, path: str) -> dict:
        """A tagged-field section: per tagged field its tag, value struct, params, condition and absent value."""
        typed = self.typed(st, f).wire
        tags = [
            dict(tag=t.tag, name=t.name, elem=t.type, args=self.params(t.type), absent=repr(t.absent),
                 nullable=t.nullable, cond=py(x.condition) if x.condition is not None else None,
                 absent_bytes=repr(absent_bytes(self.ir, x)) if isinstance(x.absent, EmptyStruct) else None,
                 at_default=_at_default(self.ir, t, x),
                 **self.empty_struct(x, t.name))
            for t, x in zip(f.tags, typed.fields)
        ]  # fmt: skip
        return dict(tags=tags, path=f"{path}.{f.name}")

    def empty_struct(self, x, name: str) -> dict:
        """A struct-valued tagged field's empty struct told and built without bytes, where it can (generator.ir.empty)."""
        return py_empty(self.ir, x, name, _camel)

    def type_label(self, st: Struct, f: Field) -> str:
        """A short, comparable description of a field's wire type (what `kfmt diff` shows)."""
        k = self.kind(f)
        if k == "tagged":
            return (
                "tagged{"
                + ", ".join(
                    f"{t.tag}: {t.name} {self.type_label(self.s.structs[t.type], self.s.structs[t.type].fields[0])}"
                    for t in f.tags
                )
                + "}"
            )
        if k == "switch":
            return f"switch<{f.switch}>{{" + ", ".join(f"{v}: {c}" for v, c in f.cases) + "}"
        if k == "blob":
            label = f"{f.type}<{f.length}>" + ("?" if f.nullable else "")
        elif k == "array":
            label = f"[{f.type}]<{f.count}>" + (f" {f.compressed_by}-compressed" if f.compressed_by else "")
        else:
            label = f.type
        if k in ("array", "struct") and f.length:
            label += f" sized<{f.length}>"
        if f.const is not None:
            label += f" = {f.const}"
        if f.bits:
            label += " {" + ", ".join(b.name for b in f.bits) + "}"
        if f.derive:
            label += f" ({f.derive.func} {f.derive.target})"
        if f.if_:
            label += f" if {py(self.typed(st, f).condition)}"
        return label

    def wrapped_by(self, name: str):
        """The Wraps that holds struct ``name`` as inner entries, if any."""
        for st in self.s.structs.values():
            for f in st.fields:
                if f.wraps and f.wraps.as_ == name:
                    return f.wraps
        return None

    def wraps_attrs(self, st: Struct, f: Field, path: str) -> dict:
        w = f.wraps
        wt = next(x for x in self.ir.struct(st.name).wrappers if x.source == f.name)
        inner = self.s.structs[w.as_]
        # Kafka drops a truncated inner tail: an entry is complete when its first length field fits
        off = 0
        hdr = None
        for x in inner.fields:
            if x.derive and x.derive.func == "length_of" and self.kind(x) == "int" and not x.if_:
                hdr = dict(len_off=off, len_const=self.const(">" + PRIMITIVES[x.type][0], f"{x.name} => {x.type}"),
                           start=off + PRIMITIVES[x.type][1])  # fmt: skip
                break
            if self.kind(x) != "int" or x.if_:
                break
            off += FIXED[x.type][1]
        if hdr is None:
            raise _err(self.s, st, f, "wraps: the inner struct must start with fixed fields and a length field")
        return dict(
            value=f.name,
            field=w.field,
            elem=w.as_,
            cond=py(wt.condition),
            codec=w.compressed_by,
            relative=w.offsets == "relative_to_last",
            from_first=w.offsets == "relative_to_first",
            offset=w.offset_field,
            ts_field=w.timestamp_field,
            ts_cond=py(wt.timestamps_when) if wt.timestamps_when is not None else None,
            path=f"{path}.{f.name}",
            magic=self.s.magic if self.s.magic is not None else 2,
            recursive=w.as_ == st.name,  # the fast path reads the inner ones with a leaf decoder
            cost=next(x.cost for x in self.ir.struct(st.name).wrappers if x.source == f.name),
            **hdr,
        )

    def field_default(self, f: Field) -> str:
        if f.default is not None:
            return repr(f.default)
        return "None"

    def bit_decode(self, st: Struct, f: Field) -> list[dict]:
        items = []
        for b in f.bits:
            shift = (b.mask & -b.mask).bit_length() - 1
            if b.enum:
                selects = next(x for x in self.typed(st, f).bits if x.name == b.name).selects_codec
                err = "_UnsupportedCodecError" if selects else "_InvalidValueError"
                items.append(dict(name=b.name, kind="enum", enum=b.enum, mask=b.mask, shift=shift, error=err))
            elif b.flag:
                items.append(dict(name=b.name, kind="flag", mask=b.mask, shift=shift))
            else:
                items.append(dict(name=b.name, kind="int", mask=b.mask, shift=shift))
            items[-1].update(const=b.const, is_null=b.is_null)
        return items

    #: ops that neither read the input nor move ``pos``: a prefetched read may jump over them
    _NO_READ = ("mark", "region", "crc_check", "const_check", "bits")

    def prefetch(self, dec: list[Op]) -> None:
        """Let the optimistic decoder read each stretch of fixed-width fields with one ``unpack_from``.

        A stretch is a run of fixed fields, the runs that follow it with only position marks, region and
        CRC checks between, and a fixed length prefix of a blob right after them (v0/v1: offset, size,
        crc, magic, attributes, timestamp and key length in one call).  The first run reads them all;
        the later ones only advance ``pos``.  Reading ahead is safe there: the checks between still run
        before anything read is used, and input too short for the read raises, which sends the batch
        to the checked decoder.
        """
        i = 0
        while i < len(dec):
            head = dec[i]
            if head.kind != "run":
                i += 1
                continue
            group, fmt, names = [head], head.a["fmt"], list(head.a["names"])
            j = i + 1
            while j < len(dec) and dec[j].depth == head.depth:
                op = dec[j]
                if op.kind == "run":
                    group.append(op)
                    fmt += op.a["fmt"]
                    names += op.a["names"]
                elif op.kind == "blob" and op.a["prefix"] == "fixed":
                    group.append(op)
                    fmt += op.a["fmt"]
                    names.append(f"n_{op.a['name']}")
                    break
                elif op.kind not in self._NO_READ:
                    break
                j += 1
            if len(group) > 1:
                head.a.update(fetch_const=self.const(">" + fmt, "prefetch: " + ", ".join(names)), fetch_names=names)
                for op in group[1:]:
                    op.a["prefetched"] = True
            i = j

    def prefix_attrs(self, f: Field) -> dict:
        """How a length prefix of a sized struct/array is read and written."""
        if f.length in VAR_PREFIXES:
            return dict(prefix="varint", vkind=f.length)
        fmt = ">" + PRIMITIVES[f.length][0]
        return dict(
            prefix="fixed", const=self.const(fmt, f"{f.name} length => {f.length}"), size=PRIMITIVES[f.length][1]
        )

    def blob_attrs(self, st: Struct, i: int, f: Field, end: str, path: str) -> dict:
        pre = f.length
        a = dict(name=f.name, nullable=f.nullable, string=f.type == "string", end=end, path=f"{path}.{f.name}",
                 view=f.records, gather=f.records and self.ir.gathers())  # fmt: skip
        if pre in VAR_PREFIXES:
            a.update(prefix="varint", vkind=pre)
        elif pre in PRIMITIVES:
            fmt = ">" + PRIMITIVES[pre][0]
            a.update(
                prefix="fixed", const=self.const(fmt, f"{f.name} length => {pre}"), size=PRIMITIVES[pre][1], fmt=fmt[1:]
            )
        elif pre == "rest":
            a.update(prefix="rest", trailer=self.trailer_size(st, i))
        else:
            raise SchemaError(f"{self.s.file}:{f.line}: a length taken from another field is not supported yet")
        a["max"] = f.max
        return a

    def array_attrs(self, st: Struct, i: int, f: Field, end: str, path: str, regions) -> dict:
        elem = self.s.structs[f.type]
        a = dict(
            name=f.name,
            elem=f.type,
            args=self.params(f.type),
            end=end,
            path=f"{path}.{f.name}",
            min=max(self.min_size(f.type), 1),
            compressed_by=f.compressed_by,
            last=i == len(st.fields) - 1,
            tuple=elem.repr == "tuple",
            limit="max_records" if elem.role in ("record", "batch") else "max_headers",
            **self.budget(st, f),
            elem_index=self.uses_index(elem),
            packed=_packed(elem),
            # nullable without a byte-size prefix: the count says null (-1; compact: 0)
            null_count=f.nullable and f.length is None and (f.count in PRIMITIVES or f.count in VAR_PREFIXES),
        )
        if f.count in VAR_PREFIXES:
            a.update(count="varint", vkind=f.count)
        elif f.count in PRIMITIVES:
            a.update(count="fixed", const=self.const(">" + PRIMITIVES[f.count][0], f"{f.name} count => {f.count}"),
                     size=PRIMITIVES[f.count][1])  # fmt: skip
        elif f.count == "rest":
            a.update(count="rest")
        else:
            a.update(count="field", count_field=f.count)
        if f.compressed_by and not a["last"]:
            raise SchemaError(f"{self.s.file}:{f.line}: a compressed array must be the last field of its struct")
        return a

    def typed(self, st: Struct, f: Field):
        """The typed IR's node for field ``f`` of ``st`` (conditions and derived values as expressions)."""
        return self.ir.struct(st.name).field(f.name)

    def budget(self, st: Struct, f: Field) -> dict:
        """The max_memory budget of an array, from the typed IR's budget pass: cost per element, the arrays
        in each element (``access`` spelled as the element is: an object's attribute or a tuple's index),
        and whether an enclosing array accounts for it."""
        b = self.ir.struct(st.name).field(f.name).wire.budget
        elem = self.s.structs[f.type]
        names = [x.name for x in elem.fields]
        nested = [
            dict(
                access=f"[{names.index(x.field)}]" if elem.repr == "tuple" else f".{x.field}",
                cost=x.cost,
                min=x.min_size,
            )
            for x in b.nested
        ]
        return dict(cost=b.cost, nested=nested, accounted=b.accounted)

    # ------------------------------------------------------------ encode
    def uses_index(self, st: Struct) -> bool:
        """Whether the encoder of ``st`` reads its position in the array (an offset delta defaulting to it)."""
        return bool(self.wrapped_by(st.name)) or any(
            f.derive and f.derive.func == "delta_of" and not f.derive.replaced_by for f in st.fields
        )


def build(b: Builder) -> FormatIR:
    """Run the passes: the IR of every struct reachable from the root."""
    schema = b.s
    structs = [b.struct_ir(n) for n in b.used]
    enums = [(e.name, list(e.values)) for n, e in sorted(schema.enums.items())]
    return FormatIR(
        id=schema.id,
        file=schema.file,
        doc=schema.doc,
        doc_ref=schema.doc_ref,
        magic=schema.magic,
        auto_detect=schema.auto_detect,
        trailing=schema.trailing,
        root=schema.root,
        sha256=schema.sha256,
        fingerprint=schema.fingerprint,
        structs=structs,
        struct_consts=[(n, f, c) for n, (f, c) in b.consts.items()],
        enums=enums,
        wrap_offsets=next((f.wraps.offsets for f in schema.structs[schema.root].fields if f.wraps), None),
        index_offsets=b.uses_index(schema.structs[schema.root]),
        magic_offset=next((f.offset for f in b.ir.struct(b.ir.root).fields if f.name == "magic"), None),
        params=tuple(p for p, _ in schema.params),
        gathers=b.ir.gathers(),
    )


def _packed(elem: Struct) -> str | None:
    """The struct code of an array's elements when each is one plain integer (Kafka's ``[]int32``: an element
    struct of one unconditional integer field, nothing derived): a short array is packed in one call."""
    if elem.repr not in ("tuple", "value") or len(elem.fields) != 1:
        return None
    (f,) = elem.fields
    plain = f.type in PRIMITIVES and not (f.array or f.if_ or f.derive or f.bits or f.enum) and f.const is None
    return PRIMITIVES[f.type][0] if plain else None
