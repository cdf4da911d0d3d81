"""The Construct backend: a readable Construct parser/builder per format (``construct.py``), the
reference the Python backend is held equal to."""

from __future__ import annotations

from pathlib import Path

from generator.backends import Backend, Format
from generator.backends.construct import layout

HERE = Path(__file__).parent


def emit(fmt: Format) -> dict[str, str]:
    from generator.backends.python import header, lowered

    fir, builder = lowered(fmt)
    return {"construct.py": layout.render(fmt.schema, header(fmt, "construct"), fir, builder)}


BACKEND = Backend(
    name="construct",
    language="python",
    capabilities=frozenset({"decode", "encode"}),
    emit=emit,
    doc="the Construct reference parser/builder (construct.py)",
)
