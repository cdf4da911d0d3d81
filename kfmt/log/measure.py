"""Measurement: the levels of a format, bytes by field (traced through the Construct backend), and
logs re-encoded into other formats with their totals; shared by ``kfmt diff``, ``kfmt explain`` and the
Spark jobs."""

from __future__ import annotations

import bisect
import importlib
import io
from collections import Counter
from contextlib import contextmanager
from functools import lru_cache

import construct as c

from kfmt.codec.encode import encode_batch
from kfmt.codec.formats import get_format
from kfmt.log.batches import scan
from kfmt.log.scanner import iter_entries
from kfmt.runtime.constructs import CrcGuarded, KafkaCompressed, KBytes, Region, SubStream
from kfmt.runtime.errors import CodecError
from kfmt.runtime.model import Record
from kfmt.runtime.options import DEFAULT_OPTIONS
from kfmt.runtime.tables import table  # noqa: F401 - kfmt.log.measure's own name (its callers')

LEVELS = ("batch", "record", "header")


def _mod(f):
    return get_format(f) if isinstance(f, str) else f


def fid(mod) -> str:
    return mod.FORMAT_ID


def levels(mod) -> dict[str, str | None]:
    """The struct at each level: batch (or message set), record (or message), header (the generated
    package's ``LEVELS``)."""
    return dict(mod.LEVELS)


def _header_key(mod, i: int):
    lv = levels(mod)
    if not lv["header"]:
        return None
    key = next(f for f in mod.FIELDS[lv["header"]] if f.name == "key")
    return i if key.kind in ("int", "varint") else f"h{i}"


TOTALS = ("bytes", "records", "payload", "skipped", "skipped_records", "headers_dropped")


def corpus_sizes(formats, paths, codecs=("none", "zstd"), account: dict | None = None) -> dict:
    """Re-encode every batch of the logs under ``paths`` into each format and codec.

    Returns ``{format: {codec: {"bytes", "records", "payload", "bytes_per_record", "skipped",
    "skipped_records", "headers_dropped", "fields": {...}}}}``; ``fields`` attributes the bytes of the
    uncompressed encoding to schema fields (see kfmt.tools.explain); ``skipped``/``skipped_records`` count the
    batches and records a format or codec cannot carry, ``headers_dropped`` the headers a format without
    headers leaves out.  ``account``, if given, is filled with what was read: ``records``, ``batches``,
    ``control_records`` (markers are not data: never re-encoded), ``corrupt_batches`` and
    ``unread_bytes``, so that for every format and codec
    ``records + skipped_records + control_records == account["records"]``.
    """
    from kfmt.logdir.layout import find_segments

    mods = [_mod(f) for f in formats]
    out = new_totals(mods, codecs)
    acct = account if account is not None else {}
    for k in ("records", "batches", "control_records", "corrupt_batches", "unread_bytes"):
        acct.setdefault(k, 0)
    for seg in find_segments(paths):
        for pos, end, batch in scan(seg.path, skip_corrupt=True):
            if isinstance(batch, CodecError):
                acct["unread_bytes"] += end - pos
                acct["corrupt_batches"] += getattr(batch, "unread", None) is None
                continue
            acct["batches"] += 1
            acct["records"] += len(batch.records)
            if batch.is_control:
                acct["control_records"] += len(batch.records)
                continue
            if not batch.records:
                continue
            recs = [Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp) for r in batch.records]
            add_batch(out, mods, codecs, recs)
    return finish_totals(out)


def new_totals(mods, codecs) -> dict:
    return {fid(m): {c: dict.fromkeys(TOTALS, 0) | {"fields": {}} for c in codecs} for m in mods}


