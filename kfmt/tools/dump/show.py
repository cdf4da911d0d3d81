"""`kfmt dump`'s rendering: batches and records as text, JSON or a template, payloads and keys in the
chosen encoding, and the filters on offsets, time and count."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from kfmt.log.shapes import (  # noqa: F401  (what dump shows, one definition for dump and kfmt.protocol)
    TS_TYPES,
    _key_bytes,
    _size,
    batch_dict,
    control_text,
    delete_horizon,
    header_key,
    iso,
    payload,
    record_dict,
    record_lines,
    sequence_at,
    shown,
)


# ------------------------------------------------------------------ rendering
def decoded_text(d) -> str:
    """A decoded key or value in the table: ``OffsetCommitKey v1 {group: "g", topic: "t", partition: 0}``."""
    if d is None:
        return "null"
    return f"{d.type} v{d.version} {_compact(d.to_json()['data'])}"


def _compact(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_compact(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_compact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def template_line(template: str, seg, b, r, how: str) -> str:
    """A record through a kcat-style template: %t topic, %p partition, %o offset, %k key, %s value, %K key size,
    %S value size, %T timestamp (ms), %h headers (k=v,...), %%; backslash escapes \\n \\t."""
    parts = {"t": seg.topic, "p": str(seg.partition), "o": str(r.offset), "k": _bare(r.key, how),
             "s": _bare(r.value, how), "K": str(_size(r.key)), "S": str(_size(r.value)), "T": str(r.timestamp),
             "h": ",".join(f"{_bare(_key_bytes(k), how) if isinstance(k, str) else k}={_bare(v, how)}" for k, v in r.headers), "%": "%"}  # fmt: skip
    return fill_template(template, parts)


def fill_template(template: str, parts: dict[str, str]) -> str:
    """``template`` with each %-token replaced by its part (a token without one is left as written)."""
    return TEMPLATE_TOKEN.sub(lambda m: parts.get(m.group(1), m.group(0)), template)


def template_json_line(template: str, topic, partition, r: dict) -> str:
    """A record as ``--records --json`` shapes it (a capture's records) through the same template as
    :func:`template_line`: a null key or value is empty, as kcat prints it."""

    def bare(v) -> str:
        return "" if v is None else v if isinstance(v, str) else json.dumps(v)

    parts = {"t": str(topic), "p": str(partition), "o": str(r["offset"]), "k": bare(r["key"]), "s": bare(r["value"]),
             "K": str(r["key_size"]), "S": str(r["value_size"]), "T": str(r["timestamp"]),
             "h": ",".join(f"{bare(k)}={bare(v)}" for k, v in r["headers"]), "%": "%"}  # fmt: skip
    return fill_template(template, parts)


def _bare(b, how: str) -> str:
    """A key or value in a template or payload-only line: the text itself (no quotes), else as ``shown``."""
    if b is not None and how in ("utf8", "raw"):
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return "" if b is None else shown(b, how)


def template_text(text: str) -> str:
    """A template as typed on a command line: ``\\n`` and ``\\t`` become a newline and a tab."""
    return text.replace("\\n", "\n").replace("\\t", "\t")


TEMPLATE_TOKEN = re.compile(r"%(.)")


# ------------------------------------------------------------------ options
@dataclass
class Filters:
    offsets: tuple[int | None, int | None] = (None, None)
    times: tuple[int | None, int | None] = (None, None)
    topic: str | None = None
    partition: int | None = None
    max_bytes: int | None = None

    def wants_segment(self, seg) -> bool:
        return (self.topic is None or seg.topic == self.topic) and (
            self.partition is None or seg.partition == self.partition
        )

    def relative(self) -> bool:
        """Whether an offset bound counts from the end of each log (``--offsets -5:``, as kcat's ``-o -5``)."""
        return any(o is not None and o < 0 for o in self.offsets)

    def from_end(self, end: int) -> Filters:
        """These filters for a log whose next offset is ``end``: negative offset bounds become ``end + bound``."""
        lo, hi = (o if o is None or o >= 0 else max(0, end + o) for o in self.offsets)
        return replace(self, offsets=(lo, hi))

    def wants_batch(self, b) -> bool:
        lo, hi = self.offsets
        if (lo is not None and b.last_offset < lo) or (hi is not None and b.base_offset > hi):
            return False
        tlo, thi = self.times
        return not ((tlo is not None and b.max_timestamp < tlo) or (thi is not None and b.base_timestamp > thi))

    def wants_record(self, r) -> bool:
        lo, hi = self.offsets
        tlo, thi = self.times
        return (
            (lo is None or r.offset >= lo)
            and (hi is None or r.offset <= hi)
            and (tlo is None or r.timestamp >= tlo)
            and (thi is None or r.timestamp <= thi)
        )
