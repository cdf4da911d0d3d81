"""`make demo` before the Spark pipeline: a v2 batch encoded, then decoded field by field."""

from __future__ import annotations


def run_codec_demo() -> None:
    import kfmt
    from kfmt.api import get_format

    v2 = get_format("kafka_v2")
    data = kfmt.encode_batch(
        [
            kfmt.Record(key=b"user-1", value=b'{"clicks": 3}', headers=[("trace", b"ab12"), ("trace", None)],
                        timestamp=1700000000000),  # fmt: skip
            kfmt.Record(key=None, value=b"tombstone? no: null key", timestamp=1700000000123),
        ],
        producer_id=4000,
        producer_epoch=2,
        base_sequence=0,
    )
    print(f"v2 batch, {len(data)} bytes:")
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        print(f"  {i:04x}  {chunk.hex(' ')}")
    (batch,) = kfmt.read_batches(data)
    print("\nbatch (schemas/kafka_v2.yaml, struct 'batch'):")
    for name in v2.Batch._fields:
        if name != "records":
            print(f"  {name:24} {getattr(batch, name)!r}")
    print(f"  {'last_offset':24} {batch.last_offset!r}")
    for r in batch.records:
        print(f"\n  record @ offset {r.offset} (struct 'record'):")
        for name in r._fields:
            print(f"    {name:22} {getattr(r, name)!r}")
