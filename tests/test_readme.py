"""Every code block of the README is executed or checked against what the code does, so the README cannot rot.

`test_every_block_is_claimed` fails on a block no test here (or the Python-block test in test_spark.py)
handles: adding a block to the README means adding its check.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kfmt

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def doc_pages() -> list[Path]:
    """The README, then the documentation's pages in the site's order (mkdocs.yml's nav; the schema language's
    reference and the changelog are pages of their own, held by their own tests)."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    names = [next(iter(entry.values())) for entry in nav]
    return [ROOT / "README.md", *(ROOT / "docs" / n for n in names if (ROOT / "docs" / n).is_file())]


def doc_blocks(lang: str | None = None) -> list[tuple[str, str, Path]]:
    """``(language, text, page)`` of every fenced code block of the README and the docs."""
    out = []
    for page in doc_pages():
        for m in re.finditer(r"```(\w*)\n(.*?)```", page.read_text(), re.S):
            if lang is None or m.group(1) == lang:
                out.append((m.group(1), m.group(2), page))
    return out


BLOCKS = [(lg, text) for lg, text, _ in doc_blocks()]


def _block(lang: str, first: str) -> str:
    found = [text for lg, text in BLOCKS if lg == lang and text.lstrip().startswith(first)]
    assert len(found) == 1, f"docs block ```{lang} starting {first!r}: found {len(found)}"
    return found[0]


# (language, first characters) -> the test that executes or checks the block
CLAIMS = [
    ("bash", "make demo", "test_setup_block"),
    ("", "ChecksumError:", "test_error_block"),
    ("", "$ kfmt diff", "test_diff_output_block"),
    ("yaml", "doc:", "test_proposal_yaml_block"),
    ("bash", "make generate", "test_proposal_commands_block"),
    ("bash", "mkdir -p dist", "tests/test_cluster.py::test_zip_recipe_on_a_standalone_cluster"),
    ("bash", "tar -czf dist/env", "tests/test_cluster.py::test_packed_env_recipe_on_a_standalone_cluster"),
    ("text", "schemas/*.yaml", "test_layout_block"),
    ("bash", "kfmt dump /data/kafka-logs/__consumer_offsets-7", "test_internal_topics_block"),
    ("text", "offset 1 2026-01-30", "test_internal_topics_block"),
    ("bash", "spark-submit --jars", "tests/test_jvm.py::test_a_java_application_reads_with_the_jar_alone"),
    ("python", "", "tests/test_spark.py::test_readme_python_blocks_run"),
    ("sql", "", "tests/test_spark.py::test_docs_sql_blocks_run"),
    ("bash", "kfmt dump --summary /data/kafka-logs", "test_dump_summary_block"),
    ("text", "batches per magic:", "test_dump_summary_block"),
    ("bash", "make docs", "test_docs_build_offline_with_no_warning"),
    ("bash", "kfmt explain --api Metadata", "tests/test_protocol.py::test_docs_explain_and_diff_block"),
    ("bash", "kfmt dump kafka.pcapng", "test_capture_blocks"),
    ("text", "== 172.16.17.101:49280", "test_capture_blocks"),
    ("bash", "kfmt diff kafka.pcapng", "test_capture_blocks"),
    ("text", "message                  version", "test_capture_blocks"),
    ("bash", "kfmt dump --summary kafka.pcapng", "test_capture_summary_block"),
    ("bash", "kfmt dump capture.pcapng", "tests/test_capture.py::test_docs_capture_block"),
    ("text", "9 connection(s)", "test_capture_summary_block"),
]


def test_every_block_is_claimed():
    assert len(BLOCKS) >= 10
    for lang, text in BLOCKS:
        claims = [c for c in CLAIMS if c[0] == lang and text.lstrip().startswith(c[1])]
        assert claims, f"no test executes the docs block ```{lang}\n{text[:80]}"
    for _, _, name in CLAIMS:
        if "::" not in name:
            assert callable(globals().get(name)), name
        else:
            path, func = name.split("::")
            assert f"def {func}(" in (ROOT / path).read_text(), name


