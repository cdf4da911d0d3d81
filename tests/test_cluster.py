"""The cluster recipes of docs/clusters.md on a real Spark standalone cluster: a master and two workers on 127.0.0.1
(``tests/sparkcluster.py``), jobs sent with ``spark-submit`` exactly as the docs write them, with a Python
that can import every dependency but not kfmt (so the job finds kfmt only where the recipe puts it). A
read-aggregate-write job must give the aggregates and the segment bytes that the same job gives in local
mode, and its input partitions must follow ``spark.default.parallelism``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kfmt.tools.synth import SynthConfig, synth

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="needs Java")

ROOT = Path(__file__).resolve().parent.parent
#: `make test` runs one recipe (kfmt installed on every node); `make test-cluster` runs them all (the zip and the
#: packed environment take about 4 minutes more)
ALL_RECIPES = pytest.mark.skipif(not os.environ.get("KFMT_ALL_CLUSTER_RECIPES"), reason="make test-cluster runs it")
SITE = sysconfig.get_paths()["purelib"]
TOPIC_IDS = {"orders": "A" * 22, "clicks": "B" * 22, "legacy": "C" * 22}

JOB = """\
import json, sys
from pyspark.sql import SparkSession, functions as F
import kfmt, kfmt.codec.formats, kfmt.spark
spark = SparkSession.builder.getOrCreate()
kfmt.spark.register(spark)
src, out, report, ids = sys.argv[1:5]
df = spark.read.format("kafka-log").load(src)
agg = (df.groupBy("topic", "partition")
       .agg(F.count("*").alias("records"), F.sum(F.length("value")).alias("value_bytes"),
            F.min("offset").alias("first"), F.max("offset").alias("last"), F.sum(F.crc32("value")).alias("crc"))
       .orderBy("topic", "partition"))
rows = [r.asDict() for r in agg.collect()]
kfmt.spark.save(df, out, codec="zstd", segment_bytes=64 * 1024, topic_ids=ids)
where = (spark.sparkContext.parallelize(range(8), 8)
         .map(lambda _: (kfmt.__file__, kfmt.codec.formats.available_backends()[0])).distinct().collect())
json.dump({"aggregates": rows, "input_partitions": df.rdd.getNumPartitions(), "executors": sorted(where),
           "driver": kfmt.__file__, "master": spark.sparkContext.master}, open(report, "w"))
spark.stop()
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    synth(d, SynthConfig(seed=11, topics=("orders", "clicks"), partitions=2, records=400, segment_bytes=16 * 1024))
    return d


def _python_without_kfmt(where: Path) -> Path:
    """An interpreter that sees the installed dependencies but no kfmt (site's .pth files, which would add
    this checkout, are not processed)."""
    python = where / "python-without-kfmt"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{SITE}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    control = subprocess.run([str(python), "-c", "import kfmt"], cwd=where, capture_output=True, text=True)
    assert control.returncode != 0 and "No module named 'kfmt'" in control.stderr
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from sparkcluster import standalone

    work = tmp_path_factory.mktemp("cluster")
    python = _python_without_kfmt(work)
    with standalone(work, workers=2, env={"PYSPARK_PYTHON": str(python)}) as url:
        yield url, python


def _submit(argv: list[str], cwd: Path, env: dict) -> None:
    assert argv[0] == "spark-submit"
    argv = [str(Path(sys.executable).parent / "spark-submit"), *argv[1:]]
    # as a user's shell would have it: none of the PYSPARK_* settings this test process may carry
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env = {**clean, "SPARK_LOCAL_IP": "127.0.0.1", **env}
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]


def _job_args(corpus: Path, out: Path, report: Path) -> list[str]:
    return [str(corpus), str(out), str(report), json.dumps(TOPIC_IDS)]


def _files(d: Path) -> dict:
    return {
        str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != "_KFMT_SUCCESS"
    }


def _local_run(tmp_path: Path, corpus: Path, python: Path, ship: list[str]) -> tuple[dict, dict]:
    """The same job in local mode, with as many cores as the cluster (2) and the same options."""
    out, report = tmp_path / "local-out", tmp_path / "local.json"
    _submit(["spark-submit", "--master", "local[2]", *ship, "my_job.py",
             *_job_args(corpus, out, report)], tmp_path, {"PYSPARK_PYTHON": str(python)})  # fmt: skip
    return json.loads(report.read_text()), _files(out)


@pytest.fixture(scope="module")
def local_reference(corpus, tmp_path_factory) -> tuple[dict, dict]:
    """The job in local mode on the driver's interpreter, nothing shipped, 2 cores as the cluster: what the
    recipes that run with the cluster's default parallelism must give."""
    d = tmp_path_factory.mktemp("local")
    (d / "my_job.py").write_text(JOB)
    return _local_run(d, corpus, Path(sys.executable), [])


def _check(report: dict, files: dict, local: tuple[dict, dict], corpus: Path, parallelism: int) -> None:
    import kfmt
    from kfmt.logdir.layout import find_segments

    want: dict = {}
    for seg in find_segments(corpus):
        for b in kfmt.read_batches(seg.path):
            if not b.is_control:
                want[(seg.topic, seg.partition)] = want.get((seg.topic, seg.partition), 0) + len(b.records)
    assert {(r["topic"], r["partition"]): r["records"] for r in report["aggregates"]} == want
    assert report["aggregates"] == local[0]["aggregates"]
    assert files == local[1] and any(k.endswith(".log") for k in files)  # the same segments, byte for byte
    assert report["master"].startswith("spark://127.0.0.1:")
    assert report["input_partitions"] == local[0]["input_partitions"] >= parallelism


