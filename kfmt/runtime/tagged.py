"""Kafka's tagged-field section (flexible versions), the part every backend writes the same way: the
fields a struct names by tag, and the tags it does not know (kept raw when decoding), merged and written
in increasing tag order, each as its tag, its size and its bytes (unsigned varints, then the bytes).

Kafka's readers also take a section it would not write: tags out of order, a tag twice (the last one
counts), a named field written at its default. Such a section is kept as read (:class:`TagSection`) and
written back as it was while the values it decodes to are unchanged, so a round trip is byte-exact for
every payload Kafka reads; once a value changes, the section is written in Kafka's own form."""

from __future__ import annotations

from kfmt.runtime.errors import InvalidValueError
from kfmt.runtime.varint import read_uvarint32, write_uvarint


class TagSection(list):
    """The unknown tags of a section Kafka would not have written so, as the ``(tag, bytes)`` list a plain
    section gives (equal to it), with the section's bytes as read (``raw``), the named tags it may hold
    (``named``) and those of them it held at their default value (``at_default``)."""

    def __init__(self, unknown, raw: bytes, named: frozenset, at_default: frozenset):
        super().__init__(unknown)
        self.raw, self.named, self.at_default = raw, named, at_default

    def __reduce__(self):
        return TagSection, (list(self), self.raw, self.named, self.at_default)

    def entries(self) -> list[tuple[int, bytes]]:
        """The section's (tag, bytes) pairs in the order read."""
        raw = self.raw
        n, pos = read_uvarint32(raw, 0, len(raw), "tagged_fields")
        out = []
        for _ in range(n):
            tag, pos = read_uvarint32(raw, pos, len(raw), "tagged_fields")
            size, pos = read_uvarint32(raw, pos, len(raw), "tagged_fields")
            out.append((tag, raw[pos : pos + size]))
            pos += size
        return out

    def unchanged(self, known: list, valid) -> bool:
        """Whether the section as read still decodes to these values: the same unknown tags in the same
        order; each named field written now (``known``: tag, bytes) held the same bytes last; each one held
        and not written now held its default and is still valid (``valid``: the tags valid now, None: all)."""
        entries = self.entries()
        try:
            kept = [(t, bytes(b)) for t, b in self]
        except (TypeError, ValueError):
            return False  # no longer (tag, bytes) pairs: written the usual way, which says what is wrong
        if kept != [(t, b) for t, b in entries if t not in self.named]:
            return False
        last = {t: b for t, b in entries if t in self.named}
        now = {t: bytes(b) for t, b in known}
        if any(last.get(t) != b for t, b in now.items()):
            return False
        return all(t in now or (t in self.at_default and (valid is None or t in valid)) for t in last)


def keep_tags(unknown: list, raw: bytes, named: tuple) -> list:
    """A decoder's unknown tags, kept with the section as read (:class:`TagSection`) when Kafka would not have
    written it so; ``named`` holds (tag, at its default) per named field, where "at its default" is a bool
    (of the value decoded last) or the bytes the field is left out at (compared with those read last)."""
    section = TagSection(unknown, bytes(raw), frozenset(t for t, _ in named), frozenset())
    entries = section.entries()
    last = {t: b for t, b in entries if t in section.named}
    section.at_default = frozenset(t for t, d in named if t in last and (last[t] == d if isinstance(d, bytes) else d))
    ordered = all(a[0] < b[0] for a, b in zip(entries, entries[1:]))
    return section if section.at_default or not ordered else list(unknown)


def _pairs(unknown, path: str) -> list:
    pairs = []
    for item in unknown:
        pair = isinstance(item, (tuple, list)) and len(item) == 2
        if not (
            pair and type(item[0]) is int and 0 <= item[0] <= 0xFFFFFFFF and isinstance(item[1], (bytes, bytearray))
        ):
            raise InvalidValueError(f"an unknown tagged field is a (tag, bytes) pair, not {item!r}", path=path)
        pairs.append((item[0], item[1]))
    return pairs


def write_tagged(out: bytearray, known: list, unknown, path: str, valid=None) -> None:
    """Write the section: ``known`` (tag, bytes) of the named fields not at their absent value, and the
    ``unknown`` (tag, bytes) pairs a decode kept (None: none). A kept tag that a named field also writes is
    refused; an unknown tag read twice is written twice, as Kafka keeps and writes each. A section kept as
    read (:class:`TagSection`) is written as read while unchanged (``valid``: the named tags valid now)."""
    if type(unknown) is TagSection and unknown.unchanged(known, valid):
        out += unknown.raw
        return
    tags = list(known)
    if unknown:
        tags += _pairs(unknown, path)
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
