"""Writes that end clean: an output appears complete (with its marker) or not at all, whatever kills the
writer; leftovers are removed by the next run; a full disk is one line and nothing partial."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kfmt.storage.publish import MARKER
from kfmt.tools.synth import SynthConfig, synth

KFMT = [sys.executable, "-m", "kfmt"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("kill") / "logs"
    synth(d, SynthConfig(seed=9, records=8000, segment_bytes=64 * 1024))
    return d


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The complete output, and how long a whole run takes here (kills are timed inside that window)."""
    out = tmp_path_factory.mktemp("ref") / "out"
    t = time.monotonic()
    r = subprocess.run([*KFMT, "convert", str(corpus), str(out), "--magic", "2", "--codec", "zstd"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return _files(out), time.monotonic() - t


def _files(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != MARKER}


def _leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if ".kfmt-" in p.name or p.name.endswith(".tmp")]


def test_killed_convert_leaves_nothing_that_looks_complete(corpus, reference, tmp_path):
    reference, seconds = reference
    rng = random.Random(12)
    outcomes = []
    for trial in range(8):
        out = tmp_path / f"out{trial}"
        p = subprocess.Popen([*KFMT, "convert", str(corpus), str(out), "--magic", "2", "--codec", "zstd"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(rng.uniform(0.05, 1.1 * seconds))
        p.send_signal(signal.SIGKILL)
        p.wait()
        if out.exists():  # it finished before the kill: complete, with its marker
            assert (out / MARKER).exists() and _files(out) == reference
            outcomes.append("complete")
        else:
            outcomes.append("absent" + (" + staging" if _leftovers(tmp_path) else ""))
        # the next run removes what the killed one left and produces the whole output
        if out.exists():
            continue
        r = subprocess.run([*KFMT, "convert", str(corpus), str(out), "--magic", "2", "--codec", "zstd"],
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert _files(out) == reference and (out / MARKER).exists()
        assert not _leftovers(tmp_path), _leftovers(tmp_path)
    assert any(o.startswith("absent") for o in outcomes), outcomes  # some kills landed mid-run
    print("kill trials:", outcomes)


def test_marker_says_what_was_written(corpus, tmp_path):
    out = tmp_path / "o"
    r = subprocess.run([*KFMT, "convert", str(corpus), str(out), "--magic", "1", "--codec", "gzip"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads((out / MARKER).read_text())
    assert m["records_in"] > m["records_out"] > 0 and m["not_carried_over"]["control_batch"] > 0
    assert m["magic"] == 1 and m["bytes_unread"] == 0 and m["not_carried_over"]["headers"] > 0
    # an existing destination is refused, --overwrite replaces it whole
    r = subprocess.run([*KFMT, "convert", str(corpus), str(out), "--magic", "2"], capture_output=True, text=True)
    assert r.returncode == 2 and "exists (pass --overwrite" in r.stderr
    r = subprocess.run([*KFMT, "convert", str(corpus), str(out), "--magic", "2", "--overwrite"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0 and json.loads((out / MARKER).read_text())["magic"] == 2
    assert not _leftovers(tmp_path)


def test_a_write_that_fails_is_one_line_and_leaves_nothing(corpus, tmp_path):
    """A file size limit makes writes fail part-way, as a full disk does."""
    out = tmp_path / "o"
    code = (
        "import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\nfrom kfmt.tools.cli import main\n"
        f"sys.exit(main(['convert', {str(corpus)!r}, {str(out)!r}, '--magic', '2']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("kfmt convert: cannot write")]
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not out.exists() and not _leftovers(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_full_disk_on_a_small_tmpfs(corpus, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        r = subprocess.run([*KFMT, "convert", str(corpus), str(mnt / "out"), "--magic", "2"],
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 1 and "no space left on device; nothing written" in r.stderr, r.stderr[-2000:]
        assert "Traceback" not in r.stderr and os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_leftovers_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    """Temporary files and staging folders carry their writer's pid: the next write of the same target
    removes those whose writer is gone, and leaves a live writer's alone; a replaced output whose
    replacement never landed is restored."""
    from kfmt.storage.publish import atomic_write

    dead = 2**22 + 12345  # above the default pid_max: no such process
    target = tmp_path / "plot.png"
    (tmp_path / f".plot.png.kfmt-partial-{dead}-abc_12").write_bytes(b"half")
    (tmp_path / f".plot.png.kfmt-partial-{os.getpid()}-live").write_bytes(b"in progress")
    atomic_write(target, b"png")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f".plot.png.kfmt-partial-{os.getpid()}-live", "plot.png"], names
    # a directory output renamed aside by a writer killed before its replacement landed comes back
    old = tmp_path / f".out.kfmt-old-{dead}-1a2b"
    old.mkdir()
    (old / MARKER).write_text("{}")
    from kfmt.storage.publish import clean_leftovers

    clean_leftovers(tmp_path / "out")
    assert (tmp_path / "out" / MARKER).exists() and not old.exists()
