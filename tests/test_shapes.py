"""A batch's records shaped for JSON in C (kfmt.runtime.native._shapes: the dicts, the JSON text `kfmt dump --json`
writes, a log's JSON lines of `kfmt dump --records --json`) are kfmt.log.shapes.record_dict's, field for field and byte for byte: on every batch the real
brokers wrote (../shared/fixtures/real-broker), and on records made to be awkward (text that is not UTF-8, encoded
surrogates, control characters, quotes, header keys that are not UTF-8, null keys and values, negative times and
times past year 9999, producer sequences that wrap, control records, magic 0 and 1)."""

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import kfmt
from kfmt.codec.formats import available_backends
from kfmt.log import shapes
from kfmt.log.batches import scan

pytestmark = pytest.mark.skipif("native" not in available_backends(), reason="the native backend is not built here")

BROKERS = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-broker"


class _Seg:
    path, topic, partition = "/logs/t-0/00000000000000000000.log", "t", 0


def _python(seg, pos, b, *, wire: bool) -> list[dict]:
    out = [shapes.record_dict(seg, pos, b, r, "utf8") for r in b.records]
    return [{k: v for k, v in d.items() if k not in shapes.SEGMENT_KEYS} for d in out] if wire else out


def _same(pos, b) -> int:
    """The C shapes against the definition's for one batch; the records compared."""
    assert shapes._native_shapes() is not None
    for wire in (False, True):
        want = _python(_Seg, pos, b, wire=wire)
        got = shapes.record_dicts(_Seg, pos, b, "utf8", wire=wire)
        assert got == want and [list(d) for d in got] == [list(d) for d in want]  # values, and the keys' order
    assert shapes.records_text(pos, b) == orjson.dumps(_python(_Seg, pos, b, wire=True))
    lines = [orjson.dumps(d | {"file": "orders-0/0.log"}) + b"\n" for d in _python(_Seg, pos, b, wire=False)]
    assert shapes.record_lines(_Seg, "orders-0/0.log", pos, b) == b"".join(lines)  # kfmt dump --records --json's
    return len(b.records)


def test_every_batch_the_real_brokers_wrote():
    seen = 0
    for log in sorted(BROKERS.glob("**/*.log")):
        for pos, _, b in scan(log.read_bytes(), skip_corrupt=True):
            if not isinstance(b, Exception):
                seen += _same(pos, b)
    assert seen > 1000, seen


payloads = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),  # encoded surrogates: not UTF-8
    st.sampled_from([b'"quote" \\ back', b"\x00\x01\x1f\x7f\n\t\r\b\x0c", "é€𝄞".encode(), b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                     b"\xc0\xaf", b"\xe0\x80\xaf", b"ascii only, longer than eight bytes", b"\xf0\x9f\x98\x80" * 3]),
)  # fmt: skip
header_keys = st.one_of(st.text(max_size=8), st.binary(max_size=6).map(lambda b: b.decode("utf-8", "surrogateescape")))
timestamps = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([1_700_000_000_123, 253402300799999, 253402300800000, 2**63 - 1, 951782400000, 4107542399999]),
    st.integers(0, 2**63 - 1),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=st.lists(st.tuples(payloads, payloads, timestamps, st.lists(st.tuples(header_keys, payloads), max_size=3)),
                  min_size=1, max_size=6),
    base_sequence=st.sampled_from([-1, 0, 7, 2**31 - 3]),
    base_offset=st.sampled_from([0, 5, 2**40]),
    codec=st.sampled_from(["none", "lz4"]),
)  # fmt: skip
def test_awkward_records_shape_alike(recs, base_sequence, base_offset, codec):
    records = [kfmt.Record(key=k, value=v, timestamp=ts, headers=hs) for k, v, ts, hs in recs]
    pid = {"producer_id": 9, "producer_epoch": 0} if base_sequence >= 0 else {}
    try:
        data = kfmt.encode_batch(records, base_offset=base_offset, codec=codec, base_sequence=base_sequence, **pid)
    except kfmt.CodecError:  # timestamps too far apart for one batch's deltas
        assume(False)
    (pos, _, b), = scan(data)  # fmt: skip
    assert _same(pos, b) == len(records)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_shape_alike(magic):
    records = [kfmt.Record(key=b"k", value=None if i % 2 else b"\xff\x00", timestamp=None if magic == 0 else i)
               for i in range(4)]  # fmt: skip
    for codec in ("none", "gzip"):
        for pos, _, b in scan(kfmt.encode_batch(records, magic=magic, codec=codec)):
            _same(pos, b)


