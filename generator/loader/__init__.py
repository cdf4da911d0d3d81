"""Load and validate schema files.

YAML is composed with the safe loader only (no tags, no objects) and every
value keeps the line it came from, so that every error names file, line and
path: ``schemas/kafka_v2.yaml:41 structs.batch.fields[3].derive: unknown
function 'lenght_of' (did you mean 'length_of'?)``."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from generator.loader.fields import _TOP_KEYS, _TYPE_KEYS, LIBRARY_KEYS, _struct
from generator.loader.spec import (
    PRIMITIVES,
    VARINTS,
    Bit,
    Cond,
    Derive,
    Enum,
    Field,
    Schema,
    SchemaError,
    Struct,
    View,
    Wraps,
)
from generator.loader.yamlread import (
    _apply_override,
    _Ctx,
    _enum_value,
    _ident,
    _int,
    _Located,
    _mapping,
    _read,
    _suggest,
    _text,
    _trailing,
)


def _types(loc: _Located | None, ctx: _Ctx) -> dict:
    out: dict[str, dict] = {}
    if loc is None:
        return out
    for tname, tv in loc.value.items():
        c = ctx.sub(tname, tv)
        _ident(tname, c, "type name")
        tm = _mapping(tv, c, _TYPE_KEYS, required=("type",))
        out[tname] = {k: v.value for k, v in tm.items() if k != "doc"}
    return out


def _params(loc: _Located | None, ctx: _Ctx) -> tuple[tuple[str, str], ...]:
    """``params: {name: <integer type>}``: values a decoder is given rather than reads (a value's record type,
    known from its key); every struct sees them, as it sees an enclosing struct's fields."""
    if loc is None:
        return ()
    out = []
    for pname, pv in loc.value.items():
        c = ctx.sub(pname, pv)
        _ident(pname, c, "parameter name")
        if pv.value not in PRIMITIVES and pv.value not in VARINTS:
            raise c.error(f"a parameter is an integer type, not {pv.value!r}")
        out.append((pname, pv.value))
    return tuple(out)


_API_KEYS = {"key": int, "kind": str, "name": str, "versions": str, "flexible": str, "unstable": list,
             "sources": dict, "listeners": list, "proposal": str}  # fmt: skip


def _api(loc: _Located | None, ctx: _Ctx) -> dict | None:
    """``api:``: the schema is part of Kafka's protocol: a ``kind`` of body (request or response, with the API's
    ``key``, an int16) or a ``header``; Kafka's ``name`` (``Produce``, ``RequestHeader``), the ``versions`` it
    reads (``N-M``), the ``flexible`` ones (``N+``, or ``none``), those Kafka marks ``unstable``, which ``sources``
    give which versions, the ``listeners`` that take it, and for a message Kafka does not have (a ``proposal``,
    e.g. a KIP's new version) what proposes it."""
    if loc is None:
        return None
    m = _mapping(loc, ctx, _API_KEYS, required=("kind", "name", "versions"))
    out = {k: _plain(v) for k, v in m.items()}
    if out["kind"] not in ("request", "response", "header"):
        raise ctx.sub("kind", m["kind"]).error(f"an API's kind is request, response or header, not {out['kind']!r}")
    if (out["kind"] == "header") == ("key" in out):
        raise ctx.error("a request or response has an API key (key: N), a header none")
    if "key" in out:
        _int(out["key"], ctx.sub("key", m["key"]), 0, 2**15 - 1)
    for k in ("versions", "flexible"):
        if k in out and not re.fullmatch(r"none|[0-9]+(\+|-[0-9]+)?", str(out[k])):
            raise ctx.sub(k, m[k]).error(f"{k} is N, N+, N-M or none, not {out[k]!r}")
    if any(type(v) is not int for v in out.get("unstable", [])):
        raise ctx.sub("unstable", m["unstable"]).error("unstable is a list of versions")
    out["sources"] = {str(k): str(v) for k, v in out.get("sources", {}).items()}
    if "proposal" in out and (out["kind"] == "header" or not str(out["proposal"]).strip()):
        raise ctx.sub("proposal", m["proposal"]).error("a proposal is a request or response, and says what proposes it")
    return out


