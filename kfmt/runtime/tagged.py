"""Kafka's tagged-field section (flexible versions), the part every backend writes the same way: the
fields a struct names by tag, and the tags it does not know (kept raw when decoding), merged and written
in increasing tag order, each as its tag, its size and its bytes (unsigned varints, then the bytes)."""

from __future__ import annotations

from kfmt.runtime.errors import InvalidValueError
from kfmt.runtime.varint import write_uvarint


def write_tagged(out: bytearray, known: list, unknown, path: str) -> None:
    """Write the section: ``known`` (tag, bytes) of the named fields not at their absent value, and the
    ``unknown`` (tag, bytes) pairs a decode kept (None: none). A kept tag that a named field also writes is
    refused; an unknown tag read twice is written twice, as Kafka keeps and writes each."""
    tags = list(known)
    if unknown:
        for item in unknown:
            pair = isinstance(item, (tuple, list)) and len(item) == 2
            if not (
                pair and type(item[0]) is int and 0 <= item[0] <= 0xFFFFFFFF and isinstance(item[1], (bytes, bytearray))
            ):
                raise InvalidValueError(f"an unknown tagged field is a (tag, bytes) pair, not {item!r}", path=path)
            tags.append((item[0], item[1]))
        named = {t for t, _ in known}
        for t, _ in tags[len(known) :]:
            if t in named:
                raise InvalidValueError(f"tag {t} is written twice (a named field and a kept unknown tag)", path=path)
        tags.sort(key=lambda t: t[0])  # stable: unknown tags read twice keep their order, as Kafka writes them
    write_uvarint(out, len(tags), path)
    for tag, data in tags:
        write_uvarint(out, tag, path)
        write_uvarint(out, len(data), path)
        out += data
