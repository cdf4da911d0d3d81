"""Property tests: round trips, backend agreement, and only CodecError escaping on arbitrary bytes."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kfmt
from conftest import backends
from kfmt.codec.formats import backend_module, get_format

ALL = [m for _, m in backends("kafka_v2")]  # every backend built here: native (where built), python, construct
CODEC = backend_module("kafka_v2", "python")
CONSTRUCT = backend_module("kafka_v2", "construct")
# the backends that promise the python backend's exact errors (the Construct reference words its own)
EXACT = [m for name, m in backends("kafka_v2") if name != "construct"]
V2 = get_format("kafka_v2")

i64 = st.integers(-(2**63), 2**63 - 1)
blob = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=20), blob), max_size=4)
record = st.builds(
    lambda k, v, h, ts: kfmt.Record(key=k, value=v, headers=h, timestamp=ts),
    blob,
    blob,
    headers,
    st.integers(1_600_000_000_000, 1_800_000_000_000),
)
batch = st.builds(
    lambda recs, codec, bo, ple, pid, ep, seq, tt, txn: V2.Batch(
        records=recs,
        codec=codec,
        base_offset=bo,
        partition_leader_epoch=ple,
        producer_id=pid,
        producer_epoch=ep,
        base_sequence=seq,
        timestamp_type=tt,
        is_transactional=txn,
    ),  # fmt: skip
    st.lists(record, max_size=12),
    st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    st.integers(0, 2**62),
    st.integers(-(2**31), 2**31 - 1),
    i64,
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([0, 1]),
    st.booleans(),
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(batch)
def test_round_trip_and_backends_agree(b):
    data = CODEC.encode(b)
    assert all(m.encode(b) == data for m in ALL)  # identical bytes from every backend
    d1 = CODEC.decode(data)
    assert all(_same(m.decode(data), d1) for m in ALL)
    assert CODEC.encode(d1) == data
    assert [(r.key, r.value, r.headers) for r in d1.records] == [(r.key, r.value, r.headers) for r in b.records]
    if b.timestamp_type == 0:
        assert [r.timestamp for r in d1.records] == [r.timestamp for r in b.records]
    assert [r.offset for r in d1.records] == [b.base_offset + i for i in range(len(b.records))]


def _same(a, b):
    """Equal values, slot by slot (every slot of the value classes, not only the ones __eq__ compares)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    slots = [s for c in type(a).__mro__ for s in getattr(c, "__slots__", ())]
    if not slots:
        return a == b
    return all(_same(getattr(a, s, None), getattr(b, s, None)) for s in slots)


def _outcome(mod, data, verify_crc=False):
    try:
        return ("ok", mod.decode(data, verify_crc=verify_crc))
    except kfmt.CodecError as e:
        assert "internal decode failure" not in str(e), e  # a generated check is missing somewhere
        return ("error", type(e), str(e), e.offset, e.path)


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_codec_error(data):
    for mod in ALL:
        _outcome(mod, data)
    list_or_error = None
    try:
        list_or_error = list(kfmt.read_batches(data))
    except kfmt.CodecError:
        pass
    assert list_or_error is None or isinstance(list_or_error, list)


@SETTINGS
@given(batch, st.data())
def test_mutated_batches_both_backends_accept_or_reject(b, data):
    raw = bytearray(CODEC.encode(b))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    a, c = _outcome(CODEC, bytes(raw)), _outcome(CONSTRUCT, bytes(raw))
    assert a[0] == c[0], (a, c)
    if a[0] == "ok":
        assert a[1] == c[1]
    for crc in (False, True):  # a compiled backend: the python backend's very values, or its very error
        want = _outcome(CODEC, bytes(raw), crc)
        for m in EXACT:
            got = _outcome(m, bytes(raw), crc)
            assert got[0] == want[0] and (_same(got[1], want[1]) if got[0] == "ok" else got == want), (m, got, want)
    for r in a[1].records if a[0] == "ok" else []:
        assert isinstance(r.headers, list)


