"""The options of the Spark source and of read_arrow, one table (``READ_OPTIONS``: name, values, default), and
their parsing: one-line errors naming the option, Kafka's own option names where Spark's Kafka source has
them."""

from __future__ import annotations

import re

from kfmt.storage import OPTIONS as STORAGE_OPTIONS

READ_OPTIONS = {
    "path": "log directory, topic-partition folder or segment files (comma-separated)",
    "paths": "same as path",
    "verify_crc": "check CRCs (default true)",
    "include_control": "also return control records (default false)",
    "on_corrupt": "fail (default) | skip | quarantine",
    "engine": "auto (default: the JVM engine where it decodes the read) | jvm | python",
    "backend": "native | python | construct: the codec backend on the executors (default: the active one there)",
    "format": "read every entry as this format id (proposals that reuse a real magic are read only when named)",
    "include_suffixed": "also read folders Kafka marked -future, -delete or -stray (comma-separated suffixes; "
    "default none: Kafka serves none of them, and a -future folder is a second copy of a partition)",
    **STORAGE_OPTIONS,
    "isolation": "read_uncommitted (default) | read_committed: leave out aborted transactions",
    "kafka.isolation.level": "same as isolation (the name Spark's Kafka source uses)",
    "subscribe": "only these topics (comma-separated)",
    "subscribePattern": "only topics matching this regular expression",
    "assign": 'only these topic-partitions, JSON: {"topic": [0, 1]}',
    "startingOffsets": 'earliest (default) or JSON {"topic": {"0": 23}} (-2: earliest); inclusive',
    "endingOffsets": 'latest (default) or JSON {"topic": {"0": 50}} (-1: latest); exclusive',
    "startingTimestamp": "start every partition at its first record with a timestamp >= this (ms); before startingOffsets",
    "startingOffsetsByTimestamp": 'JSON {"topic": {"0": <ms>}}: per partition, as startingTimestamp',
    "startingOffsetsByTimestampStrategy": "error (default) | latest: when no record is that late",
    "endingTimestamp": "stop every partition before its first record with a timestamp >= this (ms); else latest",
    "endingOffsetsByTimestamp": 'JSON {"topic": {"0": <ms>}}: per partition, as endingTimestamp',
    "split_bytes": "largest input split in bytes (default spark.sql.files.maxPartitionBytes, 128 MiB)",
    "open_cost_bytes": "cost of opening a segment, in bytes (default spark.sql.files.openCostInBytes, 4 MiB)",
    "min_partitions": "fewest input partitions to aim for (default the session's default parallelism)",
    "minPartitions": "same as min_partitions (the name Spark's Kafka source uses)",
    "compressed_objects": "read (default) | fail: segment objects a remote storage plugin stored compressed whole "
    "(zstd, gzip, LZ4, framed snappy)",
    "read_timeout": "seconds one read from a store by URI may wait before the read fails naming the object and "
    "byte (default 120; the JVM engine bounds each Hadoop FileSystem read, the Python engine passes it to S3 as "
    "s3.request_timeout)",
    "includeHeaders": "true: headers NULL for records without headers, as Spark's Kafka source (default: empty lists)",
    "decode_payloads": "true: add key_decoded and value_decoded, the records of Kafka's own topics (__consumer_offsets, "
    "__cluster_metadata...) decoded by name as JSON text (NULL for other topics), and payload_error, why one did not "
    "decode (default false)",
}


#: options of Spark's Kafka source that cannot apply to files, and why (refused, so a job does not silently
#: mean something else)
OFFLINE_REFUSED = {
    "kafka.bootstrap.servers": "kafka-log reads segment files, not a broker",
    "kafka.group.id": "there is no consumer group when reading files",
    "groupIdPrefix": "there is no consumer group when reading files",
    "failOnDataLoss": "files cannot lose data under a reader: damage is handled by on_corrupt",
    "maxOffsetsPerTrigger": "it limits a streaming micro-batch: use it with spark.readStream",
    "minOffsetsPerTrigger": "not supported: micro-batches are not held back to gather offsets",
    "maxTriggerDelay": "not supported: micro-batches are not held back to gather offsets",
}


