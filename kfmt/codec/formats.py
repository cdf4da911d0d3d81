"""The format registry: the generated formats, their backends, and the formats a log is read with by
magic byte. A leaf of the library: it imports only the runtime and the generated packages."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Any

from kfmt.runtime.errors import UnsupportedCodecError


@lru_cache(maxsize=None)
def format_ids() -> tuple[str, ...]:
    """Ids of every generated format (schema file stems)."""
    import generated

    return tuple(generated.FORMATS)


@lru_cache(maxsize=None)
def get_format(fmt):
    """The generated package of format ``fmt`` (an id such as ``kafka_v2``, or a package generated with
    ``kfmt generate --out`` elsewhere, passed as the imported module)."""
    if not isinstance(fmt, str):
        if not hasattr(fmt, "python") or not hasattr(fmt, "FORMAT_ID"):
            raise UnsupportedCodecError(f"format must be a format id or a generated format package, not {fmt!r}")
        return fmt
    if fmt not in format_ids():
        raise UnsupportedCodecError(f"unknown format {fmt!r}; known: {', '.join(format_ids())}")
    return importlib.import_module(f"generated.{fmt}")


#: every backend kfmt knows, fastest first: ``native`` (a C extension per format, built by ``make setup``
#: where a C compiler is found), ``python`` (the optimised pure-Python codec, ``python.py``) and ``construct``
#: (the Construct reference); ``codec``, the earlier name of ``python``, is still accepted
KNOWN_BACKENDS = ("native", "python", "construct")
ALIASES = {"codec": "python"}


#: the order in which the default backend is chosen: the first one available on this machine
PREFERENCE = ("native", "python")


@lru_cache(maxsize=None)
def _native_built() -> bool:
    """Whether every format's C extension imports here (and was built from the schema it was generated
    with). ``KFMT_DISABLE_NATIVE=1`` makes an installation behave as one without a compiler."""
    from kfmt.runtime.native import disabled

    if disabled():
        return False
    import generated

    prints = getattr(generated, "FINGERPRINTS", {})
    try:
        for fid in format_ids():
            if fid in prints:  # the extension alone, its fingerprint the schema's (what native.py checks on import)
                if importlib.import_module(f"generated.{fid}._native").WIRE_FINGERPRINT != prints[fid]:
                    return False
            else:
                importlib.import_module(f"generated.{fid}.native")
    except ImportError:
        return False
    return True


def available_backends() -> tuple[str, ...]:
    """The backends this installation can use, fastest first (``native`` only where it was built)."""
    return tuple(b for b in KNOWN_BACKENDS if b != "native" or _native_built())


def __getattr__(name: str):
    if name == "BACKENDS":  # the backends available here, fastest first (computed on first use)
        return available_backends()
    raise AttributeError(name)


# os.environ.get of a variable that is not set raises and catches a KeyError inside (2 us, more than reading a
# small message): on POSIX the environment's bytes mapping is asked directly, which os.environ keeps current
_ENV_BYTES = getattr(os.environ, "_data", None) if os.name == "posix" else None


def backend_env() -> str | None:
    """``KFMT_BACKEND`` as it is now (None when unset): read on every call, in 0.1 us."""
    if _ENV_BYTES is not None:
        v = _ENV_BYTES.get(b"KFMT_BACKEND")
        return None if v is None else os.fsdecode(v)
    return os.environ.get("KFMT_BACKEND")


def default_backend() -> str:
    """The backend reading and writing use unless told: the ``KFMT_BACKEND`` environment variable if set
    (the test suite runs once per backend this way: ``make test-backends``), else the first of
    ``PREFERENCE`` available here. ``kfmt --version`` and ``kfmt formats`` say which one is active."""
    return _default_for(backend_env())


@lru_cache(maxsize=None)
def _default_for(env: str | None) -> str:
    """The default backend for a ``KFMT_BACKEND`` value (read on every call; resolved once per value)."""
    if env is None:
        have = available_backends()
        return next(b for b in PREFERENCE if b in have)
    return _checked(env)


def _checked(backend: str) -> str:
    name = ALIASES.get(backend, backend)
    if name not in KNOWN_BACKENDS:
        raise UnsupportedCodecError(f"unknown backend {backend!r}; use one of {', '.join(KNOWN_BACKENDS)}")
    if name not in available_backends():
        raise UnsupportedCodecError(
            f"backend {name!r} is not built on this machine (make setup builds it where a C compiler is found); "
            f"available: {', '.join(available_backends())}"
        )
    return name


def backend_module(fmt, backend: str | None = None):
    """The module of one backend of a format: ``native``, ``python`` or ``construct``; None: the default (the
    python backend for a package generated elsewhere whose C extension was not built)."""
    if backend is not None:
        return _module(fmt, _checked(backend))
    return of_default_backend(lambda name: _module(fmt, name))


def of_default_backend(load):
    """``load(name)`` for the default backend, the python one where the native module cannot be imported
    (a package generated elsewhere whose C extension was not built, a schema the native backend does not
    lower): the one rule for formats and for Kafka's message schemas (kfmt.payloads)."""
    name = default_backend()
    if name == "native":
        try:
            return load(name)
        except ImportError:
            return load("python")
    return load(name)


@lru_cache(maxsize=None)
def _module(fmt, backend: str):
    pkg = get_format(fmt)
    return pkg.python if backend == "python" else importlib.import_module(f"{pkg.__name__}.{backend}")


@lru_cache(maxsize=None)
def by_magic() -> dict[int, Any]:
    """Auto-detected formats by magic: only real Kafka formats, never the proposals that reuse a magic."""
    table = {}
    for fid in format_ids():
        mod = get_format(fid)
        if mod.AUTO_DETECT:
            if mod.MAGIC in table:
                raise RuntimeError(f"two auto-detected formats claim magic {mod.MAGIC}")
            table[mod.MAGIC] = mod
    return table
