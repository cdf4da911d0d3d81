"""Damaged segments, handled as Kafka recovers them and better: everything valid before the damage is read,
the damaged region is reported (position, length, reason; zero fill named as such), and reading resumes at
the next complete entry with a valid CRC."""

from __future__ import annotations

import json
import struct

import pytest

import kfmt
from kfmt.log.batches import scan
from kfmt.tools.cli import main
from kfmt.tools.synth import SynthConfig, synth


@pytest.fixture(scope="module")
def seg(tmp_path_factory):
    d = tmp_path_factory.mktemp("dmg")
    synth(d, SynthConfig(seed=5, topics=("t",), partitions=1, records=400, segment_bytes=1 << 30, legacy=False))
    return next(d.glob("t-0/*.log")).read_bytes()


def _entries(data: bytes):
    return [(p, e) for p, e, b in scan(data) if not isinstance(b, kfmt.CodecError)]


def _read(data: bytes, backend: str = "python"):
    errors: list = []
    batches = list(kfmt.read_batches(data, on_corrupt=errors.append, backend=backend))
    return batches, errors


def _accounted(data, batches_entries, errors):
    return sum(e - p for p, e in batches_entries) + sum(x.unread for x in errors) == len(data)


def test_huge_size_in_the_middle_loses_only_that_batch(seg, backend):
    entries = _entries(seg)
    k = len(entries) // 2
    p, e = entries[k]
    bad = bytearray(seg)
    struct.pack_into(">i", bad, p + 8, 0x7FFF0000)
    batches, errors = _read(bytes(bad), backend)
    assert len(batches) == len(entries) - 1
    assert batches == _read(seg[:p] + seg[e:], backend)[0]  # the same batches as the log without it
    (err,) = errors
    assert (err.batch_position, err.unread) == (p, e - p)
    # `fail` names the real position; scan accounts for every byte
    with pytest.raises(kfmt.CodecError) as x:
        list(kfmt.read_batches(bytes(bad), partial_tail="error"))
    assert x.value.batch_position == p or f"at byte {p}" in str(x.value)
    items = list(scan(bytes(bad), skip_corrupt=True, backend=backend))
    assert sum(end - pos for pos, end, _ in items) == len(bad)


@pytest.mark.parametrize("size", [0, 5, 13, -1])
def test_entry_size_below_the_minimum_resynchronises(seg, size):
    entries = _entries(seg)
    p, e = entries[3]
    bad = bytearray(seg)
    struct.pack_into(">i", bad, p + 8, size)
    batches, errors = _read(bytes(bad))
    assert len(batches) == len(entries) - 1 and len(errors) == 1 and errors[0].unread == e - p


def test_zero_filled_tail_is_named_and_counted(seg, tmp_path, capsys):
    data = seg + bytes(1 << 20)  # what a preallocated segment leaves after an unclean shutdown
    batches, errors = _read(data)
    assert len(batches) == len(_entries(seg))
    (err,) = errors
    assert err.zero_filled and err.unread == 1 << 20 and err.batch_position == len(seg)
    assert "zero-filled" in str(err)
    f = tmp_path / "t-0" / "00000000000000000000.log"
    f.parent.mkdir()
    f.write_bytes(data)
    assert main(["dump", "--json", "--no-index", str(f)]) == 1
    problems = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"problem"' in x]
    assert [(p["kind"], p["position"], p["bytes"]) for p in problems] == [("zero_fill", len(seg), 1 << 20)]


def test_zeroed_hole_is_skipped_and_everything_after_it_read(seg, tmp_path, capsys):
    entries = _entries(seg)
    p, _ = entries[5]
    _, e = entries[8]
    bad = bytearray(seg)
    bad[p:e] = bytes(e - p)  # batches 5 to 8 zeroed
    batches, errors = _read(bytes(bad))
    assert len(batches) == len(entries) - 4
    (err,) = errors
    assert err.zero_filled and (err.batch_position, err.unread) == (p, e - p)
    # part of a batch zeroed: that batch is lost, the rest read, every byte accounted for
    bad = bytearray(seg)
    q = entries[5][0] + 30
    bad[q : q + 100] = bytes(100)
    batches, errors = _read(bytes(bad))
    assert len(batches) >= len(entries) - 2
    good = [(pos, end) for pos, end, b in scan(bytes(bad), skip_corrupt=True) if not isinstance(b, kfmt.CodecError)]
    assert _accounted(bad, good, errors)
    # dump goes on with --skip-corrupt and reports the region
    f = tmp_path / "t-0" / "00000000000000000000.log"
    f.parent.mkdir()
    f.write_bytes(bytes(bad))
    assert main(["dump", "--skip-corrupt", "--summary", "--no-index", str(f)]) == 1
    out = capsys.readouterr().out
    assert f"{len(batches)}" in out


def test_random_garbage_between_batches(seg):
    entries = _entries(seg)
    p, _ = entries[10]
    junk = bytes((i * 37 + 11) % 256 for i in range(777))
    data = seg[:p] + junk + seg[p:]
    batches, errors = _read(data)
    assert len(batches) == len(entries)
    (err,) = errors
    assert (err.batch_position, err.unread) == (p, 777)
    assert "hold no valid entry" in str(err)


def test_convert_resynchronises_too(seg, tmp_path, capsys):
    entries = _entries(seg)
    bad = bytearray(seg)
    struct.pack_into(">i", bad, entries[2][0] + 8, 0x7FFF0000)
    src = tmp_path / "in.log"
    src.write_bytes(bytes(bad))
    assert main(["convert", str(src), str(tmp_path / "out.log"), "--magic", "2", "--skip-corrupt"]) == 1
    assert len(list(kfmt.read_batches(tmp_path / "out.log"))) == len(entries) - 1
