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


def test_kfmt_has_no_import_cycles_and_keeps_its_layers():
    g = _graph("kfmt")
    assert not _cycles(g), _cycles(g)[:3]
    for name, deps in g.items():
        if name.startswith("kfmt.runtime"):
            assert all(d.startswith("kfmt.runtime") for d in deps), (name, deps)  # the runtime is a leaf
        elif not name.startswith(("kfmt.tools", "kfmt.spark")) and name not in ("kfmt.__main__", "kfmt.cli"):
            assert not {d for d in deps if d.startswith(("kfmt.tools", "kfmt.spark"))}, (name, deps)
        if name.startswith("kfmt.spark"):
            assert not {d for d in deps if d.startswith("kfmt.tools.") and d != "kfmt.tools.args"}, (name, deps)
    assert {"kfmt.tools.cli", "kfmt.spark.source", "kfmt.formats", "kfmt.measure"} <= set(g)


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
    from kfmt.formats import _native_built, available_backends, default_backend
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
    assert type(b).__module__ == "generated.kafka_v2.model" and kfmt.formats.backend_module(
        "kafka_v2"
    ).__name__.endswith(".construct")
    assert main(["formats"]) == 0 and capsys.readouterr().out.startswith("# backend: construct;")
    monkeypatch.setenv("KFMT_BACKEND", "nope")
    with pytest.raises(kfmt.UnsupportedCodecError, match="unknown backend 'nope'"):
        list(kfmt.read_batches(data))
