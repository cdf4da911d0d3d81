"""A Spark standalone cluster on 127.0.0.1 for the tests: a master and workers started with ``spark-class`` from
the installed PySpark, stopped (with their executors) when the block ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _wait(pred, seconds: float, what: str, logs: list[Path]) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if pred():
                return
        except OSError:
            pass
        time.sleep(0.3)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists())
    raise RuntimeError(f"the standalone cluster did not come up: {what}\n{tails}")


@contextlib.contextmanager
def standalone(workdir: Path, workers: int = 2, env: dict | None = None):
    """Yields the master URL ``spark://127.0.0.1:PORT`` once every worker has registered."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env = {**inherited, **(env or {}), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m"}
    workdir.mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []

    def start(name: str, args: list[str]) -> None:
        log = workdir / f"{name}.log"
        logs.append(log)
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([str(BIN / "spark-class"), *args], env=env, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip

    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui)])  # fmt: skip
        url = f"spark://127.0.0.1:{port}"
        _wait(lambda: socket.create_connection(("127.0.0.1", port), 0.5).close() is None, 120, "master", logs)
        for i in range(workers):
            start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                                 "--memory", "2g", "--webui-port", str(free_port()),
                                 "--work-dir", str(workdir / f"worker{i}")])  # fmt: skip

        def registered() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                body = r.read()
            try:
                state = json.loads(body)
            except ValueError:  # the master's UI answers (empty) before its state is ready: not yet
                return False
            return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE") == workers

        _wait(registered, 180, f"{workers} workers registered", logs)
        yield url
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
