"""The backend protocol: a backend turns one format into files.

A backend is a folder here whose package defines ``BACKEND`` (a :class:`Backend`). The driver
(:mod:`generator.driver`) loads every schema once, builds each format's IR once, runs every backend on it,
then formats, compiles, stamps and writes only what changed, sweeping stale files it wrote before.
Adding a backend is adding a folder.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2  # the 'generate' extra: imported here so that a plain install says so before any work

if TYPE_CHECKING:
    from generator.ir import FormatIR
    from generator.loader import Schema


@dataclass
class Format:
    """What a backend gets for one format: the validated schema, the typed IR, and a cache a backend may use
    for its own lowering (built once per format, whichever backend asks first)."""

    schema: Schema
    ir: FormatIR
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.schema.id


#: the comment syntax a file's stamp is written in, by language (the stamp marks files the generator owns)
STAMP_STYLES = {"python": ("# ", ""), "markdown": ("<!-- ", " -->")}


@dataclass(frozen=True)
class Backend:
    """``name`` is what users select (``backend=``); ``language`` decides how files are stamped, formatted
    and checked (``python`` files are ruff-formatted and compiled); ``capabilities`` say what its output
    can do (``decode``, ``encode``, ``docs``); ``emit`` returns ``{path relative to the format's folder:
    text}``; ``emit_index`` (optional) returns files for the whole package, given every format."""

    name: str
    language: str
    capabilities: frozenset[str]
    emit: Callable[[Format], dict[str, str]]
    emit_index: Callable[[list[Format], str], dict[str, str]] | None = None
    doc: str = ""


def discover() -> list[Backend]:
    """Every backend folder under generator/backends, in name order."""
    out = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.ispkg:
            out.append(importlib.import_module(f"{__name__}.{info.name}").BACKEND)
    return out


def template_env(*folders: Path) -> jinja2.Environment:
    """A Jinja2 environment over backends' ``templates`` folders (the first is the backend's own): undefined
    names fail, nothing is escaped (every schema string reaches code through the ``py`` filter as a Python
    literal, or ``pydoc``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(f / "templates") for f in folders]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = repr
    env.filters["pydoc"] = pydoc
    env.filters["rstrip"] = lambda s: str(s).rstrip()
    return env


def pydoc(text) -> str:
    """Make schema text safe inside a triple-quoted docstring."""
    s = str(text).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    s = "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in s)
    s = s.replace("\n", " ").strip()
    if s.endswith('"'):
        s += " "
    return s
