"""Topic and partition names by Kafka's own rules: what a writer may turn into a partition folder, and what a
folder's name maps back to.

Writers (the Spark ``kafka-log`` writer in both engines, its commit) name a folder ``<topic>-<partition>`` only for
a name Kafka itself would create (``org.apache.kafka.common.internals.Topic.validate``): 1-249 characters of ASCII
letters, digits, ``.``, ``_`` and ``-``, not ``.`` or ``..``; a partition an int32 from 0. Anything else is refused
before a byte is written, in one line naming the row, the value and the rule (:func:`row_problem`), so no name can
reach outside the table or come back as another topic or partition. The JVM engine follows this module
(``kfmt.jvm.Names``) and tests/test_writer_names.py holds the two to the same words on a table of hostile rows.

Readers map a folder's name back as Kafka's log loader does (``UnifiedLog.parseTopicPartitionName``: the text
after the last ``-`` is the partition, an int32; the topic before it is not empty): :func:`parse_folder`.
"""

from __future__ import annotations

import json
import re

MAX_TOPIC = 249
MAX_PARTITION = 2**31 - 1
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
TOPIC_RULE = "Kafka's topic names are 1-249 characters of [a-zA-Z0-9._-], not '.' or '..'"
PARTITION_RULE = f"Kafka's partitions are int32s from 0 to {MAX_PARTITION}"
PREFIX = "kafka-log writer: "

#: every word of a refusal, the JVM engine's too (written into its jar as kfmt/jvm/names.json): ``{at}`` is the
#: row ("the row at offset 7"), ``{value}`` the name as :func:`shown` shows it, ``{why}`` one of the reasons
TEXTS = {
    "need_columns": f"{PREFIX}rows need 'topic' and 'partition' columns",
    "topic_column": f"{PREFIX}the topic column must hold strings (Kafka's topic names)",
    "partition_column": f"{PREFIX}the partition column must hold integers ({PARTITION_RULE})",
    "at": PREFIX + "the row at offset {offset}",
    "no_topic": "{at} has no topic (null); " + TOPIC_RULE,
    "bad_topic": "{at} has topic {value}, which Kafka refuses: {why} (" + TOPIC_RULE + ")",
    "no_partition": "{at} has no partition (null); " + PARTITION_RULE,
    "bad_partition": "{at} has partition {value}, which Kafka refuses: " + PARTITION_RULE,
    "not_utf8": "it is not UTF-8 text",
    "empty": "it is empty",
    "dots": "it is '.' or '..'",
    "too_long": "it is {value} characters long, longer than " + str(MAX_TOPIC),
    "illegal": "it has a character outside [a-zA-Z0-9._-]",
}
NEED_COLUMNS, TOPIC_COLUMN, PARTITION_COLUMN = TEXTS["need_columns"], TEXTS["topic_column"], TEXTS["partition_column"]


def shown(value: str | bytes) -> str:
    """A name as the refusal shows it: JSON text (every character outside printable ASCII escaped, so the line
    stays one line), or ``x'..'`` hex for bytes that are not UTF-8."""
    if isinstance(value, bytes):
        try:
            return json.dumps(value.decode("utf-8"))
        except UnicodeDecodeError:
            return f"x'{value.hex().upper()}'"
    return json.dumps(value)


def topic_problem(topic: str | bytes) -> str | None:
    """Why Kafka refuses ``topic`` as a topic name (its checks, in its order), or None for a name it takes."""
    if isinstance(topic, bytes):
        try:
            topic = topic.decode("utf-8")
        except UnicodeDecodeError:
            return TEXTS["not_utf8"]
    if not topic:
        return TEXTS["empty"]
    if topic in (".", ".."):
        return TEXTS["dots"]
    units = len(topic.encode("utf-16-le", "surrogatepass")) // 2  # Java's String.length()
    if units > MAX_TOPIC:
        return TEXTS["too_long"].format(value=units)
    return None if _LEGAL.fullmatch(topic) else TEXTS["illegal"]


def row_problem(topic, partition, offset) -> str | None:
    """The one line refusing a row whose topic or partition cannot name a partition folder, or None."""
    at = TEXTS["at"].format(offset=offset)
    if topic is None:
        return TEXTS["no_topic"].format(at=at)
    why = topic_problem(topic)
    if why is not None:
        return TEXTS["bad_topic"].format(at=at, value=shown(topic), why=why)
    if partition is None:
        return TEXTS["no_partition"].format(at=at)
    if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition <= MAX_PARTITION:
        return TEXTS["bad_partition"].format(at=at, value=partition)
    return None


class NameRefused(ValueError):
    """A topic or partition Kafka would not take (the message is the one line)."""


def folder_name(topic, partition, offset="?") -> str:
    """``<topic>-<partition>``, the folder Kafka gives a partition; :class:`NameRefused` for a name it would not
    take (``offset``: the row it came from, for the message)."""
    why = row_problem(topic, partition, offset)
    if why is not None:
        raise NameRefused(why)
    t = topic.decode() if isinstance(topic, bytes) else topic
    return f"{t}-{partition}"


def parse_folder(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a partition folder's name as Kafka's log loader reads it (the text after the last
    ``-`` an int32 as Java's ``Integer.parseInt`` reads one, the topic before it not empty), or None for a name
    Kafka refuses to load ("is not in the form of topic-partition")."""
    topic, dash, part = name.rpartition("-")
    if not dash or not topic or not re.fullmatch(r"[+-]?[0-9]+", part):
        return None
    p = int(part)
    return (topic, p) if -(2**31) <= p <= MAX_PARTITION else None
