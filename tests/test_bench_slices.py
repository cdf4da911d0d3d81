"""Short slices of the long benchmark campaigns, so `make bench-*` keeps working (figures are never asserted:
they are printed by the make targets; here only that every tool reads every record)."""

import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def test_bench_scaling_slice():
    """Each tool reads each segment whole (the script refuses a record count that differs from what it wrote)
    and the table has a row per tool and a column per size; a capture likewise."""
    out = subprocess.run([sys.executable, os.path.join(BENCH, "bench_scaling.py"), "--sizes", "10K,100K", "--runs", "1",
                          "--damaged", "2M", "--captures", "1M"], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert any(line.startswith("| tool | 10K (") and "| 100K (" in line for line in lines)
    for tool in ("read_batches", "read_arrow", "read_arrow_batches", "dump --summary"):
        row = next(line for line in lines if line.startswith(f"| `{tool}` |"))
        assert row.count("ns/rec") == 2
    # the two damaged segments (a zero tail, a size field claiming 0x7FFF0000), read by each tool as it must
    assert any(line.startswith("| tool | zero tail | size 0x7FFF0000 |") for line in lines), out.stdout
    for tool in ("read_batches skip", "read_arrow skip", "dump --summary", "read_batches fail", "read_arrow fail"):
        assert sum(line.startswith(f"| `{tool}` |") and line.count(" MB") == 2 for line in lines) >= 1, tool
    # a capture read whole by kfmt dump --summary and --json (each exits 0, or the script stops)
    assert any(line.startswith("| tool | 1M (") for line in lines), out.stdout
    for tool in ("capture dump --summary", "capture dump --json"):
        assert sum(line.startswith(f"| `{tool}` |") and line.count(" MB") == 1 for line in lines) == 1, tool


@pytest.mark.skipif(bool(os.environ.get("KFMT_BACKEND") or os.environ.get("KFMT_DISABLE_NATIVE")),
                    reason="a Spark benchmark: run once, with the installation's default backend")  # fmt: skip
def test_bench_spark_slice(spark, capsys):
    """`make bench-spark`'s comparison with Parquet on a small corpus: the JVM engine where it is built (plain,
    with a schema, read_committed, on_corrupt=skip on a damaged copy) gives the count and value bytes of Parquet
    files the Python engine wrote (the script exits 1 and warns when results differ; the slice leaves out the
    timed Python-engine and floor queries). Run in the suite's Spark session, which the script leaves running."""
    sys.path.insert(0, BENCH)
    try:
        import bench_spark
    finally:
        sys.path.remove(BENCH)
    rc = bench_spark.main(["--records", "300", "--runs", "1", "--no-s3", "--only-parquet", "--rounds", "1", "--smoke"])
    out = capsys.readouterr()
    assert rc == 0, (out.out + out.err)[-3000:]
    assert spark.range(2).count() == 2  # the suite's session still runs
    assert "WARNING" not in out.out and "| Spark's Parquet reader |" in out.out
    from kfmt.spark import jvm

    assert ("| kafka-log, JVM engine" in out.out) == (jvm.jar() is not None)
    assert ("| format('kafka-log'), on_corrupt=skip, damaged corpus |" in out.out) == (jvm.jar() is not None)


def test_bench_capture_slice():
    """`make bench`'s capture comparison on a 1 MB capture: every tool reads it (the script stops on an exit other
    than 0) and the table has a row each, kfmt's two and, where tshark is installed, tshark's two."""
    import shutil

    out = subprocess.run([sys.executable, os.path.join(BENCH, "bench_capture.py"), "--mb", "1"], capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("capture: 1.") and " messages (Produce v7 and Fetch v11" in out.stdout
    tools = ["kfmt dump --json", "kfmt dump --summary"]
    tools += ["tshark -T json", "tshark -q -z io,phs"] if shutil.which("tshark") else []
    for tool in tools:
        assert any(line.startswith(f"| {tool} | ") and line.count("|") == 5 for line in out.stdout.splitlines()), tool
