"""The Python backend: a package per format (``__init__``, ``model``, ``codec``) and the package index.

Its strategies are its own: the lowering (``lowering.py``) turns the schema into Python-shaped operations
(an optimistic decoder with few checks and a checked one that says what and where, one ``unpack_from``
per fixed-width stretch), the templates render them, and ``inline.py`` splices the per-element calls
into the hot loops.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import generator.ir.nodes as n
from generator.backends import Backend, Format, stamp, template_env
from generator.backends.python import lowered as lowered_mod
from generator.backends.python import lowering
from generator.backends.python.inline import inline_module
from generator.backends.python.pcheck import walks
from generator.ir.walk import factor

HERE = Path(__file__).parent


def _base_model_info():
    from kfmt.runtime import model

    batch_attrs = tuple(k for k in vars(model.Batch) if not k.startswith("_") and not callable(getattr(model.Batch, k)))
    slots = {
        "record": tuple(model.Record.__slots__),
        "message": tuple(model.Record.__slots__),
        "batch": (),
        "struct": (),
    }
    attrs = {
        "batch": batch_attrs,
        "record": tuple(model.Record.__slots__),
        "message": tuple(model.Record.__slots__) + batch_attrs,
    }
    return slots, attrs


def lowered(fmt: Format) -> tuple[lowering.FormatIR, lowering.Builder]:
    """The Python lowering of a format, built once (the Construct backend reads it too, for now)."""
    if "python" not in fmt.cache:
        slots, attrs = _base_model_info()
        builder = lowering.Builder(fmt.schema, slots, attrs, fmt.ir)
        fmt.cache["python"] = (lowering.build(builder), builder)
    return fmt.cache["python"]


def _kind(w: n.Wire) -> str:
    return {n.Int: "int", n.Varint: "varint", n.Blob: "blob", n.StructType: "struct", n.ArrayType: "array",
            n.Switch: "switch", n.Tagged: "tagged"}[type(w)]  # fmt: skip


def tool_metadata(fmt: Format) -> dict:
    """What tools read about a format, as data (``LEVELS`` and ``FIELDS`` of the package): the struct at
    each level (batch, record, header) and every struct's fields with their wire kinds, widths and offsets."""
    fir, _ = lowered(fmt)
    labels = {s.name: {name: (label, orig) for name, label, orig in s.layout} for s in fir.structs}
    t = fmt.ir
    root = t.struct(t.root)

    def array_of(st: n.Struct, roles: tuple[str, ...]) -> str | None:  # the first array of such elements
        return next((f.wire.elem for f in st.fields if isinstance(f.wire, n.ArrayType)
                     and t.struct(f.wire.elem).role in roles), None)  # fmt: skip

    record = t.root if root.role == "message" else array_of(root, ("record", "message"))
    # the roles' contract: a record's headers are its field ``headers`` (other arrays are the format's own)
    rec = t.struct(record) if record else None
    headers = next((f.wire for f in rec.fields if f.name == "headers"), None) if rec else None
    header = headers.elem if isinstance(headers, n.ArrayType) else None
    fields = {}
    for st in t.structs:
        rows = []
        for f in st.fields:
            label, orig = labels[st.name][f.name]
            w = f.wire
            width = w.width if isinstance(w, n.Int) and f.condition is None else None
            elem = w.elem if isinstance(w, n.ArrayType) else w.name if isinstance(w, n.StructType) else None
            rows.append((f.name, _kind(w), label.split(" (")[0], width, f.offset, label, orig, elem))
        fields[st.name] = rows
    levels = {"batch": None if root.role == "message" else t.root, "record": record, "header": header}
    return {"levels": levels, "fields": fields, "carries": sorted(carries(t, rec))}


def carries(t: n.FormatIR, rec: n.Struct | None) -> set[str]:
    """What a format's records and entries can carry, by the roles' contract: ``timestamp`` (a record
    timestamp), ``timestamp_type``, ``headers``, ``control`` (transaction markers), ``producer_state``
    (producer id, epoch, sequence), ``wrappers`` (compressed sets of inner messages)."""
    root = t.struct(t.root)

    def exposes(st: n.Struct | None, name: str) -> bool:
        if st is None:
            return False
        names = {f.name for f in st.fields} | {b.name for f in st.fields for b in f.bits}
        names |= {f.derived.logical for f in st.fields if isinstance(f.derived, n.DeltaOf)}
        return name in names | {v.name for v in st.views}

    out = {x for x in ("timestamp", "headers", "control") if exposes(rec, x)}
    out |= {x for x in ("timestamp_type",) if exposes(root, x)}
    if exposes(root, "producer_id"):
        out.add("producer_state")
    if root.wrappers:
        out.add("wrappers")
    return out


def emit(fmt: Format) -> dict[str, str]:
    fir, _ = lowered(fmt)
    env = template_env(HERE)
    meta = tool_metadata(fmt)
    checks = walks(fmt.ir)
    files = {}
    for tpl, fname, part in (
        ("init.py.j2", "__init__.py", "package"),
        ("model.py.j2", "model.py", "model"),
        ("python.py.j2", "python.py", "python"),
    ):
        src = env.get_template(tpl).render(
            f=fir, header=stamp(fmt, part), meta=meta, checks=checks, check_factor=factor(fmt.ir)
        )
        files[fname] = inline_module(src) if fname == "python.py" else src
    return files


def _api(fmt: Format) -> dict:
    """A protocol schema's ``api:``, with the value class of each version (its root's switch cases)."""
    root = fmt.schema.structs[fmt.schema.root or ""]
    cases = root.fields[0].cases if len(root.fields) == 1 and root.repr == "value" else ()
    return fmt.schema.api | {"classes": {v: lowered_mod._camel(s) for v, s in cases}}  # type: ignore[operator]


def emit_index(formats: list[Format], sdir: str) -> dict[str, str]:
    ids = [f.id for f in formats]
    src = (
        template_env(HERE)
        .get_template("registry.py.j2")
        .render(
            ids=ids,
            sdir=sdir,
            docs={f.id: f.schema.doc for f in formats},
            fingerprints={f.id: f.ir.fingerprint for f in formats},
            apis={f.id: _api(f) for f in formats if f.schema.api is not None},
            digest=hashlib.sha256("".join(ids).encode()).hexdigest(),
        )
    )
    return {"__init__.py": src}


BACKEND = Backend(
    name="python",
    language="python",
    capabilities=frozenset({"decode", "encode"}),
    emit=emit,
    emit_index=emit_index,
    doc="the optimised pure-Python codec (python.py) and the model classes",
)
