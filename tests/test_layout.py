"""The package layout shows the architecture, and the import graph keeps it: no cycles among kfmt's
modules (imports inside functions included), the runtime a leaf, the library below the tools and Spark,
and in the generator the IR below the backends."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _graph(package: str) -> dict[str, set[str]]:
    mods = {}
    for p in (ROOT / package).rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    graph = {}
    for name, p in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package:
                deps.add(node.module)
                deps |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in mods and d not in (name, package)}
    return graph


def _cycles(graph):
    found = []

    def walk(n, stack):
        for d in sorted(graph[n]):
            if d in stack:
                found.append(stack[stack.index(d) :] + [d])
            elif len(stack) < 15:
                walk(d, [*stack, d])

    for n in sorted(graph):
        walk(n, [n])
    return found


LIBRARY = ("kfmt.runtime", "kfmt.codec", "kfmt.storage", "kfmt.payloads", "kfmt.logdir", "kfmt.log", "kfmt.table",
           "kfmt.protocol", "kfmt.capture")  # fmt: skip
#: kfmt's rooms, lowest first, and the rooms each may import (its own always): the library's rooms each import
#: only those below them; the tools and Spark sit on top (Spark takes from the tools only their argument types)
ROOMS = {
    "kfmt.runtime": (),
    "kfmt.codec": ("kfmt.runtime",),
    "kfmt.storage": ("kfmt.runtime",),
    "kfmt.payloads": ("kfmt.runtime", "kfmt.codec"),
    "kfmt.logdir": ("kfmt.runtime", "kfmt.codec", "kfmt.storage", "kfmt.payloads"),
    "kfmt.log": ("kfmt.runtime", "kfmt.codec", "kfmt.storage", "kfmt.payloads", "kfmt.logdir"),
    "kfmt.table": LIBRARY[:-2],
    "kfmt.protocol": ("kfmt.runtime", "kfmt.codec", "kfmt.payloads", "kfmt.log"),
    "kfmt.capture": ("kfmt.runtime", "kfmt.protocol"),
    "kfmt.tools": (*LIBRARY, "kfmt.spark"),
    "kfmt.spark": (*LIBRARY, "kfmt.tools.args"),
}


def _room(module: str) -> str:
    return next((r for r in ROOMS if module == r or module.startswith(r + ".")), module)


def test_kfmt_is_a_few_rooms_with_their_import_rules():
    """kfmt/ holds packages whose docstrings say what they are for and what they may import, and the import
    graph (imports inside functions included) keeps those rules, with no cycle anywhere; at the top only the
    public API (``kfmt/__init__.py``), ``python -m kfmt`` and the command line's earlier home."""
    top = {p.name for p in (ROOT / "kfmt").glob("*.py")}
    assert top == {"__init__.py", "__main__.py", "cli.py"}, top
    for room in ROOMS:
        doc = ast.get_docstring(ast.parse((ROOT / room.replace(".", "/") / "__init__.py").read_text())) or ""
        assert "May import" in doc or room in ("kfmt.tools", "kfmt.spark", "kfmt.runtime"), room
    g = _graph("kfmt")
    assert not _cycles(g), _cycles(g)[:3]
    for name, deps in g.items():
        room = _room(name)
        if room not in ROOMS:
            continue
        allowed = (room, *ROOMS[room])
        bad = {d for d in deps if not any(d == a or d.startswith(a + ".") for a in allowed)}
        assert not bad, (name, bad)
    assert {"kfmt.tools.cli", "kfmt.spark.source", "kfmt.codec.formats", "kfmt.log.scanner"} <= set(g)


def test_no_lower_room_imports_the_package_face():
    """``import kfmt`` (the public face, which reaches every room) from a library room, at module level or inside a
    function, makes that room depend on the top: lower rooms import what they use from where it lives."""
    bad = []
    for p in (ROOT / "kfmt").rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if _room(name) not in LIBRARY:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "kfmt" for a in node.names):
                bad.append(f"{name}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.module == "kfmt" and node.level == 0:
                bad.append(f"{name}:{node.lineno}")
    assert not bad, bad


def test_the_public_api_is_unchanged():
    """Every name ``import kfmt`` gave before the rooms were made still comes from ``kfmt``."""
    import kfmt

    names = ("read_batches", "scan", "encode_batch", "control_record", "format_ids", "get_format", "iter_entries",
             "convert", "Conversion", "read_arrow", "read_arrow_batches", "Record", "Batch", "CodecError",
             "DecodeOptions", "TruncatedError", "ChecksumError", "InvalidValueError", "LimitExceededError",
             "UnsupportedCodecError")  # fmt: skip
    assert all(callable(getattr(kfmt, n)) for n in names)


def test_generator_ir_is_below_the_backends():
    g = _graph("generator")
    assert not _cycles(g), _cycles(g)[:3]
    for name, deps in g.items():
        if name.startswith("generator.ir"):
            assert not {d for d in deps if d.startswith(("generator.backends", "generator.driver"))}, (name, deps)
    # the markdown backend reads the typed IR only (no other backend's lowering)
    assert not {d for d in g["generator.backends.markdown"] if d.startswith("generator.backends.")}


def test_the_active_backend_is_said_and_can_be_chosen(monkeypatch, capsys):
    """``kfmt --version`` and ``kfmt formats`` name the backend reading and writing use; ``KFMT_BACKEND``
    chooses another one for the whole process, and read_batches then decodes with it."""
    import pytest

    import kfmt
    from kfmt.codec.formats import _native_built, available_backends, default_backend
    from kfmt.tools.cli import main

    monkeypatch.delenv("KFMT_BACKEND", raising=False)  # (make test-backends sets it for the whole run)
    data = kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)])
    with pytest.raises(SystemExit):
        main(["--version"])
    # the native backend is active wherever it was built, the python backend otherwise
    built = _native_built()
    want = "native; available: native, python, construct" if built else "python; available: python, construct"
    assert f"backend: {want}" in capsys.readouterr().out
    assert available_backends()[0] == default_backend() == ("native" if built else "python")
    monkeypatch.setenv("KFMT_BACKEND", "construct")
    assert default_backend() == "construct"
    (b,) = kfmt.read_batches(data)
    assert type(b).__module__ == "generated.kafka_v2.model" and kfmt.codec.formats.backend_module(
        "kafka_v2"
    ).__name__.endswith(".construct")
    assert main(["formats"]) == 0 and capsys.readouterr().out.startswith("# backend: construct;")
    monkeypatch.setenv("KFMT_BACKEND", "nope")
    with pytest.raises(kfmt.UnsupportedCodecError, match="unknown backend 'nope'"):
        list(kfmt.read_batches(data))


def test_files_one_can_hold_in_mind():
    """No hand-written Python file of kfmt or the generator is much past 600 lines unless its docstring says why
    it is one file; no function is exempted from ruff's complexity limit (C901, 15)."""
    long = []
    for p in [*(ROOT / "kfmt").rglob("*.py"), *(ROOT / "generator").rglob("*.py")]:
        text = p.read_text()
        assert "noqa: C901" not in text, p
        if text.count("\n") > 620 and "One file" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append((p.relative_to(ROOT), text.count("\n")))
    assert not long, long
