"""Passes from a validated schema to a fully resolved IR that templates only render.

Passes, in order:
1. resolve types (primitives, varints, blobs, structs, arrays) and check references;
2. link derived fields to what they cover (regions, CRC ranges, counts, deltas);
3. compute each struct's outer references (values it needs from enclosing structs);
4. lay out decode and encode operations, merging adjacent fixed-width fields into
   one ``struct`` format with computed offsets.

Every decision is made here; templates loop over ``ops`` and substitute.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass, field

from generator.backends.python.expr import py
from generator.ir.empty import absent_bytes, py_at_default
from generator.ir.nodes import EmptyStruct
from generator.ir.nodes import FormatIR as TypedIR
from generator.ir.passes.validate import Validator, _err
from generator.loader.spec import FIXED, PRIMITIVES, VAR_PREFIXES, Field, Schema, SchemaError, Struct

MASK64 = "0xFFFFFFFFFFFFFFFF"
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

    @property
    def pargs(self) -> str:
        """The parameters passed on to the root's functions (``, record_type``)."""
        return "".join(f", {p}" for p in self.params)

    @property
    def pkw(self) -> str:
        """The parameters as keyword-only arguments of an entry point, after a ``*`` (``record_type, ``)."""
        return "".join(f"{p}, " for p in self.params)


#: the field naming a message's version in the schemas import-kafka-spec writes (a key's is its record type)
VERSION_FIELDS = ("version", "record_type")


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


#: the fields kfmt.Record (headers) and kfmt.Batch (records) promise as lists: a value class sets [] for None
LIST_SLOTS = ("records", "headers")


class Builder(Validator):
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
        loads = max((i + 1 for i, op in enumerate(enc) if op.kind == "load"), default=0) if own else 0
        enc[loads:loads] = requires  # an own field's value is loaded first
        base = self.base_slots.get(st.role, ()) if st.repr == "object" else ()
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
            lists=tuple(m for m, _ in model if m in LIST_SLOTS or m in empty_lists),
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
                 at_default=_at_default(self.ir, t, x))
            for t, x in zip(f.tags, typed.fields)
        ]  # fmt: skip
        return dict(tags=tags, path=f"{path}.{f.name}")

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
        a = dict(name=f.name, nullable=f.nullable, string=f.type == "string", end=end, path=f"{path}.{f.name}")
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
        own = [op for op in ops if op.kind == "load" and not op.base] if st.repr == "object" else []
        if len(own) > 1:
            ops.insert(0, Op("own_check", 0, dict(cls=_camel(st.name))))
            for op in own:
                op.a["own"] = True
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


class _DecodeOps:
    """The decode ops of one struct, field by field: a run of fixed-width fields is read at once, a length
    field opens a region its fields must fill, a CRC is checked over its range, a conditional field is
    decoded under its condition (else its default)."""

    def __init__(self, b: Builder, name: str, st: Struct, path: str):
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

    def __init__(self, b: Builder, st: Struct, path: str, ops: list[Op]):
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
    )
