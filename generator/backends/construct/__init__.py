"""The Construct backend: a readable Construct parser/builder per format (``construct.py``), the
reference the Python backend is held equal to. It is emitted from the typed IR by its own translation
(``translate.py``) and template, and shares no code with the Python backend, so that holding the two
equal checks derived fields, deltas and wrappers too."""

from __future__ import annotations

from pathlib import Path

from generator.backends import Backend, Format, stamp, template_env
from generator.backends.construct import translate as t
from generator.ir.passes.resolve import PARAMS

HERE = Path(__file__).parent


def emit(fmt: Format) -> dict[str, str]:
    f = fmt.ir
    structs = []
    for st in f.structs:
        lay = t.Layout(f, st)
        structs.append(
            dict(
                name=st.name,
                doc=st.doc or st.orig_name or st.name,
                cons=lay.items,
                params=t.args(st),
                ctx="".join(f", {p.name}={p.name}" for p in st.params if p.owner == PARAMS),  # for _outer()
                depth=t.depth_param(f, st),
                wrapped=t.wrapper_of(f, st.name) is not None,
                model=t.model_lines(f, st),
                wire=t.wire_lines(f, st, "{" + ", ".join(lay.wire) + "}"),
            )
        )
    inner = sorted({(w.struct, t.inner_header(f, w)[2]) for st in f.structs for w in st.wrappers})
    classes = [t.camel(st.name) for st in f.structs if st.repr == "object"]
    src = (
        template_env(HERE)
        .get_template("construct.py.j2")
        .render(
            f=f,
            header=stamp(fmt, "construct"),
            structs=structs,
            inner=inner,
            classes=classes,
            params=[p for p, _ in fmt.schema.params],
        )
    )
    return {"construct.py": src}


BACKEND = Backend(
    name="construct",
    language="python",
    capabilities=frozenset({"decode", "encode"}),
    emit=emit,
    doc="the Construct reference parser/builder (construct.py), from the typed IR",
)
