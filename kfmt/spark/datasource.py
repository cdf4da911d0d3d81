"""The ``kafka-log`` data source: what ``spark.read``, ``spark.readStream``, ``df.write`` and ``writeStream``
get (:class:`KafkaLogDataSource`), and :func:`register`, which gives it the session's sizing."""

from __future__ import annotations

import logging
import os
import re
import sys

from pyspark.sql.datasource import DataSource

from kfmt.log.arrow import SCHEMA, SCHEMA_DECODED
from kfmt.spark.source import KafkaLogReader, KafkaLogWriter, _projection
from kfmt.spark.stream import KafkaLogStreamReader, KafkaLogStreamWriter


def register(spark) -> None:
    """Set up the ``kafka-log`` source for a Spark session.

    ``kafka-log`` is the source in kfmt's jar (:mod:`kfmt.spark.jvm`), put on the session's classpath here if it is
    not already (``ADD JAR``). This makes the driver's interpreter its planner (:mod:`kfmt.spark.planner`) and
    registers kfmt's Python data source as ``kafka-log-python``, which the JVM source hands what its engine does not
    read or write yet (stores only pyarrow.fs reaches, a ``backend`` choice). A failed read is raised as :class:`kfmt.spark.errors.KafkaLogError`, the
    line that says what, where and why (:mod:`kfmt.spark.errors`). Without the jar (no JDK when kfmt was set up, or Spark Connect) the
    Python data source is registered as ``kafka-log`` itself, and that is said once, as a warning.

    Python data sources are planned in a Python worker that has no session, so the session's sizing is
    taken here and travels with the source: ``min_partitions`` defaults to the session's default
    parallelism (``spark.default.parallelism``, else the cluster's executor cores), ``split_bytes`` to
    ``spark.sql.files.maxPartitionBytes`` and ``open_cost_bytes`` to ``spark.sql.files.openCostInBytes``.
    Register again after changing them (the JVM source reads them from the session each time).

    In local mode with no Python configured for the workers (``PYSPARK_PYTHON``, ``spark.pyspark.python``)
    the workers run the driver's own interpreter, the one that imported kfmt, instead of ``python3`` from
    ``PATH``."""
    from kfmt.spark.errors import install as one_line_errors
    from kfmt.spark.jvm import jar, on_classpath
    from kfmt.spark.planner import install

    _local_workers_on_this_python(spark)
    one_line_errors()
    _streams_stop_with_their_session(type(spark))
    name = PYTHON_NAME if on_classpath(spark) and _resolves(spark) and install(spark) else "kafka-log"
    if name == "kafka-log":
        why = (
            "its jar is not built (make setup, with a JDK)"
            if jar() is None
            else "this session has no JVM to load it into"
        )
        _say_once(f"kfmt: the JVM engine is not available ({why}): kafka-log reads through kfmt's Python data source")
    attrs = {"defaults": session_defaults(spark), "short_name": name}
    spark.dataSource.register(type("KafkaLogDataSource", (KafkaLogDataSource,), attrs))


PYTHON_NAME = "kafka-log-python"


def _streams_stop_with_their_session(cls) -> None:
    """``spark.stop()`` stops the session's streaming queries first, each as ``query.stop()`` does, so a running
    ``kafka-log`` stream ends cleanly: Spark would stop the context under it, and the query's next call would fail
    with "No active or default Spark session found" and "Resources may have leaked". Installed once per session
    class (idempotent)."""
    stop = cls.stop
    if getattr(stop, "_kfmt", False):
        return

    def stop_streams_first(self, *args, **kwargs):
        try:
            queries = list(self.streams.active)
        except Exception:  # a session already stopped, or one without streams (Spark Connect)
            queries = []
        for q in queries:
            try:
                q.stop()
            except Exception as e:  # a query that fails to stop must not keep the session from stopping
                logging.getLogger("kfmt.spark").warning("kfmt: stopping query %s with its session: %s", q.name, e)
        return stop(self, *args, **kwargs)

    stop_streams_first._kfmt = True  # type: ignore[attr-defined]
    stop_streams_first.__doc__ = stop.__doc__
    cls.stop = stop_streams_first


def _resolves(spark) -> bool:
    """Whether ``format("kafka-log")`` finds the jar's source in this session (Spark's own lookup)."""
    try:
        jvm = spark.sparkContext._jvm
        conf = spark._jsparkSession.sessionState().conf()
        found = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("kafka-log", conf)
        return found.getName() == "kfmt.jvm.KafkaLog"
    except Exception:  # Spark Connect, or no such source on the classpath
        return False


_SAID: set = set()


def _say_once(text: str) -> None:
    if text not in _SAID:
        _SAID.add(text)
        logging.getLogger("kfmt.spark").warning(text)


def _local_workers_on_this_python(spark) -> None:
    """Point a local session's Python workers at ``sys.executable`` unless a Python is configured."""
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: the server chooses its workers' Python
        return
    configured = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python", None)
    if not configured and str(sc.master).startswith("local") and sys.executable:
        sc.pythonExec = sys.executable


def session_defaults(spark) -> dict:
    """The reader's sizing defaults from a session (see :func:`register`); {} where a setting is unknown."""
    out: dict = {}
    try:
        out["min_partitions"] = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext: only the setting, if made
        par = spark.conf.get("spark.default.parallelism", None)
        if par:
            out["min_partitions"] = int(par)
    for name, conf in (("split_bytes", "spark.sql.files.maxPartitionBytes"),
                       ("open_cost_bytes", "spark.sql.files.openCostInBytes")):  # fmt: skip
        v = spark.conf.get(conf, None)
        if v:
            out[name] = _size(v)
    return out


def _size(v: str) -> int:
    """A Spark byte size ("134217728b", "128MB", "4m") in bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", str(v).lower())
    if not m:
        raise ValueError(f"kafka-log: {v!r} is not a size")
    return int(m[1]) * 1024 ** " kmgt".index(m[2] or " ")


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")`` / ``df.write.format("kafka-log")``."""

    #: sizing defaults taken from the session by :func:`register`
    defaults: dict = {}
    #: kafka-log-python behind the JVM source, kafka-log itself without it (:func:`register`)
    short_name = "kafka-log"

    @classmethod
    def name(cls):
        return cls.short_name

    def schema(self):
        decode = str(self.options.get("decode_payloads", "false")).strip().lower() == "true"
        return SCHEMA_DECODED if decode else SCHEMA

    def reader(self, schema):
        return KafkaLogReader(dict(self.options), _projection(schema), self.defaults)

    def writer(self, schema, overwrite):
        return KafkaLogWriter(dict(self.options), overwrite)

    def streamReader(self, schema):
        return KafkaLogStreamReader(dict(self.options), _projection(schema), self.defaults)

    def streamWriter(self, schema, overwrite):
        return KafkaLogStreamWriter(dict(self.options))
