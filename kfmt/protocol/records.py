"""The record sets inside protocol messages (Produce requests' and Fetch responses' ``Records``, and every other
field of Kafka's ``records`` type), read by the record codecs: any magic, any codec, CRCs checked, transactions
and control batches as ``kfmt dump --json`` shows them. A last batch cut short is what a broker sends when a
partition's byte limit ends inside it: shown as ``partial``, as Kafka's consumer skips it, not as damage.
Damage is reported at the field's path, and the message around it is kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from kfmt.runtime.errors import CodecError, TruncatedError


@dataclass
class RecordSets:
    """What :func:`records_json` found, message by message: each damaged record set's one line. ``records``
    False: each batch is still read whole (decompressed, CRCs checked: damage is found alike) but its records are
    counted (``record_count``), not shaped one by one (what a summary or a line per message needs); "text": the
    records of each batch as JSON text (kfmt.runtime.jsonl.fragment), for a writer that puts the message out as
    JSON (kfmt.runtime.jsonl) and has no use for the records as objects; "crc": a set whose every batch is a whole
    v2 batch whose CRC-32C matches is not opened (its batches counted from their headers, ``opened`` false: what
    ``kfmt dump --summary`` checks without --deep); any other set is read as with False, so that damage is found and
    said by the one scanner. ``hex`` False: the set's bytes are not written out (where only what is read in them is
    shown)."""

    backend: str | None = None
    problems: list[str] = field(default_factory=list)
    records: bool | str = True
    hex: bool = True  # a record set's bytes written out (as hex) beside what is read in them (kfmt.payloads)
    opened: int = 0  # batches decompressed (where compressed) and read
    sealed: int = 0  # batches checked by their CRC-32C alone ("crc")

    def __call__(self, data, path: str) -> dict:
        if self.records == "crc":
            sealed = sealed_json(data)
            if sealed is not None:
                self.sealed += len(sealed["_batches"])
                return sealed
        found = records_json(bytes(data), path, self)
        self.opened += len(found["_batches"])
        return found


def sealed_json(data) -> dict | None:
    """``{"_batches": [...]}`` of a record set whose every batch is a whole v2 batch with a matching CRC-32C (which
    covers all of the batch after it: attributes, offsets, producer, and records, compressed or not), each batch
    from its header (``opened`` false: its records not read); None for any other set."""
    from kfmt.log.batches import written_entries_v2

    try:
        found = written_entries_v2(data)
    except CodecError:
        return None
    if found is None:
        return None
    return {"_batches": [{"position": pos, "size": end - pos, "magic": 2, "base_offset": b.base_offset,
                          "last_offset": b.last_offset, "record_count": b.records, "opened": False}
                         for pos, end, b in found]}  # fmt: skip


def records_json(data: bytes, path: str, sets: RecordSets) -> dict:
    """``{"_batches": [...]}`` beside a record set's hex: each batch (with its ``records``) as ``kfmt dump --json``
    shapes them, positions from the set's first byte; ``_partial``: the cut last batch; ``_damage``: what did not
    decode, which also goes to ``sets.problems`` with where it is."""
    from kfmt.log.batches import scan
    from kfmt.log.shapes import NoSegment, batch_dict, on_the_wire, record_dicts, records_text
    from kfmt.runtime import jsonl

    batches: list[dict] = []
    out: dict = {}
    for pos, end, b in scan(data, skip_corrupt=True, backend=sets.backend):
        if isinstance(b, CodecError):
            if isinstance(b, TruncatedError) and b.cut_entry and end == len(data):
                out["_partial"] = {"position": pos, "bytes": end - pos}
                continue
            line = f"{path} at byte {b.batch_position if b.batch_position is not None else pos}: {b.reason}"
            out.setdefault("_damage", []).append(line)
            sets.problems.append(line)
            continue
        d = on_the_wire(batch_dict(NoSegment, pos, end, b))
        if not sets.records or sets.records == "crc":
            d["record_count"] = len(b.records)
        elif sets.records == "text" and jsonl.orjson is not None:  # JSON text the writer puts in as is
            d["records"] = jsonl.fragment(records_text(pos, b))
        else:
            d["records"] = record_dicts(NoSegment, pos, b, "utf8", wire=True)
        batches.append(d)
    return {"_batches": batches, **out}
