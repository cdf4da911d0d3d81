"""`kfmt dump` and `kfmt convert` on real-looking log directories, including corrupt ones."""

import json
import os
import struct
import subprocess
import sys

import pytest

import kfmt
from kfmt.log.conversion import convert
from kfmt.tools.cli import main


def _segment(tmp_path, topic="orders", part=0, base=0, corrupt_at=None):
    d = tmp_path / "logs" / f"{topic}-{part}"
    d.mkdir(parents=True, exist_ok=True)
    blobs = [
        kfmt.encode_batch([kfmt.Record(value=b"legacy", timestamp=1)], magic=1, base_offset=base),
        kfmt.encode_batch(
            [kfmt.Record(key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")], timestamp=10 + i) for i in range(3)],
            base_offset=base + 1,
            codec="snappy",
        ),  # fmt: skip
        kfmt.encode_batch([kfmt.Record(value=b"z", timestamp=20)], base_offset=base + 4, codec="zstd"),
    ]
    data = bytearray(b"".join(blobs))
    if corrupt_at is not None:
        data[corrupt_at] ^= 0x55
    path = d / f"{base:020d}.log"
    path.write_bytes(bytes(data))
    # index the second batch by its last offset and position, as Kafka does
    pos2 = len(blobs[0])
    (d / f"{base:020d}.index").write_bytes(struct.pack(">ii", 3, pos2) + b"\0" * 16)
    (d / f"{base:020d}.timeindex").write_bytes(struct.pack(">qi", 12, 3) + b"\0" * 24)
    return path, [len(b) for b in blobs]


def test_dump_json_records(tmp_path, capsys):
    _segment(tmp_path)
    _segment(tmp_path, topic="payments", part=1, base=100)
    assert main(["dump", "--json", "--records", str(tmp_path / "logs")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["topic"], x["offset"]) for x in lines] == [("orders", i) for i in range(5)] + [
        ("payments", 100 + i) for i in range(5)
    ]
    assert lines[1]["headers"] == [["h", "x"]] and lines[1]["magic"] == 2 and lines[0]["magic"] == 1
    assert {"offset", "timestamp", "key", "value", "headers", "magic"} <= set(lines[0])


def test_dump_table_summary_and_payload(tmp_path, capsys):
    path, _ = _segment(tmp_path)
    assert main(["dump", "--records", "--payload", "hex", str(path)]) == 0
    out = capsys.readouterr().out
    assert "snappy" in out and "7630" in out  # b"v0" in hex
    assert main(["dump", "--summary", str(path.parent)]) == 0
    out = capsys.readouterr().out
    assert "batches per magic" in out and "zstd" in out


def test_dump_corrupt_batch_stops_or_skips(tmp_path, capsys):
    path, sizes = _segment(tmp_path, corrupt_at=None)
    data = bytearray(path.read_bytes())
    data[sizes[0] + 40] ^= 0xFF  # inside the second batch's CRC-covered header
    path.write_bytes(bytes(data))
    assert main(["dump", "--json", str(path)]) == 1
    cap = capsys.readouterr()
    assert f"{path} at byte {sizes[0]}: corrupt batch of {sizes[1]} bytes" in cap.err
    objs = [json.loads(x) for x in cap.out.splitlines()]
    # the first batch, then the corrupt one and the bytes left unread, as problem objects
    assert [o["type"] for o in objs] == ["batch", "problem", "problem"]
    assert [(o["kind"], o["position"]) for o in objs[1:]] == [("corrupt_batch", sizes[0]),
                                                               ("unread_bytes", sizes[0] + sizes[1])]  # fmt: skip
    assert "index" not in cap.err  # entries past the corrupt batch are not called mismatches
    assert main(["dump", "--json", "--skip-corrupt", str(path)]) == 1
    cap = capsys.readouterr()
    assert [json.loads(x)["type"] for x in cap.out.splitlines()] == ["batch", "problem", "batch"]


def test_dump_proposal_format_explicitly(tmp_path, capsys):
    d = tmp_path / "p-0"
    d.mkdir()
    (d / f"{0:020d}.log").write_bytes(
        kfmt.encode_batch([kfmt.Record(value=b"abc", headers=[(1, b"x")], timestamp=1)], format="kip82_header_wrapper")
    )
    assert main(["dump", "--json", "--records", "--format", "kip82_header_wrapper", str(d)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["headers"] == [[1, "x"]]
    assert main(["dump", str(d)]) == 1  # read as a real v2 batch, which it is not


def test_dump_reports_index_mismatch(tmp_path, capsys):
    path, sizes = _segment(tmp_path)
    (path.parent / f"{0:020d}.index").write_bytes(struct.pack(">ii", 3, sizes[0] + 1))
    assert main(["dump", str(path)]) == 1
    assert "no batch starts there" in capsys.readouterr().err


def test_convert_cli_writes_atomically_and_reports(tmp_path, capsys):
    _segment(tmp_path)
    out = tmp_path / "v1"
    assert main(["convert", str(tmp_path / "logs"), str(out), "--magic", "1", "--codec", "gzip"]) == 0
    err = capsys.readouterr().err
    assert "headers" in err and "not carried over" in err
    converted = (out / "orders-0" / f"{0:020d}.log").read_bytes()
    assert {b.magic for b in kfmt.read_batches(converted)} == {1}
    assert [r.value for b in kfmt.read_batches(converted) for r in b.records] == [b"legacy", b"v0", b"v1", b"v2", b"z"]
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    src = tmp_path / "logs" / "orders-0" / f"{0:020d}.log"
    assert main(["convert", str(src), str(src), "--magic", "2"]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_convert_skip_corrupt_reports_each_batch(tmp_path, capsys):
    path, sizes = _segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[sizes[0] + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    out = tmp_path / "o.log"
    assert main(["convert", str(path), str(out), "--magic", "2"]) == 1
    assert not out.exists() and "nothing written" in capsys.readouterr().err
    assert main(["convert", str(path), str(out), "--magic", "2", "--skip-corrupt"]) == 1
    err = capsys.readouterr().err
    assert f"corrupt_batch at byte {sizes[0]}" in err and "crc" in err
    assert [r.value for b in kfmt.read_batches(out.read_bytes()) for r in b.records] == [b"legacy", b"z"]


def test_interrupted_conversion_leaves_nothing(tmp_path):
    """Kill a conversion midway: no partial output appears, the input is intact."""
    path, _ = _segment(tmp_path)
    big = tmp_path / "big-0"
    big.mkdir()
    seg = big / f"{0:020d}.log"
    recs = [kfmt.Record(value=os.urandom(200), timestamp=i) for i in range(400)]
    seg.write_bytes(b"".join(kfmt.encode_batch(recs, base_offset=i * 400, codec="gzip") for i in range(8)))
    before = seg.read_bytes()
    out = tmp_path / "out"
    code = (
        "import sys, kfmt.tools.convert as t, kfmt.log.conversion as c\n"
        "real = c.convert\n"
        "def slow(*a, **k):\n"
        "    r = real(*a, **k)\n"
        "    import os; os.kill(os.getpid(), 9)\n"
        "t.convert = slow\n"
        f"t.convert_paths({str(big)!r}, {str(out)!r}, to_magic=1)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode != 0
    assert seg.read_bytes() == before
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


def test_convert_round_trip_values(tmp_path):
    path, _ = _segment(tmp_path)
    data = path.read_bytes()
    down = convert(data, to_magic=0, codec="lz4")
    assert {b.magic for b in kfmt.read_batches(down.data)} == {0}
    up = convert(down.data, to_magic=2)
    assert [(r.offset, r.value) for b in kfmt.read_batches(up.data) for r in b.records] == [
        (r.offset, r.value) for b in kfmt.read_batches(data) for r in b.records
    ]
    assert ("timestamps" in down.summary()) and ("headers" in down.summary())
    with pytest.raises(kfmt.UnsupportedCodecError, match="zstd"):
        convert(data, to_magic=1)
