"""#33 item 1: one scanner. The same damaged logs go to every reader — ``scan`` (kfmt.log.scanner, the definition),
``read_batches`` on bytes and on a file read in chunks, ``read_arrow`` on bytes and on a log directory (the
Spark source's slice reader), ``kfmt dump --json --records --skip-corrupt`` — and each gives the same records
(offsets, in order) and the same damaged regions (position and length), and leaves out or reports the same
batch being written at the end of the log.

The logs: kfmt's mixed v0/v1/v2 logs in every codec (fuzz.campaign, the fuzzing campaigns' generator), each
damaged as logs are (zeroed holes, zero-filled tails, inserted garbage, size fields too large or too small),
mutated (bit flips, overwrites, truncations, insertions), or cut in its last batch."""

from __future__ import annotations

import json
import logging
import random
import re
import sys
from pathlib import Path

import pytest

import kfmt
from kfmt.log.batches import scan
from kfmt.log.scanner import batch_being_written

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.campaign import _damage, _mixed_log, mutate  # noqa: E402


def _logs(n: int = 24, seed: int = 20261126) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        log = _mixed_log(rng)
        if i % 4 == 3:  # the last batch cut short: being written
            out.append(log[: len(log) - rng.randint(1, 40)])
        else:
            out.append(mutate(log, rng) if i % 4 == 2 else _damage(log, rng)[0])
    return out


LOGS = _logs()


def _offsets(batches) -> list[int]:
    return [r.offset for b in batches for r in b.records]


def _definition(data: bytes) -> dict:
    """What kfmt.log.scanner says: the records, each damaged region, and a batch being written at the end."""
    records, damage, tail = [], [], None
    for pos, end, b in scan(data, skip_corrupt=True):
        if isinstance(b, kfmt.CodecError):
            if end == len(data) and batch_being_written(b, len(data), lambda a, z: data[a:z]):
                tail = (pos, end - pos)
            else:
                damage.append((pos, end - pos))
        else:
            records += _offsets([b])
    return {"records": records, "damage": damage, "tail": tail}


def _read_batches(source, n: int) -> dict:
    errors: list = []
    records = _offsets(kfmt.read_batches(source, on_corrupt=errors.append))
    damage = [(e.batch_position, e.unread) for e in errors]
    tail = None
    if errors and batch_being_written(errors[-1], n):  # read_batches reports it: the readers below leave it out
        tail = damage.pop()
    return {"records": records, "damage": damage, "tail": tail}


NOTE = re.compile(r"ends with (\d+) byte\(s\) of a batch not yet written completely \(at byte (\d+)\)")


def _read_arrow(source, caplog) -> dict:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kfmt.log.arrow"):
        t = kfmt.read_arrow(source, on_corrupt="quarantine", include_control=True,
                            columns=["offset", "position", "error", "raw"])  # fmt: skip
    rows = t.to_pylist()
    damage = []
    for r in rows:
        if r["error"] is not None:
            whole = re.search(r"\(raw: the first \d+ of (\d+) bytes\)$", r["error"])
            damage.append((r["position"], int(whole.group(1)) if whole else len(r["raw"])))
    notes = [NOTE.search(m) for m in caplog.messages]
    tails = [(int(m.group(2)), int(m.group(1))) for m in notes if m]
    return {"records": [r["offset"] for r in rows if r["error"] is None], "damage": damage,
            "tail": tails[0] if tails else None}  # fmt: skip


def _dump(path: Path, capsys) -> dict:
    from kfmt.tools.cli import main

    capsys.readouterr()
    code = main(["dump", "--json", "--records", "--skip-corrupt", str(path)])
    got = capsys.readouterr()
    rows = [json.loads(line) for line in got.out.splitlines()]
    damage = [(x["position"], x["bytes"]) for x in rows if x["type"] == "problem" and "bytes" in x]
    assert code == (1 if damage else 0), got.err
    m = re.search(r"(\d+) byte\(s\) at byte (\d+) are a batch not yet written completely", got.err)
    return {"records": [x["offset"] for x in rows if x["type"] == "record"], "damage": damage,
            "tail": (int(m.group(2)), int(m.group(1))) if m else None}  # fmt: skip


@pytest.mark.parametrize("i", range(len(LOGS)))
def test_every_reader_sees_the_same_records_and_damage(i, tmp_path, caplog, capsys):
    data = LOGS[i]
    want = _definition(data)
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(data)
    with open(path, "rb") as f:
        chunked = _read_batches(f, len(data))
    seen = {
        "read_batches(bytes)": _read_batches(data, len(data)),
        "read_batches(file)": chunked,
        "read_arrow(bytes)": _read_arrow(data, caplog),
        "read_arrow(log dir)": _read_arrow(str(tmp_path), caplog),
        "kfmt dump": _dump(path, capsys),
    }
    for reader, got in seen.items():
        assert got == want, (reader, data.hex() if len(data) < 3000 else len(data))


def test_the_logs_hold_every_outcome():
    """The corpus above is not all clean: damage, a batch being written, and clean logs all occur."""
    outcomes = [_definition(d) for d in LOGS]
    assert sum(bool(o["damage"]) for o in outcomes) >= 8
    assert sum(o["tail"] is not None for o in outcomes) >= 4
    assert sum(len(o["records"]) for o in outcomes) > 200
