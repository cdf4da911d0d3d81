"""The ``kafka-log`` data source: what ``spark.read``, ``spark.readStream``, ``df.write`` and ``writeStream``
get (:class:`KafkaLogDataSource`), and :func:`register`, which gives it the session's sizing."""

from __future__ import annotations

import os
import re
import sys

from pyspark.sql.datasource import DataSource

from kfmt.log.arrow import SCHEMA, SCHEMA_DECODED
from kfmt.spark.source import KafkaLogReader, KafkaLogWriter, _projection
from kfmt.spark.stream import KafkaLogStreamReader, KafkaLogStreamWriter


def register(spark) -> None:
    """Register the ``kafka-log`` data source with a Spark session.

    Python data sources are planned in a Python worker that has no session, so the session's sizing is
    taken here and travels with the source: ``min_partitions`` defaults to the session's default
    parallelism (``spark.default.parallelism``, else the cluster's executor cores), ``split_bytes`` to
    ``spark.sql.files.maxPartitionBytes`` and ``open_cost_bytes`` to ``spark.sql.files.openCostInBytes``.
    Register again after changing them.

    In local mode with no Python configured for the workers (``PYSPARK_PYTHON``, ``spark.pyspark.python``)
    the workers run the driver's own interpreter, the one that imported kfmt, instead of ``python3`` from
    ``PATH``."""
    _local_workers_on_this_python(spark)
    spark.dataSource.register(type("KafkaLogDataSource", (KafkaLogDataSource,), {"defaults": session_defaults(spark)}))


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

    @classmethod
    def name(cls):
        return "kafka-log"

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