def _plain(loc):
    """A located YAML value as plain data (lists and mappings of their values)."""
    v = loc.value if isinstance(loc, _Located) else loc
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _enums(loc: _Located | None, ctx: _Ctx) -> dict[str, Enum]:
    out: dict[str, Enum] = {}
    if loc is None:
        return out
    for ename, ev in loc.value.items():
        c = ctx.sub(ename, ev)
        _ident(ename, c, "enum name")
        em = _mapping(ev, c, {"doc": str, "values": dict}, required=("values",))
        values = []
        for k, v in em["values"].value.items():
            vc = c.sub("values", em["values"]).sub(k, v)
            _int(k, vc, 0, 2**32 - 1)
            values.append((k, _enum_value(v.value, vc)))
        out[ename] = Enum(ename, tuple(sorted(values)), _text(em["doc"].value if "doc" in em else "", c))
    return out


DEFAULT_SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def display_dir(schema_dir: Path) -> str:
    """How error messages and generated headers name a schema directory: ``schemas`` for the project's own,
    otherwise the directory as the user gave it (so an error points at the files actually read)."""
    try:
        inside = schema_dir.resolve().relative_to(DEFAULT_SCHEMAS.resolve())  # the project's own, or a folder of it
        return "schemas" if inside == Path(".") else f"schemas/{inside.as_posix()}"
    except (OSError, ValueError):
        pass
    return str(schema_dir).rstrip("/") or "/"


@dataclass
class _Parts:
    """What a schema file is built from before it is validated: its own and inherited definitions."""

    types: dict = field(default_factory=dict)
    enums: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # struct name -> (located mapping, context), validated last
    imports: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    inherited: dict = field(default_factory=dict)


def _imports(m: dict, ctx0: _Ctx, schema_dir: Path, sdir: str, parts: _Parts) -> None:
    for i, imp in enumerate(m["imports"].value if "imports" in m else []):
        ictx = ctx0.sub("imports", m["imports"]).sub(i, imp)
        iname = _ident(imp.value, ictx, "import")
        ipath = schema_dir / f"{iname}.yaml"
        if not ipath.is_file():
            raise ictx.error(f"imported schema {iname!r} not found in {schema_dir}")
        iloc = _read(ipath, f"{sdir}/{ipath.name}")
        ic = _Ctx(f"{sdir}/{ipath.name}")
        im = _mapping(iloc, ic, LIBRARY_KEYS)
        if "library" not in im or im["library"].value is not True:
            raise ictx.error(f"imported schema {iname!r} is not a library (it needs 'library: true')")
        parts.types.update(_types(im.get("types"), ic.sub("types")))
        parts.enums.update(_enums(im.get("enums"), ic.sub("enums")))
        for sname, sv in (im["structs"].value if "structs" in im else {}).items():
            sc = ic.sub("structs").sub(sname, sv)
            parts.raw[_ident(sname, sc, "struct name")] = (sv, sc)
        parts.imports.append(iname)
        parts.sources.append(ipath.read_bytes())


