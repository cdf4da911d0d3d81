"""Kafka log segments as Spark DataFrames: the ``kafka-log`` source (Spark 4).

    import kfmt.spark
    kfmt.spark.register(spark)
    df = spark.read.format("kafka-log").load("/data/kafka-logs")       # decoded in the JVM (kfmt.spark.jvm)
    df = kfmt.spark.read(spark, "/data/kafka-logs", engine="jvm")    # the same source, options as keywords

The JVM source asks kfmt's planner (:mod:`kfmt.spark.planner`) on the driver and decodes in the executors
(:mod:`kfmt.spark.jvm`); kfmt's Python data source (:mod:`kfmt.spark.source`) reads what it does not decode
yet, and writes. Structured Streaming (:mod:`kfmt.spark.stream`: ``readStream`` tails log directories, cut
into micro-batches there for both engines; ``writeStream`` appends segments), the writer's row encoding and
commit (:mod:`kfmt.spark.writer`) and the jobs behind ``kfmt spark`` (:mod:`kfmt.spark.jobs`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# what the package face offers, and the module each lives in: imported when first asked for, so that a tool
# importing kfmt.spark.jobs or kfmt.spark.planner does not start pyspark (0.2 s per `kfmt` run)
_HOMES = {
    "KafkaLogDataSource": "kfmt.spark.datasource",
    "register": "kfmt.spark.datasource",
    "session_defaults": "kfmt.spark.datasource",
    "read": "kfmt.spark.jvm",
    **dict.fromkeys(
        ("KafkaLogReader", "KafkaLogWriter", "SegmentGroup", "SegmentSlice", "arrow_schema", "read_slice", "save"),
        "kfmt.spark.source",
    ),
}

if TYPE_CHECKING:
    from kfmt.spark.datasource import KafkaLogDataSource, register, session_defaults
    from kfmt.spark.jvm import read
    from kfmt.spark.source import (
        KafkaLogReader,
        KafkaLogWriter,
        SegmentGroup,
        SegmentSlice,
        arrow_schema,
        read_slice,
        save,
    )


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kfmt.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "KafkaLogDataSource",
    "KafkaLogReader",
    "KafkaLogWriter",
    "SegmentGroup",
    "SegmentSlice",
    "arrow_schema",
    "read",
    "read_slice",
    "register",
    "save",
    "session_defaults",
]
