"""A folder the reader may not list is reported with the OS's reason, never taken as absent (issue 46, item 2):
broker log dirs owned by the ``kafka`` user are exactly this. Run as a user without read permission: root ignores
mode bits, so as root the commands run under ``capsh`` with the capabilities that bypass them dropped."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from contextlib import contextmanager

import pytest

import kfmt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DROP = "cap_dac_override,cap_dac_read_search"

if os.geteuid() == 0 and shutil.which("capsh") is None:
    pytest.skip("running as root without capsh: mode bits cannot be made to hold", allow_module_level=True)


def as_reader(argv: list[str]) -> list[str]:
    """``argv`` as a command run as a user whom mode bits bind (as root: under capsh, the capabilities that bypass
    them dropped)."""
    return ["capsh", f"--drop={DROP}", "--", "-c", shlex.join(argv)] if os.geteuid() == 0 else argv


def _as_reader(argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=ROOT)
    return subprocess.run(as_reader(argv), capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, **kw)


@contextmanager
def unreadable_log_dir(where):
    """A log dir of two partitions, one of them a folder nobody but its owner may enter."""
    d = where / "logs-unreadable"
    for name in ("orders-0", "orders-1"):
        (d / name).mkdir(parents=True)
        recs = [kfmt.Record(value=b"v%d" % i, timestamp=1) for i in range(14)]
        (d / name / "00000000000000000000.log").write_bytes(kfmt.encode_batch(recs))
    (d / "orders-1").chmod(0)
    try:
        yield d
    finally:
        (d / "orders-1").chmod(0o755)


@pytest.fixture
def logs(tmp_path):
    with unreadable_log_dir(tmp_path) as d:
        yield d


def test_the_folder_is_really_unreadable_to_the_reader(logs):
    r = _as_reader(["ls", str(logs / "orders-1")])
    assert r.returncode != 0 and "Permission denied" in r.stderr


def test_dump_reports_an_unreadable_partition_as_a_problem(logs):
    kfmt_cmd = [sys.executable, "-m", "kfmt", "dump"]
    r = _as_reader([*kfmt_cmd, "--summary", str(logs)])
    assert r.returncode == 1 and f"{logs / 'orders-1'}: Permission denied" in r.stderr, r.stderr
    r = _as_reader([*kfmt_cmd, str(logs / "orders-1")])  # the folder itself: not "no Kafka log file found"
    assert r.returncode == 1 and "Permission denied" in r.stderr and "no Kafka log file" not in r.stderr, r.stderr


def test_library_readers_and_convert_refuse_rather_than_return_half(logs, tmp_path):
    code = (
        "import kfmt\n"
        "for f in (lambda: kfmt.read_arrow(P), lambda: list(kfmt.read_arrow_batches(P))):\n"
        "    try:\n        f(); print('READ')\n"
        "    except Exception as e:\n        print('ERR', type(e).__name__, e)\n"
    ).replace("P", repr(str(logs)))
    r = _as_reader([sys.executable, "-c", code])
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(ln.startswith("ERR") and "Permission denied" in ln for ln in lines), r
    r = _as_reader([sys.executable, "-m", "kfmt", "convert", str(logs), str(tmp_path / "out"), "--magic", "2"])
    assert r.returncode == 1 and "Permission denied" in r.stderr and not (tmp_path / "out").exists(), r.stderr


# Spark, both engines and `kfmt spark offsets`, run as such a user: tests/test_spark_sessions.py (one session for
# that and the README's way of making one)
