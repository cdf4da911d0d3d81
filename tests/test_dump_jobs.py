"""`kfmt dump --jobs N` on a capture (kfmt.tools.dump.jobs): N processes, each writing its share of the messages
in turn, give byte for byte the one process's output (JSON lines, text lines, records, templates, summaries), its
problems and notes in the same order, and its exit status, on every capture the tests have (cut into chunks of one message, so that the turns change at every
message); by default on a capture of 16 MB or more; and a process that fails fails the dump in one line."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kfmt.tools.dump.capture as dump_capture
from kfmt.tools.cli import main
from kfmt.tools.dump import jobs

ROOT = Path(__file__).resolve().parents[1]


def _dumped(path: Path, tmp: Path, *extra: str) -> tuple[bytes, str, int]:
    """(stdout's bytes, stderr's text, exit status) of ``kfmt dump ...`` run here, its output to files."""
    out, err = tmp / "out", tmp / "err"
    with out.open("w") as o, err.open("w") as e:
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = o, e
        try:
            status = main(["dump", *extra, str(path)])
        finally:
            sys.stdout, sys.stderr = saved
    return out.read_bytes(), err.read_text(), status


def test_shares_write_what_one_process_writes(tmp_path, monkeypatch):
    from test_capture_spark import corpus

    monkeypatch.setattr(jobs, "CHUNK_MESSAGES", 1)
    paths = corpus(tmp_path, 20)
    said = 0
    for p in paths:
        one = _dumped(p, tmp_path, "--json", "--jobs", "1")
        assert _dumped(p, tmp_path, "--json", "--jobs", "2") == one, p
        assert _dumped(p, tmp_path, "--json", "--jobs", "3") == one, p
        said += one[1].count("kfmt dump: ")
        for how in ([], ["--summary"], ["--summary", "--json"]):  # text lines; summaries counted in shares, added up
            assert _dumped(p, tmp_path, *how, "--jobs", "3") == _dumped(p, tmp_path, *how, "--jobs", "1"), (p, how)
    for p in paths[:20]:  # the records, a line each: JSON, text, a template
        for how in (["--json", "--records"], ["--records"], ["--records", "--template", "%t %p %o %k\\n"]):
            assert _dumped(p, tmp_path, *how, "--jobs", "2") == _dumped(p, tmp_path, *how, "--jobs", "1"), (p, how)
    assert said > 100  # (problems and notes were ordered across the shares too)


def test_a_share_that_fails_fails_the_dump_in_one_line(tmp_path, monkeypatch):
    from fuzz.capture import synthetic

    src = synthetic(tmp_path / "s.pcap", 8)
    monkeypatch.setattr(jobs, "CHUNK_MESSAGES", 1)
    first, message = os.getpid(), dump_capture._message

    def failing(*args, **kw):
        if os.getpid() != first:
            raise RuntimeError("injected")
        return message(*args, **kw)

    monkeypatch.setattr(dump_capture, "_message", failing)
    out, err, status = _dumped(src, tmp_path, "--json", "--jobs", "2")
    assert status == 2 and err.count("\n") == 1 and err.startswith("kfmt dump: a process of this dump (--jobs) "), err


def test_a_large_capture_is_dumped_by_a_process_per_cpu_by_default(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_capture import make_capture

    cap = tmp_path / "big.pcap"
    make_capture(cap, 18)
    assert cap.stat().st_size >= jobs.PARALLEL_FROM
    kfmt_exe = str(Path(sys.executable).parent / "kfmt")
    runs = [subprocess.run([kfmt_exe, "dump", "--json", *extra, str(cap)], capture_output=True, timeout=300)
            for extra in ([], ["--jobs", "1"])]  # fmt: skip
    assert runs[0].returncode == runs[1].returncode == 0 and runs[0].stdout == runs[1].stdout
    assert runs[0].stdout.count(b"\n") > 1000
    for how in (["--json"], []):  # a reader that goes away (`| head`): as one process's dump ends then, nothing said
        ends = [subprocess.run(["bash", "-c", f'"$0" dump {" ".join(how)} --jobs {j} "$1" | head -3 >/dev/null; '
                                'echo "${PIPESTATUS[0]}"', kfmt_exe, str(cap)], capture_output=True, text=True,
                               timeout=300) for j in (1, 2)]  # fmt: skip
        assert ends[0].stdout == ends[1].stdout and ends[0].stderr == ends[1].stderr == "", (how, ends)


@pytest.mark.parametrize("extra", [["--summary"], ["--records", "--template", "%k\\n"], ["--json"], []])
def test_every_output_is_written_in_shares(tmp_path, monkeypatch, extra):
    """JSON lines, text lines, template lines and summaries are written in shares where the output is a file; an
    output in memory (a StringIO) by one process."""
    import contextlib
    import io

    import kfmt.tools.dump.capture as dc
    from fuzz.capture import synthetic

    made, real = [], jobs.Shared
    monkeypatch.setattr(jobs, "Shared", lambda *a: made.append(a) or real(*a))
    # the definition's shares (a plain capture's summary is otherwise counted in one pass in C, without shares:
    # tests/test_capture_summary.py)
    monkeypatch.setattr(dc, "summarized", lambda *a: False)
    src = synthetic(tmp_path / "s.pcap", 9)
    _dumped(src, tmp_path, "--jobs", "2", *extra)
    assert len(made) == 1
    with contextlib.redirect_stdout(io.StringIO()):
        main(["dump", "--jobs", "2", *extra, str(src)])
    assert len(made) == 1 or extra == ["--summary"]  # (a summary is counted in shares, printed by the first)