LEGACY_RECORD = st.builds(
    lambda k, v, ts: kfmt.Record(key=k, value=v, timestamp=ts), blob, blob, st.integers(-1, 1_800_000_000_000)
)


@SETTINGS
@given(st.sampled_from([0, 1]), st.lists(LEGACY_RECORD, min_size=1, max_size=8),
       st.sampled_from(["none", "gzip", "snappy", "lz4"]), st.integers(0, 2**40), st.data())  # fmt: skip
def test_legacy_round_trip_and_mutations(magic, recs, codec, base, data):
    raw = kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=base)
    got = [(r.offset, r.key, r.value) for b in kfmt.read_batches(raw) for r in b.records]
    assert got == [(base + i, r.key, r.value) for i, r in enumerate(recs)]
    assert raw == kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=base, backend="construct")
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3))):
        mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.integers(0, 255))
    outs = {name: _outcome_from(m, bytes(mutated)) for name, m in backends(f"kafka_v{magic}")}
    a = outs["python"]
    for name, c in outs.items():
        assert a[0] == c[0], (name, a, c)
        if a[0] == "ok":
            assert a[1] == c[1]
        elif name != "construct":  # a compiled backend raises the python backend's very error
            assert c == a, (name, a, c)
        else:
            assert c[1] == a[1], (name, a, c)


def _outcome_from(mod, data):
    try:
        return ("ok", mod.decode_from(data, 0, len(data), kfmt.DecodeOptions(verify_crc=False)))
    except kfmt.CodecError as e:
        assert "internal decode failure" not in str(e), e
        return ("error", type(e), str(e), e.offset, e.path)


# ---- the optimistic encoders (_fencode_*) may only ever be faster: whatever they write, the checked
# encoders (_encode_*) write too, and whatever the checked ones refuse, they refuse (encode() then reruns
# the checked encoder for the error).  Fed with valid values, one of which may be replaced by an odd one.
# the edges of int8, int16, int32, int64 and of the one- and two-byte varint tables, and non-ints
edges = st.sampled_from(
    [e + d for e in (128, 2**15, 2**31, 2**63, 64, 8192) for d in (-1, 0) for e in (e, -e)] + [255, 256, -(2**63) - 1]
)
odd = st.one_of(
    edges,
    edges,
    edges,
    st.none(),
    st.binary(max_size=40),
    st.text(max_size=8),
    st.integers(-(2**70), 2**70),
    st.tuples(st.text(max_size=3), st.binary(max_size=3), st.none()),
)
RECORD_FIELDS = ["key", "value", "headers", "timestamp", "offset", "attributes", "control", "timestamp_delta"]
BATCH_FIELDS = ["base_offset", "codec", "timestamp_type", "producer_id", "base_timestamp", "partition_leader_epoch"]


def _own_record(r):
    return V2.Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp)


@st.composite
def odd_batch(draw):
    b = draw(batch)
    b.records = [_own_record(r) if draw(st.booleans()) else r for r in b.records]  # own and foreign objects
    where = draw(st.sampled_from(["none", "batch", "record", "header"]))
    if where == "batch":
        setattr(b, draw(st.sampled_from(BATCH_FIELDS)), draw(odd))
    elif where in ("record", "header") and b.records:
        r = b.records[draw(st.integers(0, len(b.records) - 1))]
        if where == "record":
            field = draw(st.sampled_from(RECORD_FIELDS if type(r) is V2.Record else RECORD_FIELDS[:5]))
            setattr(r, field, draw(odd))
        elif r.headers:
            i = draw(st.integers(0, len(r.headers) - 1))
            r.headers[i] = draw(st.one_of(odd, st.tuples(odd, blob), st.tuples(st.text(max_size=4), odd)))
    return b


def _run(fn, value):
    out = bytearray()
    try:
        fn(value, out, 0)
    except Exception as e:  # noqa: BLE001 - comparing outcomes, whatever they are
        return type(e)
    return bytes(out)