def add_batch(out: dict, mods, codecs, recs, fields=None) -> None:
    """Re-encode one source batch into every format and codec and add it to the totals (shared with Spark).

    ``fields``: the format ids whose uncompressed bytes are attributed to schema fields (default every format;
    the attribution parses each entry with the Construct backend, by far the costliest step)."""
    payload = sum(len(r.key or b"") + len(r.value or b"") for r in recs)
    headers = sum(len(r.headers) for r in recs)
    for m in mods:
        dropped = 0 if levels(m)["header"] else headers
        for codec in codecs:
            acc = out[fid(m)][codec]
            try:
                blob = encode_batch(_fit(m, recs), format=m, codec=codec)
            except CodecError:
                acc["skipped"] += 1  # a codec the format cannot carry (zstd below magic 2 ...)
                acc["skipped_records"] += len(recs)
                continue
            acc["headers_dropped"] += dropped
            acc["bytes"] += len(blob)
            acc["records"] += len(recs)
            acc["payload"] += payload
            if codec == "none" and (fields is None or fid(m) in fields):
                for k, v in attribute(m, blob).items():
                    acc["fields"][k] = acc["fields"].get(k, 0) + v


def overhead_per_record(acc: dict) -> float | None:
    """Bytes per record beyond the key and value bytes of one format and codec's totals (None: it carried no
    record, as a format that cannot carry that codec)."""
    return (acc["bytes"] - acc["payload"]) / acc["records"] if acc["records"] else None


def finish_totals(out: dict) -> dict:
    for per in out.values():
        for acc in per.values():
            acc["bytes_per_record"] = acc["bytes"] / acc["records"] if acc["records"] else None
    return out


def _fit(mod, recs):
    """Records as the format can carry them: header keys converted for int-keyed formats, dropped if none."""
    if not levels(mod)["header"]:
        return [Record(key=r.key, value=r.value, timestamp=r.timestamp) for r in recs]
    if _header_key(mod, 0) == 0:
        return [Record(key=r.key, value=r.value, timestamp=r.timestamp,
                            headers=[(i, v) for i, (_, v) in enumerate(r.headers)]) for r in recs]  # fmt: skip
    return recs


@contextmanager
def _tracing(events):
    orig = c.Construct._parsereport

    def traced(self, stream, context, path):
        start = stream.tell()
        obj = orig(self, stream, context, path)
        if isinstance(self, c.Renamed) and self.name:
            events.append((path, self.name, self.subcon, stream, start, stream.tell(), obj))
        elif isinstance(self, (Region, CrcGuarded)):
            name = self.lname if isinstance(self, Region) else self.cname
            events.append((path, name, self, stream, start, stream.tell(), obj))
        return obj

    c.Construct._parsereport = traced
    try:
        yield
    finally:
        c.Construct._parsereport = orig


def _absolute(stream, offset):
    """Offset in the outermost stream, or None inside a decompressed stream."""
    while isinstance(stream, SubStream):
        if stream.compressed:
            return None
        offset += stream.base
        stream = stream.parent
    return offset


@lru_cache(maxsize=4096)
def _label(path: str, name: str) -> str:
    parts = [p.strip() for p in path.split("->")[1:]]
    parts = [p for p in parts if p and not p.startswith(("_g", "[", "(")) and not p.isdigit()]
    if not parts or parts[-1] != name:
        parts.append(name)
    dedup = [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]
    return ".".join(dedup)


def byte_values(mod, data: bytes, **params) -> list[tuple[str | None, str]]:
    """``(field, value)`` for each byte of one entry (``data``), innermost field winning as in :func:`byte_labels`:
    the value the Construct backend decoded for that field, said short (an integer; a length or count for the prefix
    of a blob or array; the payload's bytes as Python writes them, cut at 32). ``params``: the schema's parameters
    (a protocol message's ``api_version``)."""
    out: list[tuple[str | None, str]] = [(None, "")] * len(data)
    for a, b, label, obj in _claims(mod, data, with_values=True, **params):
        own = [i for i in range(a, b) if out[i][0] is None]
        said = _said(label, obj)
        if isinstance(obj, dict) and not said:  # a region: its length prefix, or the CRC over it
            said = _region(label, data[own[0] : own[-1] + 1] if own else b"", b - a - len(own))
        for i in own:
            out[i] = (label, said)
    return out


def _region(label: str, own: bytes, inside: int) -> str:
    """What the bytes a region's field holds itself say: a CRC's stored value, or the length of what follows."""
    if label.rsplit(".", 1)[-1] == "crc" and len(own) == 4:
        return f"0x{int.from_bytes(own, 'big'):08x}"
    return f"{inside} bytes follow" if label.endswith("length") else ""


