"""The native backend's runtime: ``kfmt_native.h`` (the C helpers every generated ``_native.c`` includes),
``_columns`` (the Arrow column buffers) and :func:`compile_package`, which builds the extensions of a package
generated elsewhere (``kfmt generate --out``), as setup.py builds the repository's own."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CFLAGS = ("-O2", "-std=c11", "-fno-strict-aliasing", "-fPIC", "-shared")


def compile_package(pkg: Path, flags: tuple[str, ...] = CFLAGS, *, columns: Path | None = None) -> list[Path]:
    """Compile every ``<format>/_native.c`` under the generated package ``pkg`` in place (gcc), and the
    column buffers into ``columns`` if given; returns the extension files written."""
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
