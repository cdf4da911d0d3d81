"""The schema loader rejects bad schemas with file, line and path; schemas cannot inject code."""

import textwrap
from pathlib import Path

import pytest

from generator.driver import render_format
from generator.loader import load
from generator.loader.spec import SchemaError

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def _write(tmp_path, text, name="fmt.yaml"):
    (tmp_path / "common.yaml").write_text((SCHEMAS / "common.yaml").read_text())
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


GOOD = """\
doc: A tiny format.
root: msg
structs:
  msg:
    fields:
      - name: n
        type: int32
"""


def test_good_schema_loads(tmp_path):
    s = load(_write(tmp_path, GOOD), tmp_path)
    assert s.id == "fmt" and s.root == "msg"


@pytest.mark.parametrize(
    "bad,expect",
    [
        (
            GOOD.replace("        type: int32", "        type: int32\n        typo: 1"),
            ":8 structs.msg.fields[0].typo: unknown key 'typo'",
        ),
        (
            GOOD.replace("        type: int32", "        type: int32\n        derive: {lenght_of: n}"),
            "did you mean 'length_of'",
        ),
        (GOOD.replace("name: n", "name: 'bad name'"), "is not a valid lower_snake Python identifier"),
        (GOOD.replace("name: n", "name: __class__"), "is not a valid lower_snake Python identifier"),
        (GOOD.replace("name: n", 'name: "x\\nimport os"'), "is not a valid lower_snake Python identifier"),
        (GOOD.replace("name: n", "name: class"), "is not a valid lower_snake Python identifier"),
        (GOOD.replace("name: n", "name: buf"), "reserved by the generated code"),
        (GOOD.replace("name: n", "name: n" + "x" * 80), "longer than 64"),
        (GOOD.replace("type: int32", "type: int33"), "unknown type 'int33'"),
        (GOOD.replace("root: msg", "root: nope"), "root struct 'nope' is not defined"),
        (GOOD.replace("type: int32", "type: int8\n        const: 300"), "does not fit int8"),
        (
            GOOD.replace("    fields:", "    role: batch\n    fields:").replace(
                "type: int32", "type: {array: msg}\n        count: varint"
            ),
            "contains itself",
        ),
        (
            GOOD + "      - name: m\n        type: int32\n        if: {field: ghost}\n",
            "reference 'ghost' is not defined",
        ),
        (GOOD.replace("doc: A tiny format.", "doc: !!python/object:os.system x"), "fmt.yaml:1"),
        ("doc: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_schemas_are_rejected_with_location(tmp_path, bad, expect):
    with pytest.raises(SchemaError) as e:
        s = load(_write(tmp_path, bad), tmp_path)
        render_format(s)
    assert expect in str(e.value)
    assert "fmt.yaml" in str(e.value)


def test_docs_cannot_escape_their_docstrings(tmp_path):
    evil = GOOD.replace("doc: A tiny format.", 'doc: \'x""" ; import os; os.system("boom") ; """\'')
    evil = evil.replace("        type: int32", '        type: int32\n        doc: "\\"\\"\\"\\nraise SystemExit"')
    files = render_format(load(_write(tmp_path, evil), tmp_path))
    assert any(name.endswith(".md") for name in files)
    for name, src in files.items():
        if name.endswith(".py"):
            compile(src, name, "exec")
        assert "\nraise SystemExit" not in src  # a doc's line breaks never start a line of their own
        assert "\nimport os" not in src.replace("import os as", "")


def test_every_schema_field_in_repo_has_valid_refs():
    from generator.driver import format_ids

    for p in format_ids(SCHEMAS):
        load(p, SCHEMAS)


def _generate_dir(schema_dir, out):
    from generator.driver import generate

    return generate(schema_dir, out)


def _only(tmp_path, files: dict[str, str]):
    d = tmp_path / "myschemas"
    d.mkdir()
    (d / "common.yaml").write_text((SCHEMAS / "common.yaml").read_text())
    for name, text in files.items():
        (d / name).write_bytes(text if isinstance(text, bytes) else textwrap.dedent(text).encode())
    return d


AUTO = GOOD.replace("root: msg", "root: msg\nmagic: 7\nauto_detect: true")


@pytest.mark.parametrize(
    "files,expect",
    [
        # two formats both claiming to be *the* reader of magic 7
        ({"a.yaml": AUTO, "b.yaml": AUTO}, "b.yaml: auto_detect for magic 7 is already claimed by {d}/a.yaml"),
        ({"a.yaml": GOOD.replace("root: msg", "auto_detect: true")}, "{d}/a.yaml:1: no 'root'"),
        ({"fmt.yaml": GOOD, "empty.yaml": ""}, "{d}/empty.yaml:1: empty schema"),
        ({"fmt.yaml": GOOD, "notes.yaml": "doc: notes\n"}, "{d}/notes.yaml:1: no 'root'"),
        ({"fmt.yaml": b"doc: caf\xe9\nroot: msg\n"}, "{d}/fmt.yaml:1: not UTF-8 (byte 0xe9 at offset 8)"),
        ({"fmt.yaml": "- a list\n"}, "{d}/fmt.yaml:1: a schema file is a mapping"),
        (
            {
                "fmt.yaml": GOOD.replace(
                    "        type: int32",
                    "        type: int32\n        bits:\n          - {name: a, mask: 0x0c}\n          - {name: b, mask: 0x18}",
                )
            },
            "{d}/fmt.yaml:10 structs.msg.fields[0].bits[1].mask: mask 0x18 overlaps bit 'a' (mask 0xc)",
        ),
    ],
)
def test_schema_directory_errors_name_the_file_in_the_directory_used(tmp_path, files, expect):
    d = _only(tmp_path, files)
    with pytest.raises(SchemaError) as e:
        _generate_dir(d, tmp_path / "out")
    assert expect.format(d=d) in str(e.value)
    assert not (tmp_path / "out").exists(), "nothing is written when a schema is refused"


def test_project_schemas_are_named_schemas_in_errors(tmp_path):
    from generator.loader import display_dir

    assert display_dir(SCHEMAS) == "schemas"
    assert display_dir(tmp_path) == str(tmp_path)
