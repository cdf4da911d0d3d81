"""Schemas are untrusted input: every malformed or hostile schema ends in a located SchemaError, quickly and
in bounded memory, never a traceback; generated code stays inert."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from generator.driver import generate, render_format
from generator.loader import load
from generator.loader.spec import SchemaError

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"

GOOD = """\
doc: A tiny format.
root: msg
enums:
  kind:
    values: {0: none, 1: some}
structs:
  msg:
    fields:
      - name: k
        type: int8
        bits:
          - {name: kind, mask: 0x01, enum: kind}
      - name: n
        type: int32
"""

LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n"
    for i in range(1, 10)
)


def _dir(tmp_path, files: dict[str, str | bytes]) -> Path:
    d = tmp_path / "s"
    d.mkdir(exist_ok=True)
    (d / "common.yaml").write_text((SCHEMAS / "common.yaml").read_text())
    for name, text in files.items():
        (d / name).write_bytes(text if isinstance(text, bytes) else textwrap.dedent(text).encode())
    return d


CASES = {
    "billion laughs": ({"fmt.yaml": GOOD + LAUGHS}, "fmt.yaml:", "anchors and aliases are not allowed"),
    "recursive anchor": ({"fmt.yaml": GOOD + "loop: &l [*l]\n"}, "fmt.yaml:", "anchors and aliases are not allowed"),
    "deep flow nesting": ({"fmt.yaml": GOOD + "deep: " + "[" * 5000 + "]" * 5000 + "\n"}, "fmt.yaml:", "nested deeper"),
    "huge integer": (
        {"fmt.yaml": GOOD.replace("type: int32", "type: int32\n        const: " + "9" * 5000)},
        "fmt.yaml:",
        "too long",
    ),
    "extends cycle": ({"a.yaml": "doc: a\nextends: b\n", "b.yaml": "doc: b\nextends: a\n"}, ".yaml", "extends cycle"),
    "extends itself": ({"a.yaml": "doc: a\nextends: a\n"}, "a.yaml", "extends"),
    "struct named decode": (
        {"fmt.yaml": GOOD.replace("root: msg", "root: decode").replace("  msg:", "  decode:")},
        "fmt.yaml:",
        "reserved",
    ),
    "struct named encode_all": (
        {"fmt.yaml": GOOD + "  encode_all:\n    fields:\n      - {name: x, type: int8}\n"},
        "fmt.yaml:",
        "reserved",
    ),
    "field named like an entry point": (
        {"fmt.yaml": GOOD.replace("name: n\n", "name: encoded_size\n")},
        "fmt.yaml:",
        "reserved",
    ),
    "struct named class": (
        {"fmt.yaml": GOOD + "  class:\n    fields:\n      - {name: x, type: int8}\n"},
        "fmt.yaml:",
        "identifier",
    ),
    "condition on an unknown enum value": (
        {"fmt.yaml": GOOD + "      - {name: m, type: int8, if: {field: kind, ne: nonee}}\n"},
        "fmt.yaml:",
        "'nonee' is not a value of enum 'kind'",
    ),
    "condition value of the wrong type": (
        {"fmt.yaml": GOOD + "      - {name: m, type: int8, if: {field: n, eq: five}}\n"},
        "fmt.yaml:",
        "compares int32 field 'n' with a string",
    ),
    "condition integer out of range": (
        {"fmt.yaml": GOOD + "      - {name: m, type: int8, if: {field: k, eq: 300}}\n"},
        "fmt.yaml:",
        "300 does not fit int8",
    ),
    "very long scalar": (
        {"fmt.yaml": GOOD.replace("doc: A tiny format.", "doc: " + "x" * 300_000)},
        "fmt.yaml:",
        "too long",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_schema_is_a_located_error(tmp_path, name):
    files, where, expect = CASES[name]
    d = _dir(tmp_path, files)
    with pytest.raises(SchemaError) as e:
        generate(d, tmp_path / "out")
    assert where in str(e.value) and expect in str(e.value), str(e.value)
    assert not (tmp_path / "out").exists()


def test_billion_laughs_is_refused_fast_in_bounded_memory(tmp_path):
    """In a subprocess, so that its peak RSS is its own."""
    d = _dir(tmp_path, {"fmt.yaml": GOOD + LAUGHS})
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom generator.loader import SchemaError\n"
        "from generator.driver import generate\nt = time.time()\n"
        f"try:\n    generate(Path({str(d)!r}), Path({str(tmp_path / 'o')!r}))\nexcept SchemaError as e:\n    print('refused', e)\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0].split()[1]\n"
        "print(time.time() - t, hwm)\n"
    )
    # expanding the aliases took 3 min 55 s and 2.4 GB; refused before composing, it takes milliseconds
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "refused" in r.stdout, r.stderr
    _seconds, rss_kb = r.stdout.strip().splitlines()[-1].split()
    assert int(rss_kb) < 200_000, r.stdout


def test_cli_reports_hostile_schema_in_one_line(tmp_path):
    d = _dir(tmp_path, {"fmt.yaml": GOOD + "deep: " + "[" * 5000 + "]" * 5000 + "\n"})
    r = subprocess.run([sys.executable, "-m", "kfmt", "generate", "--schemas", str(d), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_generated_code_stays_inert_for_hostile_strings(tmp_path):
    """Quotes, backslashes, Jinja syntax and newlines in docs and original names come out as data."""
    evil = '{{ 7*7 }} {% raw %} """ \\\'\\" \\\\n import os; os.system("boom") #'
    q = json.dumps(evil)  # a JSON string is a YAML double-quoted scalar
    text = GOOD.replace("doc: A tiny format.", f"doc: {q}\ndoc_ref: {q}").replace(
        "      - name: n\n", f"      - name: n\n        orig_name: {json.dumps(evil[:150])}\n        doc: {q}\n"
    )
    p = tmp_path / "fmt.yaml"
    p.write_text(text)
    files = render_format(load(p, tmp_path))
    for fname, src in files.items():
        if fname.endswith(".py"):
            compile(src, fname, "exec")
        if fname.endswith(("__init__.py", ".md")):
            assert "{{ 7*7 }}" in src  # the schema's text reached the docstring as text, not evaluated by Jinja
        for line in src.splitlines():
            assert not line.lstrip().startswith(("import os", "os.system"))