@pytest.mark.named_backends
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_batch())
def test_optimistic_encoder_never_disagrees_with_the_checked_one(b):
    fast, checked = _run(CODEC._fencode_batch, b), _run(CODEC._encode_batch, b)
    if isinstance(fast, bytes):
        assert checked == fast
    if isinstance(checked, type):
        assert isinstance(fast, type)
    assert (CODEC.encode(b) if isinstance(checked, bytes) else None) == (
        checked if isinstance(checked, bytes) else None
    )
    want = _encoded(CODEC, b)
    for m in EXACT:  # a compiled encoder: the python backend's bytes, or its very error
        assert _encoded(m, b) == want, (m, want)


def _encoded(mod, value):
    try:
        return mod.encode(value)
    except kfmt.CodecError as e:
        return (type(e), str(e), e.path)


ODD_VALUES = [e + d for b in (128, 64, 8192, 2**15, 2**31, 2**63) for e in (b, -b) for d in (-1, 0, 1)] + [
    255, 256, None, b"", b"xy", "text", "", 1.5, ("k", b"v"), [("k", b"v", 1)], [(None, b"v")], [("k", "v")],
]  # fmt: skip


@pytest.mark.parametrize("own", [True, False])
@pytest.mark.parametrize("field", RECORD_FIELDS + ["header"] + ["batch." + f for f in BATCH_FIELDS])
def test_optimistic_encoder_edges(field, own):
    """Every field of an otherwise valid batch set to each edge value (int8/16/32/64 and varint-table
    bounds, non-ints): the optimistic encoder writes what the checked one writes, or refuses."""
    for value in ODD_VALUES:
        recs = [
            V2.Record(key=b"k", value=b"v", headers=[("h", b"1")], timestamp=1_700_000_000_000 + i) for i in range(3)
        ]
        recs = (
            recs
            if own
            else [kfmt.Record(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp) for r in recs]
        )
        b = V2.Batch(records=recs)
        if field.startswith("batch."):
            setattr(b, field[6:], value)
        elif field == "header":
            recs[1].headers = [("h", b"1"), value]
        elif own or field in RECORD_FIELDS[:5]:
            setattr(recs[1], field, value)
        fast, checked = _run(CODEC._fencode_batch, b), _run(CODEC._encode_batch, b)
        if isinstance(fast, bytes):
            assert checked == fast, (field, value)
        if isinstance(checked, type):
            assert isinstance(fast, type), (field, value)
        want = _encoded(CODEC, b)
        for m in EXACT:
            assert _encoded(m, b) == want, (m, field, value)


V1 = get_format("kafka_v1")
V1_CODEC = backend_module("kafka_v1", "python")


@st.composite
def odd_messages(draw):
    msgs = [
        V1.Message(key=k, value=v, timestamp=ts) if draw(st.booleans()) else kfmt.Record(key=k, value=v, timestamp=ts)
        for k, v, ts in draw(st.lists(st.tuples(blob, blob, st.integers(-1, 2**40)), max_size=4))
    ]
    if msgs and draw(st.booleans()):
        m = msgs[draw(st.integers(0, len(msgs) - 1))]
        fields = ["key", "value", "timestamp", "offset"] + (
            ["codec", "timestamp_type"] if type(m) is V1.Message else []
        )
        setattr(m, draw(st.sampled_from(fields)), draw(odd))
    return msgs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_messages())
def test_optimistic_message_set_encoder_never_disagrees(values):
    fast = _run(lambda vals, out, i: V1_CODEC._fencode_run(vals, out, i), values)
    checked = _run(lambda vals, out, i: [V1_CODEC._encode_message(v, out, i + n) for n, v in enumerate(vals)], values)
    if isinstance(fast, bytes):
        assert checked == fast
    if isinstance(checked, type):
        assert isinstance(fast, type)

    def all_(mod):
        try:
            return mod.encode_all(values, "log", 5)
        except kfmt.CodecError as e:
            return (type(e), str(e), e.path)

    want = all_(V1_CODEC)
    for name, m in backends("kafka_v1"):
        if name != "construct":  # a compiled encoder: the python backend's bytes, or its very error
            assert all_(m) == want, name
