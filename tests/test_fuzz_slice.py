"""A short slice of `make fuzz` in CI: mutated entries of every format in both backends, damaged mixed logs
through scan, mutated keys and values of Kafka's own topics through the message schemas' codecs, bombs in
every codec and amplification cases (with their peak RSS); any crash fails (and is saved for the suite to
replay)."""

import re
import subprocess
import sys
from pathlib import Path

import kfmt

ROOT = Path(__file__).resolve().parent.parent


def test_short_fuzz_campaign_finds_no_crash():
    """The campaign's stages at a slice of their inputs; its amplification cases are tests/test_memory.py's (the
    same three, with their growth checked there)."""
    r = subprocess.run([sys.executable, "fuzz/campaign.py", "--inputs", "150", "--framing", "200", "--payloads", "1500",
                        "--no-amplification"], cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert ", 0 crashes, peak RSS" in r.stdout
    from kfmt.codec.formats import available_backends

    names = "python, construct" + (", native" if "native" in available_backends() else "")
    assert f"| kafka payloads (messages schemas) | {names} | 1,500 | 0 |" in r.stdout
    assert "| mixed logs, damaged framing | scan | 200 | 0 |" in r.stdout
    assert "| bombs (every codec) | read_batches | 24 | 0 |" in r.stdout
    assert not [ln for ln in r.stdout.splitlines() if ln.startswith("| amplification: ")]
    for ln in [ln for ln in r.stdout.splitlines() if ln.startswith("| bombs")]:
        grown = float(ln.rstrip(" |").rsplit("+", 1)[1].split()[0])
        assert grown < 256 + 60, ln  # MB: the 256 MiB limits plus a constant


def test_short_sanitized_native_campaign():
    """A slice of `make fuzz-native`: the C extensions built with AddressSanitizer and UBSan, mutated entries of
    every format decoded with them and compared with the python backend, damaged logs through scan, mutated
    payloads of Kafka's own topics through the message schemas' C decoders, mutated Produce and Fetch frames
    through the protocol's. Built at -O0 (a fifth of -O1's
    build time, every access still instrumented); the full campaign builds at -O1."""
    import pytest

    from kfmt.codec.formats import available_backends

    if "native" not in available_backends():
        pytest.skip("the native backend is not built here")
    r = subprocess.run([sys.executable, "fuzz/sanitized.py", "--inputs", "600", "--framing", "200", "--payloads",
                        "600", "--opt", "0", "--protocol", "5000", "--apis", "0,1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert ", 0 crashes, peak RSS" in r.stdout
    assert "sanitized native build (ASan + UBSan" in r.stdout and "instrumented: yes" in r.stdout
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| ") and "| native | 600 | 0 |" in ln]
    assert len(rows) == len(kfmt.format_ids()), r.stdout
    assert "| kafka payloads (messages schemas) | python, construct, native | 600 | 0 |" in r.stdout
    assert "## protocol fuzz: 5,000 frames of 2 APIs in " in r.stdout  # Produce and Fetch, sanitized
    assert r.stdout.count(", 0 crashes, peak RSS") == 2


def test_short_capture_damage_campaign():
    """A slice of `make fuzz-capture`: the public captures damaged (packets twice, swapped, dropped, the file cut, a
    byte flipped), each copy read by kfmt dump and held to what it reads from the whole capture, and its summary
    (batches checked by their CRCs alone) held to what --json says of it (a summary that took a damaged batch for
    a sound one is a breach here: seen with the CRC check taken out) and to the definition's summary byte for byte
    (the one pass in C that counts plain copies: a count off by one there is 38 breaches)."""
    r = subprocess.run([sys.executable, "fuzz/capture.py", "--rounds", "15", "--seed", "11"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert re.search(r"^\d+ damaged copies, 0 breach\(es\)$", r.stdout, re.M), r.stdout
    rows = dict(re.findall(r"^\| (\w+) \| (\d+) \| \d+ \| 0 \|$", r.stdout, re.M))
    assert set(rows) == {"duplicate", "swap", "drop", "cut", "flip"} and min(map(int, rows.values())) >= 20


def test_short_protocol_fuzz_campaign():
    """A slice of `make fuzz-protocol`: mutated frames of every API x version x kind read by python and native
    (construct for a share): no crash, one-line errors, every frame read re-encoded to its bytes, the backends
    agreeing."""
    r = subprocess.run([sys.executable, "fuzz/protocol.py", "--frames", "10000", "--seed", "7"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert "## protocol fuzz: 10,000 frames of " in r.stdout and ", 0 crashes," in r.stdout
