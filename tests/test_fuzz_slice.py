"""A short slice of `make fuzz` in CI: mutated entries of every format in both backends, damaged mixed logs
through scan, and bombs in every codec; any crash fails (and is saved for the suite to replay)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_short_fuzz_campaign_finds_no_crash():
    r = subprocess.run([sys.executable, "fuzz/campaign.py", "--inputs", "300", "--framing", "400"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert ", 0 crashes, peak RSS" in r.stdout
    assert "| mixed logs, damaged framing | scan | 400 | 0 |" in r.stdout
    assert "| bombs (every codec) | read_batches | 24 | 0 |" in r.stdout
