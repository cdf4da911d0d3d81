"""How fast can pure Python decode the bench's v2 records at all?  (`make bench-floor`)

Not part of the library: a measurement.  `floor()` below is the least a CPython loop can do and still
build the values the generated decoder builds (one slotted Record per record, a list of (str, bytes)
tuples per header list): no CRC, no bounds or length checks, no limits, no int64 range checks, no
control records, no error paths, globals bound as default arguments.  It only reads the bench's workload
(every length fits one or two varint bytes).  Printed beside the generated decoder and kafka-python, on
the same batch, medians of 7 rounds: the ratio of `floor` to kafka-python bounds what any generated
decoder could reach on this interpreter.
"""

from __future__ import annotations

import statistics

from bench_codecs import _rate, touch, workload
from kafka.record.default_records import DefaultRecordBatch

import generated.kafka_v2.python as codec
from generated.kafka_v2.model import Record
from kfmt.runtime.varint import ZZ1, ZZ2

KEYS: dict[bytes, str] = {}


def floor(buf, pos, n, base_ts, base_off, ZZ=ZZ1, ZZ2=ZZ2, new=object.__new__, Record=Record, KEYS=KEYS):  # noqa: N803
    out = []
    append = out.append
    for _ in range(n):
        b = buf[pos]
        if b < 128:
            length = ZZ[b]
            pos += 1
        else:
            length = ZZ2[(b << 7) + buf[pos + 1]]
            pos += 2
        attributes = buf[pos]
        pos += 1
        b = buf[pos]
        if b < 128:
            ts_delta = ZZ[b]
            pos += 1
        else:
            ts_delta = ZZ2[(b << 7) + buf[pos + 1]]
            pos += 2
        b = buf[pos]
        if b < 128:
            off_delta = ZZ[b]
            pos += 1
        else:
            off_delta = ZZ2[(b << 7) + buf[pos + 1]]
            pos += 2
        n_key = ZZ[buf[pos]]
        pos += 1
        key = buf[pos : pos + n_key]
        pos += n_key
        b = buf[pos]
        if b < 128:
            n_value = ZZ[b]
            pos += 1
        else:
            n_value = ZZ2[(b << 7) + buf[pos + 1]]
            pos += 2
        value = buf[pos : pos + n_value]
        pos += n_value
        n_headers = ZZ[buf[pos]]
        pos += 1
        headers = []
        for _ in range(n_headers):
            n_hkey = ZZ[buf[pos]]
            pos += 1
            raw = buf[pos : pos + n_hkey]
            pos += n_hkey
            hkey = KEYS.get(raw)
            if hkey is None:
                hkey = KEYS[raw] = raw.decode()
            n_hvalue = ZZ[buf[pos]]
            pos += 1
            headers.append((hkey, buf[pos : pos + n_hvalue]))
            pos += n_hvalue
        r = new(Record)
        r.length = length
        r.attributes = attributes
        r.timestamp_delta = ts_delta
        r.offset_delta = off_delta
        r.key = key
        r.value = value
        r.headers = headers
        r.timestamp = base_ts + ts_delta
        r.offset = base_off + off_delta
        r.control = None
        append(r)
    return out


def main() -> None:
    recs = [Record(key=k, value=v, headers=h, timestamp=ts) for _, ts, k, v, h in workload()]
    data = codec.encode(codec.Batch(codec="none", records=recs))
    batch = codec.decode(data)
    first = 61  # the records start after the 61-byte batch header

    assert [r.as_dict() for r in floor(data, first, len(recs), batch.base_timestamp, 0)] == [
        r.as_dict() for r in batch.records
    ]
    fns = {
        "floor (no checks)": lambda: touch(floor(data, first, len(recs), batch.base_timestamp, 0)),
        "kfmt codec": lambda: touch(codec.decode(data).records),
        "kafka-python": lambda: touch(DefaultRecordBatch(data)),
    }
    samples = {name: [] for name in fns}
    for _ in range(7):
        for name, fn in fns.items():
            samples[name].append(_rate(fn, 0.15))
    kp = statistics.median(samples["kafka-python"])
    print("# v2 decode, uncompressed, 100-record batch: records/s, median of 7 rounds")
    for name, v in samples.items():
        m = statistics.median(v)
        print(f"| {name:18} | {m:11,.0f} | {1e6 / m:5.2f} us/record | {m / kp:5.2f}x kafka-python |")


if __name__ == "__main__":
    main()
