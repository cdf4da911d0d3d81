"""The native backend's runtime: ``kfmt_native.h`` (the C helpers every generated ``_native.c`` includes),
``_columns`` (the Arrow column buffers), ``_shapes`` (records as JSON), ``_capture`` (captures put back together),
``_sealed`` (v2 batches checked by their CRCs;
:func:`extension` gives them where built) and :func:`compile_package`, which builds the extensions of a package
generated elsewhere (``kfmt generate --out``), as setup.py builds the repository's own."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def disabled() -> bool:
    """Whether this installation is to behave as one without the native backend (``KFMT_DISABLE_NATIVE=1``)."""
    return bool(os.environ.get("KFMT_DISABLE_NATIVE"))


def extension(name: str):
    """The runtime's extension ``name`` (``_shapes``, ``_capture``...) where it is built and the native backend is
    not turned off, else None."""
    import importlib

    if disabled():
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None


CFLAGS = ("-O2", "-std=c11", "-fno-strict-aliasing", "-fPIC", "-shared")


def compile_package(pkg: Path, flags: tuple[str, ...] = CFLAGS, *, columns: Path | None = None) -> list[Path]:
    """Compile every ``<format>/_native.c`` under the generated package ``pkg`` in place (gcc), and the
    column buffers into ``columns`` if given; returns the extension files written."""
    import subprocess
    import sysconfig
    from concurrent.futures import ThreadPoolExecutor

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    sources = sorted(pkg.glob("**/_native.c"))  # formats, and Kafka's messages under messages/
    if columns is not None:
        sources.insert(0, HERE / "_columns.c")

    def one(src: Path) -> Path:
        target = (columns if src.name == "_columns.c" and columns is not None else src.parent) / (src.stem + suffix)
        cmd = ["gcc", *flags, f"-I{include}", f"-I{HERE}", str(src), "-o", str(target)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return target

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one gcc per core
        return list(pool.map(one, sources))
