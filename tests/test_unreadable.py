"""A folder the reader may not list is reported with the OS's reason, never taken as absent (issue 46, item 2):
broker log dirs owned by the ``kafka`` user are exactly this. Run as a user without read permission: root ignores
mode bits, so as root the commands run under ``capsh`` with the capabilities that bypass them dropped."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

import kfmt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DROP = "cap_dac_override,cap_dac_read_search"

if os.geteuid() == 0 and shutil.which("capsh") is None:
    pytest.skip("running as root without capsh: mode bits cannot be made to hold", allow_module_level=True)


def _as_reader(argv: list[str], **kw) -> subprocess.CompletedProcess:
    """``argv`` run as a user whom mode bits bind."""
    if os.geteuid() == 0:
        argv = ["capsh", f"--drop={DROP}", "--", "-c", shlex.join(argv)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=ROOT)
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, **kw)


@pytest.fixture
def logs(tmp_path):
    """A log dir of two partitions, one of them a folder nobody but its owner may enter."""
    d = tmp_path / "logs"
    for name in ("orders-0", "orders-1"):
        (d / name).mkdir(parents=True)
        recs = [kfmt.Record(value=b"v%d" % i, timestamp=1) for i in range(14)]
        (d / name / "00000000000000000000.log").write_bytes(kfmt.encode_batch(recs))
    (d / "orders-1").chmod(0)
    yield d
    (d / "orders-1").chmod(0o755)


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


SPARK = r"""
import json, sys
import kfmt.spark
from kfmt.spark.jobs import session
spark = session("local[2]", "unreadable")
kfmt.spark.register(spark)
out = {}
for engine in ("jvm", "python"):
    try:
        out[engine] = ["ok", spark.read.format("kafka-log").option("engine", engine).load(sys.argv[1]).count()]
    except Exception as e:
        out[engine] = [type(e).__name__, str(e)]
from kfmt.tools.cli import main
out["offsets"] = main(["spark", "offsets", sys.argv[1]])
print("RESULT " + json.dumps(out))
"""


def test_spark_both_engines_and_offsets_refuse_an_unreadable_partition(logs, tmp_path):
    (tmp_path / "s.py").write_text(SPARK)
    r = _as_reader([sys.executable, str(tmp_path / "s.py"), str(logs)])
    found = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert found, r.stderr[-3000:]
    got = json.loads(found[-1][7:])
    for engine in ("jvm", "python"):
        kind, text = got[engine]
        assert kind == "KafkaLogError" and "Permission denied" in text and "\n" not in text, (engine, got[engine])
    assert got["offsets"] == 1