def check_options(options: dict, known: dict, what: str) -> None:
    """Refuse an option this source does not know (a typo must not be ignored silently), and say why the
    options of Spark's Kafka source that make no sense for files are refused."""
    refused = {k.lower(): why for k, why in OFFLINE_REFUSED.items()}
    bad = [
        k
        for k in options
        if k.lower() in refused or (k.lower().startswith("kafka.") and k.lower() != "kafka.isolation.level")
    ]
    if bad:
        reasons = "; ".join(
            f"{k}: {refused.get(k.lower(), 'a Kafka client setting, which does not apply to files')}"
            for k in sorted(bad)
        )
        raise ValueError(f"kafka-log: option(s) of Spark's Kafka source that do not apply here: {reasons}")
    lowered = {x.lower() for x in known}
    unknown = sorted(k for k in options if k.lower() not in lowered)
    if unknown:
        said = ", ".join(_with_closest(k, known) for k in unknown)
        raise ValueError(f"kafka-log: unknown {what} option(s) {said}; the {what} options are listed by "
                         "`kfmt spark options` and in the docs")  # fmt: skip


def _with_closest(name: str, known: dict) -> str:
    """An unknown option's name, with the known option it most looks like (a typo), if one does."""
    import difflib

    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f"{name} (did you mean {lowered[close[0]]}?)" if close else name


def _opt(options: dict, name: str):
    """Spark passes option names case-insensitively (often lower-cased): look a name up either way."""
    if name in options:
        return options[name]
    low = name.lower()
    for k, v in options.items():
        if k.lower() == low:
            return v
    return None


def _bool(v, default: bool) -> bool:
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def _storage(options: dict) -> dict:
    """The options that configure a store (``s3.endpoint``...), for :mod:`kfmt.storage`."""
    return {k: str(_opt(options, k)) for k in STORAGE_OPTIONS if _opt(options, k)}


def _int_opt(options, name, default) -> int:
    v = _opt(options, name)
    if v is None or v == "":
        return default
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise ValueError(f"kafka-log: option {name} must be an integer, not {v!r}") from None
    if n <= 0:
        raise ValueError(f"kafka-log: option {name} must be positive, not {n}")
    return n


def _csv(v):
    return None if v is None else {x.strip() for x in str(v).split(",") if x.strip()}


def _json_opt(options, name):
    import json

    v = _opt(options, name)
    if v is None:
        return None
    try:
        doc = json.loads(v)
        return {str(t): {int(p) for p in parts} for t, parts in doc.items()}
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f'kafka-log: option {name} must be JSON like {{"topic": [0, 1]}}, not {v!r}') from None


def _topic_ids_opt(options) -> dict:
    import json

    from kfmt.logdir.layout import TOPIC_ID

    v = _opt(options, "topic_ids")
    if v is None:
        return {}
    try:
        doc = json.loads(v)
        ids = {str(t): str(i) for t, i in doc.items()}
    except (ValueError, TypeError, AttributeError):
        ids = None
    if ids is None or not all(re.fullmatch(TOPIC_ID, i) for i in ids.values()):
        raise ValueError(f'kafka-log: option topic_ids must be JSON like {{"orders": "<22-character topic id>"}}, '
                         f"not {v!r}")  # fmt: skip
    return ids


def _offsets_opt(options, name, word, sentinel):
    import json

    v = _opt(options, name)
    if v is None or (word and str(v).strip().lower() == word):
        return None
    try:
        doc = json.loads(v)
        return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in doc.items()}
    except (ValueError, TypeError, AttributeError):
        what = (
            f'{word} or JSON like {{"topic": {{"0": 23}}}} ({sentinel}: {word})'
            if word
            else 'JSON like {"topic": {"0": <ms>}}'
        )
        raise ValueError(f"kafka-log: option {name} must be {what}, not {v!r}") from None


def _option_text(v) -> str:
    """An option's value as the Spark source takes it: text, JSON for dicts and lists."""
    import json

    return json.dumps(v) if isinstance(v, (dict, list)) else str(v).lower() if isinstance(v, bool) else str(v)
