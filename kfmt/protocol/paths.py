"""A field path as the generated codecs give it (``metadata_response_flexible.brokers[0].host``; the Construct
backend's ``message.brokers.host``) said in Kafka's names (``Brokers[0].Host``), as Kafka's JSON and messages name
the fields: one translation for every error a protocol reader or writer raises."""

from __future__ import annotations

import importlib
import re

_SEGMENT = re.compile(r"^(\w+)((?:\[\d+\])*)(.*)$")


def kafka_path(package: str, schema: str, class_name: str, path: str | None) -> str | None:
    """``path`` (under the message of generated class ``class_name`` of ``schema``) in Kafka's field names; the
    part that names no field of the message (a length, a decompressed stream) is kept as it is."""
    if not path:
        return path
    model = importlib.import_module(f"{package}.{schema}.model")
    cls = getattr(model, class_name, None)
    parts = path.split(".")
    if (
        parts
        and cls is not None
        and (parts[0] == "message" or parts[0].endswith(("_by_version", struct_of(class_name))))
    ):
        parts = parts[1:]  # the version switch's own level, or the message's struct
    out = []
    while parts and cls is not None:
        m = _SEGMENT.match(parts[0])
        fields = {name: (kafka, kind) for name, kafka, kind, _ in getattr(cls, "_kafka_fields", ())}
        if m is None or m.group(1) not in fields:
            break
        kafka, kind = fields[m.group(1)]
        out.append(kafka + m.group(2) + m.group(3))
        parts = parts[1:]
        cls = getattr(model, kind.split(":", 1)[1], None) if kind.startswith(("struct:", "struct[]:")) else None
    return ".".join(out + parts)


def struct_of(class_name: str) -> str:
    """The struct a generated value class is made from (``MetadataRequestTopicV13`` -> ``metadata_request_topic_v13``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()