@ALL_RECIPES
def test_zip_recipe_on_a_standalone_cluster(cluster, corpus, tmp_path):
    from test_readme import _block, _commands

    url, python = cluster
    zip_line, submit = _commands(_block("bash", "mkdir -p dist"))
    r = subprocess.run(zip_line, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (tmp_path / "dist").mkdir()
    shutil.copy(ROOT / "dist" / "kfmt.zip", tmp_path / "dist" / "kfmt.zip")
    (tmp_path / "my_job.py").write_text(JOB)
    out, report = tmp_path / "out", tmp_path / "cluster.json"
    argv = shlex.split(submit.replace("spark://host:7077", url)) + _job_args(corpus, out, report)
    _submit(argv, tmp_path, {"PYSPARK_PYTHON": str(python)})
    got = json.loads(report.read_text())
    local = _local_run(
        tmp_path, corpus, python, ["--py-files", "dist/kfmt.zip", "--conf", "spark.default.parallelism=6"]
    )
    _check(got, _files(out), local, corpus, parallelism=6)
    assert "kfmt.zip" in got["driver"]
    assert got["executors"] and all("kfmt.zip" in f and backend == "python" for f, backend in got["executors"])


@ALL_RECIPES
def test_packed_env_recipe_on_a_standalone_cluster(cluster, corpus, tmp_path, local_reference):
    """The packed environment: an interpreter under ./environment/bin/python whose kfmt (with the native
    extensions: a real folder, not a zip) exists only inside the archive; client mode, the archive
    unpacked beside the submit as the README says."""
    from test_readme import _block, _commands

    url, python = cluster
    env = tmp_path / "packed-env"
    (env / "bin").mkdir(parents=True)
    for pkg in ("kfmt", "generated"):
        shutil.copytree(ROOT / pkg, env / "lib" / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (env / "bin" / "python").write_text(
        '#!/bin/sh\nHERE=$(cd "$(dirname "$0")/.." && pwd)\n'
        f'PYTHONPATH="$HERE/lib:{SITE}" exec {sys.executable} -S "$@"\n'
    )
    (env / "bin" / "python").chmod(0o755)
    (tmp_path / "dist").mkdir()
    (tmp_path / "my_job.py").write_text(JOB)
    out, report = tmp_path / "out", tmp_path / "cluster.json"
    lines = _commands(_block("bash", "tar -czf dist/env"))
    assert len(lines) == 3
    for line in lines[:2]:
        r = subprocess.run(line.replace("/path/to/packed-env", str(env)), shell=True, cwd=tmp_path,
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "environment" / "bin" / "python").is_file()
    assign, *argv = shlex.split(lines[2].replace("spark://host:7077", url))
    name, value = assign.split("=", 1)
    _submit(argv + _job_args(corpus, out, report), tmp_path, {name: value})
    got = json.loads(report.read_text())
    _check(got, _files(out), local_reference, corpus, parallelism=2)  # the two workers' cores
    assert got["driver"].startswith(str(tmp_path / "environment"))
    # the executors run the archive Spark shipped and unpacked in their work folders, native backend included
    assert got["executors"] and all("/environment/lib/kfmt/" in f and "packed-env" not in f and b == "native"
                                    for f, b in got["executors"])  # fmt: skip


def _reference(corpus: Path) -> list[dict]:
    """The job's aggregates computed without Spark (kfmt.read_arrow), for the recipe the suite runs: the local-mode
    run the other recipes are compared with costs a second spark-submit."""
    import zlib

    import kfmt

    agg: dict = {}
    for r in kfmt.read_arrow(str(corpus), columns=["topic", "partition", "offset", "value"]).to_pylist():
        a = agg.setdefault((r["topic"], r["partition"]), {"records": 0, "value_bytes": 0, "offsets": [], "crc": 0})
        a["records"] += 1
        a["value_bytes"] += len(r["value"] or b"")
        a["offsets"].append(r["offset"])
        a["crc"] += zlib.crc32(r["value"]) if r["value"] is not None else 0
    return [{"topic": t, "partition": p, "records": a["records"], "value_bytes": a["value_bytes"],
             "first": min(a["offsets"]), "last": max(a["offsets"]), "crc": a["crc"]}
            for (t, p), a in sorted(agg.items())]  # fmt: skip


def test_installed_on_every_node(cluster, corpus, tmp_path):
    """The first route: kfmt installed where the Python workers run (here this checkout's interpreter, in
    which kfmt is installed with its native extensions): nothing shipped, the native backend on the
    executors; the aggregates are the corpus's, and what the job wrote holds every record of it (`make
    test-cluster` compares all three recipes with a local-mode run, byte for byte)."""
    import kfmt

    url, python = cluster
    (tmp_path / "my_job.py").write_text(JOB)
    out, report = tmp_path / "out", tmp_path / "cluster.json"
    env = {"PYSPARK_PYTHON": sys.executable}
    _submit(["spark-submit", "--master", url, "--conf", f"spark.pyspark.python={sys.executable}", "my_job.py",
             *_job_args(corpus, out, report)], tmp_path, env)  # fmt: skip
    got = json.loads(report.read_text())
    assert got["aggregates"] == _reference(corpus)
    assert got["master"].startswith("spark://127.0.0.1:") and got["input_partitions"] >= 2
    cols = ["topic", "partition", "offset", "key", "value"]

    def rows(p):
        return sorted(map(repr, kfmt.read_arrow(str(p), columns=cols).to_pylist()))

    assert rows(out) == rows(corpus)
    assert got["executors"] and all(b == "native" and "/kfmt/" in f for f, b in got["executors"])
