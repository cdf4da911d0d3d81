"""Build of the native backend: one optional C extension per generated format (``generated/<id>/_native.c``,
``generated/messages/<id>/_native.c``).

Everything else is declared in pyproject.toml.  The extensions are optional: where no C compiler is found
(or ``KFMT_NO_NATIVE=1`` is set) kfmt installs without them and uses the python backend.
"""

import os
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
RUNTIME = "kfmt/runtime/native"


def native_extensions():
    if os.environ.get("KFMT_NO_NATIVE"):
        return []
    flags = ["-O2", "-std=c11", "-fno-strict-aliasing", "-Wall", "-Wno-unused-label", "-Wno-unused-variable"]
    flags += ["-Wno-unused-function"]  # kfmt_native.h is a header library: each module uses part of it
    flags += os.environ.get("KFMT_NATIVE_CFLAGS", "").split()
    link = os.environ.get("KFMT_NATIVE_LDFLAGS", "").split()
    sources = [(f"kfmt.runtime.native.{n}", HERE / RUNTIME / f"{n}.c") for n in ("_columns", "_shapes", "_capture", "_sealed")]
    sources += [
        (".".join(src.relative_to(HERE).with_suffix("").parts), src)
        for src in sorted((HERE / "generated").glob("**/_native.c"))  # formats, and Kafka's messages
    ]
    return [
        Extension(
            name,
            [str(src.relative_to(HERE))],
            include_dirs=[RUNTIME],
            depends=[f"{RUNTIME}/kfmt_native.h", f"{RUNTIME}/sealed.h", f"{RUNTIME}/capture_summary.h"],
            extra_compile_args=flags,
            extra_link_args=link,
            optional=True,
        )
        for name, src in sources
    ]


setup(ext_modules=native_extensions())