def _extends(m: dict, ctx0: _Ctx, sid: str, schema_dir: Path, chain: tuple[str, ...], parts: _Parts) -> None:
    """The schema this one extends: everything inherited, then overridden struct by struct or field by field."""
    ectx = ctx0.sub("extends", m["extends"])
    folder, ename = _extended(m["extends"].value, ectx)
    edir = schema_dir.parent / folder if folder else schema_dir
    epath = edir / f"{ename}.yaml"
    if (folder, ename) == ("", sid) or m["extends"].value in chain:
        raise ectx.error(f"extends cycle: {' -> '.join((*chain, sid, m['extends'].value))}")
    if not epath.is_file():
        raise ectx.error(f"extended schema {m['extends'].value!r} not found")
    parent = load(epath, edir, (*chain, sid))
    parts.types.update(parent._types)  # type: ignore[attr-defined]
    parts.enums.update(parent.enums)
    parts.raw.update(parent._raw_structs)  # type: ignore[attr-defined]
    parts.imports.extend(x for x in parent.imports if x not in parts.imports)
    parts.sources.extend(parent.sources)
    parts.inherited = {"doc": parent.doc, "doc_ref": parent.doc_ref, "magic": parent.magic,
                       "auto_detect": parent.auto_detect, "root": parent.root, "trailing": parent.trailing}  # fmt: skip


def _extended(value, ctx: _Ctx) -> tuple[str, str]:
    """``extends: NAME`` (a schema of this folder) or ``../FOLDER/NAME`` (of a sibling folder: a protocol proposal in
    ``schemas/protocol_proposals`` extends Kafka's message in ``schemas/protocol``): (folder, name)."""
    if isinstance(value, str) and value.startswith("../") and value.count("/") == 2:
        _, folder, name = value.split("/")
        return _ident(folder, ctx, "extended folder"), _ident(name, ctx, "extends")
    return "", _ident(value, ctx, "extends")


def _structs(m: dict, ctx0: _Ctx, parts: _Parts) -> dict[str, Struct]:
    """The file's own structs and overrides over the inherited ones, validated, with the structs the loader
    makes (the elements of arrays of values, the values of tagged fields)."""
    raw = dict(parts.raw)
    for sname, sv in (m["structs"].value if "structs" in m else {}).items():
        sc = ctx0.sub("structs").sub(sname, sv)
        raw[_ident(sname, sc, "struct name")] = (sv, sc)
    if "override" in m:
        octx = ctx0.sub("override", m["override"])
        for sname, ov in m["override"].value.items():
            sc = octx.sub(sname, ov)
            if sname not in raw:
                raise sc.error(f"override of unknown struct {sname!r}{_suggest(sname, raw)}")
            raw[sname] = (_apply_override(raw[sname][0], ov, sc), sc)
    parts.raw = raw
    structs: dict[str, Struct] = {}
    synth: dict[str, Struct] = {}  # the element structs of arrays of values
    for sname, (sv, sc) in raw.items():
        structs[sname] = _struct(sname, sv, sc, parts.types, synth)
    for sname, st in synth.items():
        if sname in structs:
            raise SchemaError(f"{ctx0.file}:{st.line}: struct {sname!r} is defined, and is also the name of a struct "
                              f"the loader makes ({st.doc}); rename one")  # fmt: skip
        structs[sname] = st
    return structs


def _check_root(schema: Schema, m: dict, ctx0: _Ctx) -> None:
    if schema.magic is not None:
        _int(schema.magic, ctx0.sub("magic"), 0, 127)
    if not schema.doc:
        raise ctx0.error("a schema needs a top-level 'doc'")
    if schema.root is None:
        raise ctx0.error("a format schema needs 'root' (the struct a buffer decodes to)")
    structs = schema.structs
    if schema.root not in structs:
        raise ctx0.sub("root", m.get("root")).error(
            f"root struct {schema.root!r} is not defined{_suggest(schema.root, structs)}"
        )
    root_magic = next((f.const for f in structs[schema.root].fields if f.name == "magic" and f.const is not None), None)
    if root_magic is not None and schema.magic is not None and root_magic != schema.magic:
        raise ctx0.sub("magic").error(
            f"top-level magic {schema.magic} differs from the root struct's magic const {root_magic}"
        )


