"""Header keys that are not UTF-8, read as Kafka reads them (#34 item 13).

Kafka decodes a header key with Java's ``new String(bytes, UTF_8)``: each ill-formed sequence becomes U+FFFD by
Java's decoder's rules, which are not Python's ``errors="replace"``: an encoded surrogate (``ED A0 80``) is one
U+FFFD in Java and three in Python, and a cut sequence at the end may be one where Python gives two. JAVA below is
Java 17's output (OpenJDK 17, ``new String(b, 0, b.length, StandardCharsets.UTF_8)``, UTF-16 code units in hex),
recorded on 2026-11-26 for the examples of the Unicode Standard's section 3.9 (U+FFFD substitution, tables 3-8
to 3-11), the boundaries of its table 3-7 (well-formed byte sequences) and cut sequences. Where a JDK is here,
random sequences are also checked against Java run live.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest

import kfmt
from kfmt.runtime.text import java_utf8

JAVA = {
    "61F18080E180C262806380BF64": "0061 FFFD FFFD FFFD 0062 FFFD 0063 FFFD FFFD 0064",
    "C0AFE080BFF0818241": "FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD 0041",
    "EDA080EDBFBFEDAF41": "FFFD FFFD FFFD 0041",
    "F4919293FF4180BF42": "FFFD FFFD FFFD FFFD FFFD 0041 FFFD FFFD 0042",
    "E180E2F09192F1BF41": "FFFD FFFD FFFD FFFD 0041",
    "EDA080": "FFFD", "EDBFBF": "FFFD", "EDA0": "FFFD", "ED9FBF": "D7FF", "EE8080": "E000",
    "C280": "0080", "C1BF": "FFFD FFFD", "DFBF": "07FF", "E0A080": "0800", "E09FBF": "FFFD FFFD FFFD",
    "EFBFBF": "FFFF", "F0908080": "D800 DC00", "F08FBFBF": "FFFD FFFD FFFD FFFD", "F48FBFBF": "DBFF DFFF",
    "F4908080": "FFFD FFFD FFFD FFFD", "F5808080": "FFFD FFFD FFFD FFFD", "F8888080": "FFFD FFFD FFFD FFFD",
    "FF": "FFFD", "FE": "FFFD", "80": "FFFD", "BF": "FFFD", "E0": "FFFD", "E0A0": "FFFD", "F0": "FFFD",
    "F090": "FFFD", "F09080": "FFFD", "F1808041": "FFFD 0041", "6869": "0068 0069",
}  # fmt: skip


def _units(s: str) -> str:
    """UTF-16 code units in hex, as Java's String holds them."""
    b = s.encode("utf-16-be", "surrogatepass")
    return " ".join(b[i : i + 2].hex().upper() for i in range(0, len(b), 2))


@pytest.mark.parametrize("raw", sorted(JAVA))
def test_as_java_decodes(raw):
    assert _units(java_utf8(bytes.fromhex(raw))) == JAVA[raw]


def test_python_differs_where_java_does():
    """The cases that make Java's rules matter: Python's own replacement gives other text."""
    differ = [r for r in JAVA if bytes.fromhex(r).decode("utf-8", "replace") != java_utf8(bytes.fromhex(r))]
    assert {"EDA080", "EDA080EDBFBFEDAF41", "EDA0", "EDBFBF"} <= set(differ)


def _log_with_keys(keys: list[bytes]) -> bytes:
    recs = [kfmt.Record(value=b"v", headers=[(k.decode("utf-8", "surrogateescape"), b"x")], timestamp=1) for k in keys]
    return kfmt.encode_batch(recs)


def test_every_reader_and_tool_reads_keys_as_kafka(tmp_path):
    """read_arrow (native sink and object path alike: a key that is not UTF-8 takes the object path) and
    kfmt dump --json (the bytes, and the text Kafka reads beside them)."""
    keys = [bytes.fromhex(r) for r in sorted(JAVA)]
    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{0:020d}.log").write_bytes(_log_with_keys(keys))
    table = kfmt.read_arrow(str(part))
    got = [h[0]["key"] for h in table.column("headers").to_pylist()]
    assert [_units(k) for k in got] == [JAVA[r] for r in sorted(JAVA)]
    r = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--records", "--json", str(part)], capture_output=True)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(line) for line in r.stdout.decode("utf-8").splitlines() if '"record"' in line]
    for raw, rec in zip(sorted(JAVA), recs, strict=True):
        key = rec["headers"][0][0]
        if isinstance(key, dict):
            assert key["hex"] == raw.lower() and _units(key["kafka"]) == JAVA[raw]
        else:
            assert key.encode() == bytes.fromhex(raw)
    text = subprocess.run([sys.executable, "-m", "kfmt", "dump", "--records", str(part)], capture_output=True)
    text.stdout.decode("utf-8")  # the table is UTF-8 whatever the keys hold: bytes that are not are shown as 0x...
    assert b"0xeda080=" in text.stdout


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK here")
def test_random_sequences_as_java_run_live(tmp_path):
    src = tmp_path / "Dec.java"
    src.write_text(
        "import java.io.*; import java.nio.charset.StandardCharsets;\n"
        "public class Dec { public static void main(String[] a) throws Exception {\n"
        "  BufferedReader r = new BufferedReader(new InputStreamReader(System.in)); StringBuilder o = new StringBuilder();\n"
        "  for (String l; (l = r.readLine()) != null; ) { byte[] b = new byte[l.length() / 2];\n"
        "    for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(l.substring(2 * i, 2 * i + 2), 16);\n"
        "    String s = new String(b, 0, b.length, StandardCharsets.UTF_8);\n"
        '    for (int i = 0; i < s.length(); i++) o.append(i > 0 ? " " : "").append(String.format("%04X", (int) s.charAt(i)));\n'
        "    o.append('\\n'); }\n"
        "  System.out.print(o); } }\n"
    )
    subprocess.run(["javac", "-d", str(tmp_path), str(src)], check=True, capture_output=True)
    rng = random.Random(13)
    bytes_ = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF1,
              0xF4, 0xF5, 0xF7, 0xF8, 0xFF]  # fmt: skip
    cases = [bytes(rng.choice(bytes_) for _ in range(rng.randint(1, 6))) for _ in range(5000)]
    out = subprocess.run(["java", "-cp", str(tmp_path), "Dec"], input="".join(c.hex() + "\n" for c in cases),
                         capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    wrong = [(c.hex(), o, _units(java_utf8(c))) for c, o in zip(cases, out, strict=True) if _units(java_utf8(c)) != o]
    assert not wrong, wrong[:5]
