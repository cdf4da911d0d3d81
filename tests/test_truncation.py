"""h11's habit: every proper prefix of a valid input raises the truncated error."""

import pytest

import kfmt
from conftest import backends
from kfmt import TruncatedError


def _sample():
    return kfmt.encode_batch(
        [
            kfmt.Record(key=b"k" * 70, value=b"v" * 200, headers=[("a", b"1"), ("b", None)], timestamp=10_000 + i)
            for i in range(3)
        ],  # fmt: skip
        producer_id=1,
    )


@pytest.mark.parametrize("backend,mod", backends("kafka_v2"))
def test_every_proper_prefix_is_truncated(backend, mod):
    data = _sample()
    for n in range(len(data)):
        with pytest.raises(TruncatedError):
            mod.decode_from(data[:n], 0, n)


def test_read_batches_stops_quietly_at_any_truncated_tail():
    one = _sample()
    for n in range(len(one)):
        assert len(list(kfmt.read_batches(one + one[:n]))) == 1


def test_error_names_offset_and_path(v2):
    data = bytearray(_sample())
    data[-8] ^= 0xFF  # the last record's header count becomes negative
    with pytest.raises(kfmt.ChecksumError) as e:
        v2.decode(bytes(data))
    assert e.value.offset == 21 and e.value.path == "batch.crc"
    with pytest.raises(kfmt.InvalidValueError) as e:
        v2.decode(bytes(data), verify_crc=False)
    assert e.value.path == "batch.records[2].headers" and len(data) - 8 <= e.value.offset <= len(data) - 5
    assert "negative count" in str(e.value)