def load(path: str | Path, schema_dir: str | Path | None = None, _chain: tuple[str, ...] = ()) -> Schema:
    """Load, merge imports, and validate one schema file."""
    path = Path(path)
    schema_dir = Path(schema_dir) if schema_dir else path.parent
    sdir = display_dir(schema_dir)
    display = f"{sdir}/{path.name}" if path.parent.resolve() == schema_dir.resolve() else str(path)
    sid = path.stem
    ctx0 = _Ctx(display)
    _ident(sid, ctx0, "format id (file stem)")
    m = _mapping(_read(path, display), ctx0, _TOP_KEYS)
    parts = _Parts(sources=[path.read_bytes()])
    _imports(m, ctx0, schema_dir, sdir, parts)
    if "extends" in m:
        _extends(m, ctx0, sid, schema_dir, _chain, parts)
    parts.types.update(_types(m.get("types"), ctx0.sub("types")))
    parts.enums.update(_enums(m.get("enums"), ctx0.sub("enums")))
    structs = _structs(m, ctx0, parts)

    def top_value(k, default):
        return m[k].value if k in m else parts.inherited.get(k, default)

    schema = Schema(
        id=sid,
        file=display,
        doc=_text(top_value("doc", ""), ctx0.sub("doc")),
        doc_ref=_text(top_value("doc_ref", ""), ctx0.sub("doc_ref")),
        magic=top_value("magic", None),
        auto_detect=bool(top_value("auto_detect", False)),
        root=top_value("root", None),
        structs=structs,
        enums=parts.enums,
        imports=tuple(parts.imports),
        sources=tuple(parts.sources),
        params=_params(m.get("params"), ctx0.sub("params", m.get("params"))),
        trailing=_trailing(top_value("trailing", "exact"), ctx0.sub("trailing", m.get("trailing"))),
        api=_api(m.get("api"), ctx0.sub("api", m.get("api"))),
    )
    schema._types = parts.types  # type: ignore[attr-defined]
    schema._raw_structs = parts.raw  # type: ignore[attr-defined]
    _check_root(schema, m, ctx0)
    _check_conditions(schema)
    h = hashlib.sha256()
    for s in schema.sources:
        h.update(hashlib.sha256(s).digest())
    schema.sha256 = h.hexdigest()
    schema.fingerprint = wire_fingerprint(schema)
    return schema


_VARINT_RANGES = {"varint": (-(2**31), 2**31 - 1), "varlong": (-(2**63), 2**63 - 1), "uvarint": (0, 2**32 - 1)}


def _int_range(t: str) -> tuple[int, int] | None:
    if t in PRIMITIVES:
        fmt, size = PRIMITIVES[t]
        bits = size * 8
        return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if fmt.islower() else (0, 2**bits - 1)
    return _VARINT_RANGES.get(t)


def _conditions(st: Struct):
    """(field index, YAML path, comparison) of every condition in a struct; a range gives both its halves."""
    for i, where, c in _each_condition(st):
        for half in c.halves():
            yield i, where, half


def _each_condition(st: Struct):
    for i, f in enumerate(st.fields):
        if f.if_:
            yield i, "if", f.if_
        if f.derive and f.derive.when:
            yield i, "derive.when", f.derive.when
        if f.wraps:
            yield i, "wraps.when", f.wraps.when
            if f.wraps.timestamps_when:
                yield i, "wraps.timestamps.when", f.wraps.timestamps_when
    for v in st.views:
        if v.when:
            yield None, f"views.{v.name}.when", v.when
    if st.requires:
        yield None, "requires", st.requires


def _check_conditions(schema: Schema) -> None:
    """A condition's value must be one its field can hold: an enum value by name (or id), a flag's
    true/false, an integer in the field's range. Anything else would compile into code that never (or
    always) matches, and both backends would then reject every message."""
    for st in schema.structs.values():
        fields = {f.name: f for f in st.fields}
        bits = {b.name: b for f in st.fields for b in f.bits}
        for i, where, c in _conditions(st):
            line = st.fields[i].line if i is not None else st.line
            at = f"structs.{st.name}" + (f".fields[{i}]" if i is not None else "") + f".{where}"

            def bad(msg: str, line: int = line, at: str = at) -> SchemaError:
                return SchemaError(f"{schema.file}:{line} {at}: {msg}")

            if c.op is None:
                continue
            if c.field in bits:
                _check_bit_condition(schema, bits[c.field], c, bad)
            elif c.field in fields:
                _check_int_condition(fields[c.field], c, bad)


