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