def test_control_records_are_handed_to_the_definition():
    marker = kfmt.Record(key=b"\x00\x00\x00\x01", value=b"\x00\x00\x00\x00\x00\x05", timestamp=1, control=(0, 1))
    data = kfmt.encode_batch([marker], producer_id=3, producer_epoch=0, is_transactional=True, is_control=True)
    (pos, _, b), = scan(data)  # fmt: skip
    _same(pos, b)
    assert shapes.record_dicts(_Seg, pos, b, "utf8")[0]["control_type"] == "COMMIT coordinatorEpoch 5"


def test_no_leaks_on_any_path():
    """Traced memory and the shared objects' reference counts stay flat over 20,000 shapings of common and rare
    records (a header key that is not UTF-8, a control record, text that is not UTF-8), as dicts and as text."""
    import gc
    import sys
    import tracemalloc

    marker = kfmt.Record(key=b"\x00\x00\x00\x00", value=b"\x00\x00\x00\x00\x00\x01", timestamp=1, control=(0, 0))
    plain = [kfmt.Record(key=b"k", value=b"\xff" if i % 2 else b"v \"q\"\n", timestamp=i,
                         headers=[("h", None), ("\udcff", b"x")] if i % 3 == 0 else [("h", b"1")]) for i in range(6)]  # fmt: skip
    batches = [b for data in (kfmt.encode_batch(plain, producer_id=1, producer_epoch=0, base_sequence=5),
                              kfmt.encode_batch([marker], producer_id=1, producer_epoch=0, is_transactional=True,
                                                is_control=True)) for _, _, b in scan(data)]  # fmt: skip

    def once():
        for b in batches:
            shapes.record_dicts(_Seg, 0, b, "utf8")
            shapes.record_dicts(_Seg, 0, b, "utf8", wire=True)
            shapes.records_text(0, b)

    for _ in range(200):
        once()
    gc.collect()
    counts = [sys.getrefcount(x) for x in (None, _Seg.path, batches[0].records[0].value)]
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(20_000):
        once()
        shapes.record_lines(_Seg, "f", 0, batches[0])
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 64 * 1024, grown
    assert [sys.getrefcount(x) for x in (None, _Seg.path, batches[0].records[0].value)][1:] == counts[1:]


def test_a_dump_of_each_real_brokers_log_directory_is_the_python_backends(tmp_path):
    """`kfmt dump --records --json` of each real broker's log directory (Kafka's own topics decoded, control
    records, user topics written whole in C): byte for byte what an installation without the native backend
    writes, and its problems alike."""
    import os
    import subprocess
    import sys

    kfmt_exe = str(Path(sys.executable).parent / "kfmt")
    folders = sorted(p for p in BROKERS.iterdir() if p.is_dir())
    assert len(folders) >= 6
    for folder in folders:
        runs = [subprocess.run([kfmt_exe, "dump", "--records", "--json", str(folder)], capture_output=True,
                               timeout=600, env=dict(os.environ, **env)) for env in ({}, {"KFMT_DISABLE_NATIVE": "1"})]  # fmt: skip
        assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr, folder
        assert runs[0].returncode == runs[1].returncode and runs[0].stdout.count(b"\n") > 10, folder
