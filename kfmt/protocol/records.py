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
    JSON (kfmt.runtime.jsonl) and has no use for the records as objects."""

    backend: str | None = None
    problems: list[str] = field(default_factory=list)
    records: bool | str = True

    def __call__(self, data, path: str) -> dict:
        return records_json(bytes(data), path, self)


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
        if not sets.records:
            d["record_count"] = len(b.records)
        elif sets.records == "text" and jsonl.orjson is not None:  # JSON text the writer puts in as is
            d["records"] = jsonl.fragment(records_text(pos, b))
        else:
            d["records"] = record_dicts(NoSegment, pos, b, "utf8", wire=True)
        batches.append(d)
    return {"_batches": batches, **out}
