"""kfmt's one line reaches the PySpark user however the session was made (issue 46, item 1): as the README builds
it (``SparkSession.builder...getOrCreate()`` then ``kfmt.spark.register(spark)``, which adds the jar to a running
session) and under ``spark-submit --jars``; with ``spark.jars`` at start it is the suite's own session
(tests/test_spark.py). A task's failure of a class only the jar holds cannot be read by a driver whose class loader
lacks the jar, and Spark then says only "UnknownReason". And a session stopped with kafka-log streams running stops
them cleanly (item 10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import kfmt

pytest.importorskip("pyspark")

SCRIPT = r"""
import json, sys, time
from pyspark.sql import SparkSession
import kfmt.spark

spark = SparkSession.builder.master("local[2]").getOrCreate()
kfmt.spark.register(spark)
given = json.loads(sys.argv[2])
out = {}
reads = [("damaged", "auto"), ("tar", "auto")]
if "unreadable" in given:  # a partition folder this user may not list (tests/test_unreadable.py), each engine
    reads += [("unreadable", "jvm"), ("unreadable", "python")]
for name, engine in reads:
    try:
        out[f"{name}/{engine}"] = ["ok", spark.read.format("kafka-log").option("engine", engine).load(given[name]).count()]
    except Exception as e:
        out[f"{name}/{engine}"] = [type(e).__name__, str(e)]
if "unreadable" in given:
    from kfmt.tools.cli import main
    out["offsets"] = main(["spark", "offsets", given["unreadable"]])
if sys.argv[1] == "streams":  # spark.stop() with a stream of each engine running
    queries = [spark.readStream.format("kafka-log").option("engine", engine).option("startingOffsets", "earliest")
               .load(given["logs"]).writeStream.format("memory").queryName(f"q_{engine}")
               .option("checkpointLocation", given["checkpoints"] + "/" + engine)
               .trigger(processingTime="100 milliseconds").start() for engine in ("jvm", "python")]
    for q in queries:
        q.processAllAvailable()
    time.sleep(1.5)  # the queries poll the log between triggers
    spark.stop()
    out["active_after_stop"] = [q.isActive for q in queries]
print("RESULT " + json.dumps(out))
"""


@pytest.fixture
def unreadable_logs(tmp_path):
    from test_unreadable import unreadable_log_dir

    with unreadable_log_dir(tmp_path) as d:
        yield d


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    part = d / "damaged" / "orders-0"
    part.mkdir(parents=True)
    data = bytearray(b"".join(kfmt.encode_batch([kfmt.Record(value=b"v%d" % i, timestamp=1)], base_offset=i)
                              for i in range(3)))  # fmt: skip
    data[-1] ^= 0xFF  # the last batch's CRC no longer holds
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    with tarfile.open(d / "logs.tar.gz", "w:gz") as t:
        t.add(part.parent, arcname="logs")
    logs = d / "logs" / "t-0"
    logs.mkdir(parents=True)
    (logs / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)]))
    return {"damaged": str(part.parent), "tar": str(d / "logs.tar.gz"), "logs": str(logs.parent),
            "checkpoints": str(d / "checkpoints")}  # fmt: skip


def _run(cmd, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    return json.loads(lines[-1][7:]), r.stdout + r.stderr


def _check(got):
    kind, text = got["damaged/auto"]
    assert kind == "KafkaLogError", got["damaged/auto"]
    assert text.startswith("kafka-log: corrupt batch in ") and "\n" not in text and "crc" in text, text
    kind, text = got["tar/auto"]
    assert kind == "KafkaLogError" and "a tar archive, not a Kafka log file" in text and "\n" not in text, got[
        "tar/auto"
    ]


def test_the_readme_session_gets_the_one_line_and_stops_its_streams_cleanly(tmp_path, inputs, unreadable_logs):
    """Built as the README shows: the jar added to a running session. Run as a user whom mode bits bind, a log dir
    with a partition folder that user may not list fails in each engine, and `kfmt spark offsets` exits 1, with
    the OS's reason (issue 46, item 2). Then spark.stop() with a kafka-log stream of each engine running: both stop
    with the session, without Spark's "[INTERNAL_ERROR] No active or default Spark session found" or "Resources
    may have leaked"."""
    from test_unreadable import as_reader

    (tmp_path / "s.py").write_text(SCRIPT)
    given = {**inputs, "unreadable": str(unreadable_logs)}
    got, text = _run(as_reader([sys.executable, str(tmp_path / "s.py"), "streams", json.dumps(given)]), tmp_path)
    _check(got)
    for engine in ("jvm", "python"):
        kind, said = got[f"unreadable/{engine}"]
        assert kind == "KafkaLogError" and "Permission denied" in said and "\n" not in said, (engine, said)
    assert got["offsets"] == 1
    assert got["active_after_stop"] == [False, False]
    for bad in ("INTERNAL_ERROR", "Resources may have leaked", "Traceback"):
        assert bad not in text, text[-3000:]


@pytest.mark.skipif(not os.environ.get("KFMT_ALL_CLUSTER_RECIPES"), reason="make test-cluster runs it")
def test_the_one_line_reaches_a_spark_submit_jars_session(tmp_path, inputs):
    import pyspark

    from kfmt.spark.jvm import jar

    (tmp_path / "s.py").write_text(SCRIPT)
    submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    cmd = [submit, "--master", "local[2]", "--jars", jar(), "--conf", f"spark.pyspark.python={sys.executable}",
           str(tmp_path / "s.py"), "errors", json.dumps(inputs)]  # fmt: skip
    _check(_run(cmd, tmp_path)[0])