def _commands(block: str) -> list[str]:
    """The shell commands of a block: comments dropped, backslash continuations joined."""
    text = block.replace("\\\n", " ")
    return [ln.split("  #")[0].strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def test_setup_block():
    """`make demo` runs as written (from the project root, on its embedded defaults) and its report holds the
    numbers the README quotes; `make test` cannot run inside itself, so its recipe is checked instead."""
    cmds = _commands(_block("bash", "make demo"))
    assert cmds == ["make demo", "make test"]
    r = subprocess.run(["make", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = (ROOT / "out" / "report.md").read_text()
    rows = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| (\d+) \| ([\d.-]+) \| ([\d.-]+) \|$", report, re.M)
    assert rows
    records = {r[3] for r in rows}
    assert len(records) == 1
    quoted = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| ([\d.-]+) \| ([\d.-]+) \|$", README, re.M)
    assert len(quoted) >= 8
    by_key = {(f, c): (total, bpr, ovh) for f, c, total, _, bpr, ovh in rows}
    for f, c, total, bpr, ovh in quoted:
        assert by_key[(f, c)] == (total, bpr, ovh), f"README's demo row for {f}/{c} is out of date"
    assert f"({int(next(iter(records))):,} records" in README
    # the corpus as it is on disk, the first row, and the report's opening conclusion, quoted as they are
    disk = re.search(r"^\| \(on disk, as written\) \| mixed \| (\d+) \| \d+ \| ([\d.]+) \| ([\d.-]+) \|$", report, re.M)
    said = re.search(r"^\| \(on disk, as written\) \| mixed \| (\d+) \| ([\d.]+) \| ([\d.-]+) \|$", README, re.M)
    assert disk and said and disk.groups() == said.groups(), "README's on-disk row is out of date"
    opening = next(ln for ln in report.splitlines() if ln.startswith("On this corpus"))
    assert opening in README.replace("\n", " "), "README's conclusion is not the report's"
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "ruff check" in dry and "-m pytest" in dry  # generated/'s freshness: tests/test_generated.py
    assert (
        "def test_generated_is_fresh_and_generation_is_deterministic(" in (ROOT / "tests/test_generated.py").read_text()
    )


def _regex(line: str) -> str:
    """A README error line as a pattern: its numbers and hex values stand for any."""
    out, pos = [], 0
    for m in re.finditer(r"0x[0-9a-f]+|-?\d+", line):
        out.append(re.escape(line[pos : m.start()]))
        out.append("0x[0-9a-f]{8}" if m.group().startswith("0x") else "-?\\d+")
        pos = m.end()
    out.append(re.escape(line[pos:]))
    return "".join(out)


def test_error_block():
    """The two example errors are what the decoder says, word for word (numbers aside)."""
    import crc32c

    crc_line, count_line = (ln.strip() for ln in _block("", "ChecksumError:").strip().splitlines())
    data = bytearray(kfmt.encode_batch([kfmt.Record(value=b"a" * 10, timestamp=1)]))
    data[-1] ^= 0xFF
    with pytest.raises(kfmt.ChecksumError) as e:  # the README quotes the python backend (the default)
        list(kfmt.read_batches(bytes(data), backend="python"))
    assert re.fullmatch(_regex(crc_line), f"ChecksumError: {e.value}"), str(e.value)
    recs = [kfmt.Record(value=b"v", timestamp=1) for _ in range(2)]
    recs.append(kfmt.Record(value=b"v", headers=[("h", b"1")], timestamp=1))
    data = bytearray(kfmt.encode_batch(recs))
    at = data.rfind(b"\x02\x02h\x021")  # header count 1 (zigzag 2), then key "h", value "1"
    data[at] = 0x7B  # zigzag 123: -62
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    with pytest.raises(kfmt.InvalidValueError) as e:
        list(kfmt.read_batches(bytes(data), backend="python"))
    assert re.fullmatch(_regex(count_line), f"InvalidValueError: {e.value}"), str(e.value)


def _kfmt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kfmt", *args], cwd=cwd, capture_output=True, text=True)


def test_diff_output_block():
    block = _block("", "$ kfmt diff").rstrip("\n").splitlines()
    args = shlex.split(block[0][2:])[1:]
    r = _kfmt(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n").splitlines() == block[1:]


def test_proposal_yaml_block(tmp_path):
    """'The whole format is this file': the README's YAML, generated on its own, has exactly the wire layout
    of schemas/v2_no_record_attributes.yaml (the fingerprint leaves out docs)."""
    from generator.loader import load

    d = tmp_path / "s"
    d.mkdir()
    for name in ("common.yaml", "kafka_v2.yaml"):
        shutil.copy(ROOT / "schemas" / name, d / name)
    (d / "v2_no_record_attributes.yaml").write_text(_block("yaml", "doc:"))
    mine = load(d / "v2_no_record_attributes.yaml", d)
    ours = load(ROOT / "schemas" / "v2_no_record_attributes.yaml", ROOT / "schemas")
    assert mine.fingerprint == ours.fingerprint
    assert (mine.magic, mine.auto_detect, mine.root) == (ours.magic, ours.auto_detect, ours.root)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from kfmt.tools.synth import SynthConfig, synth

    d = tmp_path_factory.mktemp("logs")
    synth(d, SynthConfig(seed=3, topics=("orders",), partitions=1, records=200, segment_bytes=16 * 1024))
    return d


def test_proposal_commands_block(tmp_path, corpus):
    cmds = _commands(_block("bash", "make generate"))
    assert cmds[0] == "make generate" and all(c.startswith("kfmt ") for c in cmds[1:])
    # `make generate` runs `kfmt generate`, which tests/test_generated.py renders afresh and compares with
    # generated/ file for file; here its recipe is checked (a second full generation would only repeat that)
    dry = subprocess.run(["make", "-n", "generate"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0 and "kfmt generate" in dry.stdout, dry.stderr
    for c in cmds[1:]:
        r = _kfmt(*shlex.split(c.replace("/data/kafka-logs", str(corpus)))[1:], cwd=tmp_path)
        assert r.returncode == 0, (c, r.stderr)
        assert r.stdout.strip(), c
    assert list(tmp_path.glob("out/*.svg")), "kfmt explain wrote no diagram"


def test_layout_block():
    """The layout diagram names paths that exist."""
    text = _block("text", "schemas/*.yaml")
    assert (ROOT / "schemas").is_dir() and list((ROOT / "schemas").glob("*.yaml"))
    for d in re.findall(r"\b(generator|kfmt/runtime)/?", text):
        assert (ROOT / d).is_dir(), d
    for part in ("model", "python", "native", "construct"):
        assert "{model,python,native,construct}" in text and (ROOT / "generated" / "kafka_v2" / f"{part}.py").is_file()
    assert "_native.c" in text and (ROOT / "generated" / "kafka_v2" / "_native.c").is_file()
    rooms = set(re.findall(r"^  (\w+)/ ", text, re.M))  # kfmt's rooms, as the diagram lists them
    assert rooms == {p.name for p in (ROOT / "kfmt").iterdir() if (p / "__init__.py").is_file()} - {
        "runtime", "tools", "spark"}, rooms  # fmt: skip


def test_internal_topics_block(tmp_path):
    """The dump commands of "Kafka's own topics" run on a __consumer_offsets partition holding a real broker's
    records (tests/vectors/kafka_internal_payloads.json), and print the line the README shows."""
    import json

    vectors = json.loads((ROOT / "tests" / "vectors" / "kafka_internal_payloads.json").read_text())["records"]
    recs = [kfmt.Record(key=bytes.fromhex(r["key"]), value=bytes.fromhex(r["value"]), timestamp=1769791662893)
            for r in vectors if r["topic"] == "__consumer_offsets"]  # fmt: skip
    part = tmp_path / "__consumer_offsets-7"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(kfmt.encode_batch(recs))
    block = _block("bash", "kfmt dump /data/kafka-logs/__consumer_offsets-7")
    outputs = []
    for cmd in _commands(block):
        argv = shlex.split(cmd.replace("/data/kafka-logs", str(tmp_path)))
        r = subprocess.run([sys.executable, "-m", "kfmt", *argv[1:]], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, (cmd, r.stderr)
        outputs.append(r.stdout)
    shown = _block("text", "offset 1 2026-01-30").strip()
    assert shown in [ln.strip() for ln in outputs[0].splitlines()]
    row = json.loads(outputs[1].splitlines()[-1])
    assert row["key_decoded"]["type"] == "OffsetCommitKey" and row["value_decoded"]["version"] == 3


def test_the_readme_is_a_front_page():
    """At most 300 lines: what kfmt is, the two commands, a real dump, Spark and Python in five lines each, the
    formats, the commands in one-line rows, links; the rest lives in docs/."""
    lines = README.splitlines()
    assert len(lines) <= 300, len(lines)
    rows = [ln for ln in lines if ln.startswith("| `")]
    assert rows and all(len(ln) < 200 for ln in rows), max(rows, key=len)
    for page in doc_pages()[1:]:
        assert f"docs/{page.name}" in README, page.name  # every page linked from the front page


def test_dump_summary_block():
    """The README's dump of a real broker's log directory is what `kfmt dump --summary` prints for it (the folder
    named /data/kafka-logs in the README; runs of spaces that pad the folder's name are not compared)."""
    fixture = ROOT.parent / "shared" / "fixtures" / "real-broker" / "zk-3.9snap-gzip-BiggerBrain"
    if not fixture.is_dir():
        pytest.skip("needs ../shared/fixtures")
    (cmd,) = _commands(_block("bash", "kfmt dump --summary /data/kafka-logs"))
    r = _kfmt(*shlex.split(cmd.replace("/data/kafka-logs", str(fixture)))[1:])
    assert r.returncode == 0, r.stderr

    def words(text):
        return [ln.split() for ln in text.replace(str(fixture), "/data/kafka-logs").strip().splitlines()]

    assert words(r.stdout) == words(_block("text", "batches per magic:"))


def test_capture_summary_block():
    """The README's capture summary is what `kfmt dump --summary` prints for ntop/nDPI's public capture
    (../shared/fixtures/wire-captures)."""
    capture = ROOT.parent / "shared" / "fixtures" / "wire-captures" / "ntop+nDPI" / "kafka.pcapng"
    (cmd,) = _commands(_block("bash", "kfmt dump --summary kafka.pcapng"))
    r = _kfmt(*shlex.split(cmd.replace("kafka.pcapng", str(capture)))[1:])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == _block("text", "9 connection(s)").strip()


def test_capture_blocks():
    """The README's capture text and version diff are what `kfmt dump` and `kfmt diff` print for ntop/nDPI's
    public capture: the dump's first lines as they are, each row of the diff's excerpt a row of its table."""
    capture = ROOT.parent / "shared" / "fixtures" / "wire-captures" / "ntop+nDPI" / "kafka.pcapng"
    for first, shown, whole in (("kfmt dump kafka.pcapng", "== 172.16.17.101:49280", True),
                                ("kfmt diff kafka.pcapng", "message                  version", False)):  # fmt: skip
        (cmd,) = _commands(_block("bash", first))
        r = _kfmt(*shlex.split(cmd.replace("kafka.pcapng", str(capture)))[1:])
        assert r.returncode == 0, r.stderr
        lines = _block("text", shown).strip().splitlines()
        if whole:
            assert r.stdout.splitlines()[: len(lines)] == lines
        else:
            assert set(lines) <= set(r.stdout.splitlines()) and len(lines) >= 4, r.stdout


def test_docs_build_offline_with_no_warning(tmp_path):
    """`make docs`: mkdocs (mkdocs-material) builds the site from docs/, the schema language's reference and the
    changelog, strict (a broken link or anchor is an error), with no warning at all."""
    import os

    pytest.importorskip("mkdocs")
    cmds = _commands(_block("bash", "make docs"))
    assert cmds[0] == "make docs"
    dry = subprocess.run(["make", "-n", "docs"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "mkdocs build --strict" in dry
    mkdocs = Path(sys.executable).parent / "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, env=env)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stdout + r.stderr, r.stdout + r.stderr
    for page in ("index", "cli", "spark", "schema-language", "changelog"):
        assert (tmp_path / "site" / f"{page}.html").is_file(), page
