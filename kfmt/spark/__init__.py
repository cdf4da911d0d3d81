"""Kafka log segments as Spark DataFrames (PySpark's Python Data Source API, Spark 4).

    import kfmt.spark
    kfmt.spark.register(spark)
    df = spark.read.format("kafka-log").load("/data/kafka-logs")
    df = kfmt.spark.read(spark, "/data/kafka-logs", engine="jvm")   # decoded on the JVM (kfmt.spark.jvm)

The source and its planning (:mod:`kfmt.spark.source`), Structured Streaming (:mod:`kfmt.spark.stream`:
``readStream`` tails log directories, ``writeStream`` appends segments), the writer's row encoding and
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
