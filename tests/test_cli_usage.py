"""Wrong invocations of every command: one line on stderr naming what is wrong, exit 2, never a traceback,
nothing written."""

from __future__ import annotations

import pytest

from kfmt.tools.cli import main
from kfmt.tools.synth import SynthConfig, synth

SEG = "c/a-0/00000000000000000000.log"

WRONG = {
    "kfmt": [[], ["bogus"], ["--bogus"]],
    "generate": [
        ["generate", "--schemas", "/nonexistent", "--out", "o"],
        ["generate", "--schemas", "afile", "--out", "o"],
        ["generate", "--out", "afile"],
        ["generate", "--show-ir", "nope"],
        ["generate", "--show-ir", "kafka_v2", "--until", "nope"],
        ["generate", "--until", "derive"],
    ],
    "formats": [["formats", "extra"]],
    "demo": [
        ["demo", "--records", "x"],
        ["demo", "--records", "-5"],
        ["demo", "--corpus", "/nonexistent"],
        ["demo", "--corpus", "afile"],
        ["demo", "--corpus", "empty"],
    ],
    "dump": [
        ["dump"],
        ["dump", "/nonexistent/x.log"],
        ["dump", "afile"],
        ["dump", "empty"],
        ["dump", "--offsets", "a:b", "c"],
        ["dump", "--offsets", "9:1", "c"],
        ["dump", "--offsets", "5", "c"],
        ["dump", "--time", "x:y", "c"],
        ["dump", "--partition", "x", "c"],
        ["dump", "--max-bytes", "-1", "c"],
        ["dump", "--format", "kafka_v9", "c"],
        ["dump", "--payload", "bogus", "c"],
        ["dump", "--isolation", "bogus", "c"],
    ],
    "import-kafka-spec": [
        ["import-kafka-spec"],
        ["import-kafka-spec", "/nonexistent/spec.json"],
    ],
    "recover": [
        ["recover"],
        ["recover", "/nonexistent/table"],
        ["recover", "afile"],
        ["recover", "c", "--storage", "s3.endpoint"],
    ],
    "convert": [
        ["convert", "/nonexistent/logs", "o", "--magic", "2"],
        ["convert", "c", "o"],
        ["convert", "c", "o", "--magic", "3"],
        ["convert", "c", "o", "--magic", "x"],
        ["convert", "c", "o", "--magic", "2", "--codec", "brotli"],
        ["convert", "c", "afile", "--magic", "2"],
        ["convert", "c", "o", "--magic", "0", "--codec", "zstd"],
        ["convert", "empty", "o", "--magic", "2"],
        ["convert", SEG, SEG, "--magic", "2"],
    ],
    "diff": [
        ["diff"],
        ["diff", "kafka_v9"],
        ["diff", "kafka_v2", "--batch-sizes", "1,x"],
        ["diff", "kafka_v2", "--batch-sizes", "0"],
        ["diff", "kafka_v2", "--key-size", "x"],
        ["diff", "kafka_v2", "--value-size", "-5"],
        ["diff", "kafka_v2", "--headers", "-1"],
        ["diff", "kafka_v2", "--codec", "brotli"],
        ["diff", "kafka_v2", "--corpus", "/nonexistent/logs"],
        ["diff", "kafka_v2", "--corpus", "c", "--corpus-codecs", "none,brotli"],
    ],
    "explain": [
        ["explain", "kafka_v9"],
        ["explain", "--bytes", "/nonexistent"],
        ["explain", "--bytes", "c"],
        ["explain", "--bytes", SEG, "--limit", "0"],
        ["explain", "--bytes", SEG, "--format", "kafka_v9"],
    ],
    "synth": [
        ["synth", "afile"],
        ["synth", "s", "--partitions", "0"],
        ["synth", "s", "--records", "-1"],
        ["synth", "s", "--segment-bytes", "0"],
        ["synth", "s", "--topics", ""],
        ["synth", "s", "--topics", "a/b"],
        ["synth", "s", "--seed", "x"],
    ],
    "spark": [
        ["spark"],
        ["spark", "bogus"],
        ["spark", "compare", "/nonexistent"],
        ["spark", "compare", "c", "--formats", "kafka_v9"],
        ["spark", "compare", "c", "--codecs", "brotli"],
        ["spark", "convert", "/nonexistent", "o"],
        ["spark", "convert", "c", "o", "--magic", "1", "--codec", "zstd"],
        ["spark", "convert", "c", "o", "--segment-bytes", "0"],
        ["spark", "convert", "c", "o", "--magic", "7"],
        ["spark", "convert", "c", "afile"],
    ],
}
CASES = [(cmd, argv) for cmd, table in WRONG.items() for argv in table]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    synth(d / "c", SynthConfig(seed=1, topics=("a",), partitions=1, records=40, legacy=False))
    (d / "afile").write_text("not a log\n")
    (d / "empty").mkdir()
    return d


def _listing(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def test_every_command_has_wrong_invocations():
    from kfmt.tools.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert set(sub.choices) <= set(WRONG), set(sub.choices) - set(WRONG)


@pytest.mark.parametrize("cmd,argv", CASES, ids=[" ".join(a) or "(none)" for _, a in CASES])
def test_wrong_invocation_is_one_line_and_exit_2(workdir, monkeypatch, capsys, cmd, argv):
    monkeypatch.chdir(workdir)
    before = _listing(workdir)
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, (rc, err, captured.out[-500:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("kfmt"), err
    assert _listing(workdir) == before, "a wrong invocation wrote files"