def _said(label: str, obj) -> str:
    if label.endswith("[payload]"):
        text = repr(obj)
        return text if len(text) <= 34 else text[:32] + "..."
    if isinstance(obj, bool) or obj is None:
        return "null" if obj is None else str(obj).lower()
    if isinstance(obj, int):
        return f"0x{obj & 0xFFFFFFFF:08x}" if label.rsplit(".", 1)[-1] == "crc" else str(obj)
    if isinstance(obj, (bytes, str)):
        return f"length {len(obj.encode('utf-8', 'surrogateescape') if isinstance(obj, str) else obj)}"
    if isinstance(obj, list):
        return f"count {len(obj)}"
    if isinstance(obj, dict) and obj and all(isinstance(v, (int, str, bool)) for k, v in obj.items() if k != "_io"):
        return " ".join(f"{k}={v}" for k, v in obj.items() if k != "_io" and not k.startswith("_"))
    return ""


def _claims(mod, data: bytes, with_values: bool = False, **params):
    """``(start, end, label)`` of each field of one entry (``data``) as the Construct backend parses it, in the
    order they complete: children before their parents, so the first claim on a byte is its innermost field
    (a string's or blob's payload bytes are claimed as ``[payload]`` first)."""
    con = importlib.import_module(f"{mod.__name__}.construct")
    events: list = []
    with _tracing(events):
        con.CONSTRUCT.parse_stream(io.BytesIO(data), verify_crc=False, opts=DEFAULT_OPTIONS, **params)
    for path, name, sub, st, start, end, obj in events:
        a = _absolute(st, start)
        if a is None:
            continue
        label = _label(path, name)
        b = _absolute(st, end)
        if isinstance(obj, (bytes, str)) and isinstance(_unwrap(sub), KBytes):
            payload = len(obj.encode("utf-8", "surrogateescape") if isinstance(obj, str) else obj)
            yield (b - payload, b, f"{label} [payload]", obj) if with_values else (b - payload, b, f"{label} [payload]")
        if _compressed_under(events, sub, st):
            label += " (compressed)"
        yield (a, b, label, obj) if with_values else (a, b, label)


def byte_labels(mod, data: bytes) -> list[str | None]:
    """The field each byte of one entry (``data``) belongs to (innermost field wins)."""
    labels: list[str | None] = [None] * len(data)
    for a, b, label in _claims(mod, data):
        for i in range(a, b):
            if labels[i] is None:
                labels[i] = label
    return labels


def label_counts(mod, data: bytes, **params) -> Counter:
    """Bytes of one entry by field label, as :func:`byte_labels` gives them (unlabelled ones as
    ``(unattributed)``), counted over the claimed intervals rather than byte by byte."""
    counts: Counter = Counter()
    starts: list[int] = []  # the bytes claimed so far, as disjoint intervals in order
    ends: list[int] = []
    for a, b, label in _claims(mod, data, **params):
        if a >= b:
            continue
        i, j = bisect.bisect_right(ends, a), bisect.bisect_left(starts, b)  # the intervals [a, b) overlaps
        claimed = sum(min(b, e) - max(a, s) for s, e in zip(starts[i:j], ends[i:j]))
        if b - a > claimed:
            counts[label] += b - a - claimed
        lo, hi = (min(a, starts[i]), max(b, ends[j - 1])) if i < j else (a, b)
        starts[i:j], ends[i:j] = [lo], [hi]
    rest = len(data) - sum(e - s for s, e in zip(starts, ends))
    if rest:
        counts["(unattributed)"] += rest
    return counts


def _unwrap(sub):
    while isinstance(sub, c.IfThenElse):
        sub = sub.thensubcon
    return sub


def _compressed_under(events, sub, stream) -> bool:
    """Whether a KafkaCompressed field actually held a compressed stream (its bytes are then opaque)."""
    if not isinstance(_unwrap(sub), KafkaCompressed):
        return False
    return any(isinstance(e[3], SubStream) and e[3].compressed and e[3].parent is stream for e in events)


def attribute(mod, blob: bytes) -> dict[str, int]:
    """Bytes of an encoded log (one or more entries) by field label, payload bytes marked ``[payload]``."""
    out: Counter = Counter()
    for pos, end, _magic in iter_entries(blob):
        out.update(label_counts(mod, blob[pos:end]))
    return dict(out)
