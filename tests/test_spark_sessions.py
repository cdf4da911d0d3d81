"""kfmt's one line reaches the PySpark user however the session was made (issue 46, item 1): as the README builds
it (``SparkSession.builder...getOrCreate()`` then ``kfmt.spark.register(spark)``, which adds the jar to a running
session), with ``spark.jars`` at start, and under ``spark-submit --jars``. A task's failure of a class only the jar
holds cannot be read by a driver whose class loader lacks the jar, and Spark then says only "UnknownReason"."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import kfmt

pytest.importorskip("pyspark")

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
import kfmt.spark

builder = SparkSession.builder.master("local[2]")
if sys.argv[1] == "jars":
    from kfmt.spark.jvm import jar
    builder = builder.config("spark.jars", jar())
spark = builder.getOrCreate()
kfmt.spark.register(spark)
out = {}
for name, path in json.loads(sys.argv[2]).items():
    try:
        out[name] = ["ok", spark.read.format("kafka-log").load(path).count()]
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
print("RESULT " + json.dumps(out))
spark.stop()
"""


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
    return {"damaged": str(part.parent), "tar": str(d / "logs.tar.gz")}


def _run(cmd, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    import json

    return json.loads(lines[-1][7:])


def _check(got):
    kind, text = got["damaged"]
    assert kind == "KafkaLogError", got["damaged"]
    assert text.startswith("kafka-log: corrupt batch in ") and "\n" not in text and "crc" in text, text
    kind, text = got["tar"]
    assert kind == "KafkaLogError" and "a tar archive, not a Kafka log file" in text and "\n" not in text, got["tar"]


@pytest.mark.parametrize("how", ["readme", "jars"])
def test_the_one_line_reaches_a_session_made_in_python(tmp_path, inputs, how):
    import json

    (tmp_path / "s.py").write_text(SCRIPT)
    _check(_run([sys.executable, str(tmp_path / "s.py"), how, json.dumps(inputs)], tmp_path))


def test_the_one_line_reaches_a_spark_submit_jars_session(tmp_path, inputs):
    import json

    import pyspark

    from kfmt.spark.jvm import jar

    (tmp_path / "s.py").write_text(SCRIPT)
    submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    cmd = [submit, "--master", "local[2]", "--jars", jar(), "--conf", f"spark.pyspark.python={sys.executable}",
           str(tmp_path / "s.py"), "submit", json.dumps(inputs)]  # fmt: skip
    _check(_run(cmd, tmp_path))


STOP = r"""
import sys, time
import kfmt, kfmt.spark
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").getOrCreate()
kfmt.spark.register(spark)
q = (spark.readStream.format("kafka-log").option("engine", sys.argv[1]).option("startingOffsets", "earliest")
     .load(sys.argv[2]).writeStream.format("memory").queryName("x").option("checkpointLocation", sys.argv[3])
     .trigger(processingTime="100 milliseconds").start())
q.processAllAvailable()
time.sleep(1.5)  # the query polls the log between triggers
spark.stop()
print("STOPPED", q.isActive)
"""


@pytest.mark.parametrize("engine", ["jvm", "python"])
def test_stopping_a_session_stops_its_kafka_log_streams_cleanly(tmp_path, inputs, engine):
    """spark.stop() with a kafka-log stream running: the query stops with its session, without Spark's
    "[INTERNAL_ERROR] No active or default Spark session found" or "Resources may have leaked" (issue 46, item 10)."""
    logs = tmp_path / "logs" / "t-0"
    logs.mkdir(parents=True)
    (logs / "00000000000000000000.log").write_bytes(kfmt.encode_batch([kfmt.Record(value=b"v", timestamp=1)]))
    (tmp_path / "s.py").write_text(STOP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    r = subprocess.run([sys.executable, str(tmp_path / "s.py"), engine, str(logs.parent), str(tmp_path / "ck")],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)  # fmt: skip
    text = r.stdout + r.stderr
    assert r.returncode == 0 and "STOPPED False" in r.stdout, text[-3000:]
    for bad in ("INTERNAL_ERROR", "Resources may have leaked", " ERROR ", "Traceback"):
        assert bad not in text, text[-3000:]