def _check_bit_condition(schema: Schema, b: Bit, c: Cond, bad) -> None:
    v = c.value
    if b.enum:
        enum = schema.enums.get(b.enum)
        names = dict((n, k) for k, n in enum.values) if enum else {}
        if isinstance(v, str):
            if v not in names:
                raise bad(f"{v!r} is not a value of enum {b.enum!r}{_suggest(v, names)} (values: {', '.join(names)})")
            if c.op not in ("eq", "ne"):
                raise bad(f"enum values compare with eq or ne, not {c.op}")
            return
        if isinstance(v, int) and not isinstance(v, bool) and enum and v in dict(enum.values):
            return
        raise bad(f"compares enum {b.enum!r} with {v!r}; use one of: {', '.join(names)}")
    if b.flag:
        if not (isinstance(v, bool) or v in (0, 1)) or c.op not in ("eq", "ne"):
            raise bad(f"flag {c.field!r} compares with eq/ne true or false, not {c.op} {v!r}")
        return
    hi = b.mask >> ((b.mask & -b.mask).bit_length() - 1)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
        raise bad(f"{v!r} does not fit bit field {c.field!r} (0..{hi})")


def _check_int_condition(f: Field, c: Cond, bad) -> None:
    rng = _int_range(f.type)
    v = c.value
    if rng is None:
        return
    if isinstance(v, str):
        raise bad(f"compares {f.type} field {c.field!r} with a string ({v!r})")
    if isinstance(v, bool):
        if v not in (0, 1) or c.op not in ("eq", "ne"):
            raise bad(f"compares {f.type} field {c.field!r} with {v!r}")
        return
    if not rng[0] <= v <= rng[1]:  # type: ignore[operator]
        raise bad(f"{v} does not fit {f.type} (field {c.field!r})")


def wire_fingerprint(schema: Schema) -> str:
    """sha256 of the wire-relevant canonical form (docs and original names stripped)."""

    def strip(o):
        if isinstance(o, (Struct, Field, Bit, Derive, Cond, View, Enum, Wraps)):
            d = {k: strip(v) for k, v in o.__dict__.items() if k not in ("doc", "orig_name", "line")}
            if isinstance(o, Cond) and o.op2 is None:  # fingerprints from before ranges existed stay
                d.pop("op2"), d.pop("value2")
            if isinstance(o, Field) and not o.cases:  # ...and from before switches
                d.pop("switch"), d.pop("cases")
            if isinstance(o, Field) and o.tag is None and not o.tags:  # ...and tagged fields
                d.pop("tag"), d.pop("tags"), d.pop("absent")
            if isinstance(o, Field) and o.marker is None:
                d.pop("marker")
            if isinstance(o, Struct) and o.requires is None:
                d.pop("requires")
            if isinstance(o, View) and not o.keep_raw:
                d.pop("keep_raw")
            if isinstance(o, Field) and o.enum is None:
                d.pop("enum")
            if isinstance(o, Field) and not o.records:
                d.pop("records")
            return d
        if isinstance(o, bytes):
            return o.hex()
        if type(o).__name__ == "EmptyStruct":
            return {"empty": o.struct}
        if isinstance(o, (list, tuple)):
            return [strip(x) for x in o]
        if isinstance(o, dict):
            return {str(k): strip(v) for k, v in sorted(o.items())}
        return o

    canon = {
        **({"params": [list(p) for p in schema.params]} if schema.params else {}),
        **({"trailing": schema.trailing} if schema.trailing != "exact" else {}),
        "magic": schema.magic,
        "root": schema.root,
        "structs": strip(schema.structs),
        "enums": strip(schema.enums),
    }
    return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()
