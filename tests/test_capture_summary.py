"""`kfmt dump --summary` of a capture counted in one pass in C (kfmt.tools.dump.quick, kfmt.runtime.native._capture's
summarize) is what the definition counts (kfmt.tools.dump.capture with the capture read in Python: the same output
and exit status, text and JSON), on every capture of the corpus: the public ones, one behind every link layer,
captures made here (compressed batches of every codec), damaged copies (which the one pass hands back, or reads
alike); and what the generated check walks tell it of a message (error codes, record sets, the names the summary
reads) is what the message's JSON holds, for every API x version x kind."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import kfmt.capture as C
from kfmt.payloads import backend_env
from kfmt.tools.dump import quick
from kfmt.tools.dump.summary import Summary

pytestmark = pytest.mark.skipif(C._native_capture() is None or backend_env() not in (None, "native"),
                                reason="the one pass is the native backend's (not built, or another is the default)")  # fmt: skip


def _summary(path: Path, how: list[str], monkeypatch, capsys, definition: bool) -> tuple[int, str, str]:
    from kfmt.tools.cli import main

    if definition:
        monkeypatch.setenv("KFMT_CAPTURE_PYTHON", "1")
    else:
        monkeypatch.delenv("KFMT_CAPTURE_PYTHON", raising=False)
    rc = main(["dump", "--summary", *how, str(path)])
    out, err = capsys.readouterr()
    return rc, out, err


def _both(path: Path, monkeypatch, capsys, counted: list) -> None:
    """The summary of ``path``, text and JSON, as the one pass gives it and as the definition does: the same."""
    import kfmt.tools.dump.capture as dc

    real = quick.summarized

    def summarized(*a):  # (whether the one pass counted it: the definition's runs are not asked)
        got = real(*a)
        if not os.environ.get("KFMT_CAPTURE_PYTHON"):
            counted.append(got)
        return got

    monkeypatch.setattr(dc, "summarized", summarized)
    for how in ([], ["--json"], ["--port", "9092", "--json"]):
        mine = _summary(path, how, monkeypatch, capsys, False)
        theirs = _summary(path, how, monkeypatch, capsys, True)
        assert mine == theirs, (path, how)


def test_every_capture_of_the_corpus_summarizes_alike(tmp_path, monkeypatch, capsys):
    from test_capture_spark import corpus

    paths = corpus(tmp_path, 12)
    counted: list[bool] = []
    for p in paths:
        _both(p, monkeypatch, capsys, counted)
    # the one pass counted plain captures itself (the others handed back): a test that compared only definitions
    # would prove nothing
    assert sum(counted) >= 10 and not all(counted), (sum(counted), len(counted))


def test_a_capture_with_compressed_batches_is_counted_in_one_pass(tmp_path, monkeypatch, capsys):
    """The bench's kind of capture (Produce and Fetch exchanges, batches in every codec, frames cut into segments):
    counted in one pass, every batch checked by its CRC, as the definition counts it; a batch whose CRC no longer
    matches is a record set the one pass hands to Python (which reads it whole, and says the damage: then the whole
    capture is the definition's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.bench_capture import make_capture

    cap = tmp_path / "cap.pcap"
    make_capture(cap, 2)
    counted: list[bool] = []
    _both(cap, monkeypatch, capsys, counted)
    assert counted == [True, True, True]
    rc, out, _ = _summary(cap, ["--json"], monkeypatch, capsys, False)
    got = json.loads(out)
    assert rc == 0 and got["batches"]["crc_checked"] > 100 and got["batches"]["opened"] == 0
    assert got["apis"]["Produce"]["requests"] > 10 and got["produced"] and got["fetched"]
    raw = bytearray(cap.read_bytes())
    at = raw.index(b"\x02", len(raw) // 2)  # a byte flipped inside a message of the second half
    while not _inside_a_batch(raw, at):
        at = raw.index(b"\x02", at + 1)
    raw[at + 40] ^= 0xFF
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(raw))
    counted.clear()
    _both(bad, monkeypatch, capsys, counted)
    rc, _, err = _summary(bad, [], monkeypatch, capsys, False)
    assert rc == 1 and "problem" in err and counted and not any(counted)


def _inside_a_batch(raw: bytearray, at: int) -> bool:
    """Whether ``raw[at]`` reads as a v2 batch's magic (its batch length before, 49 bytes of header after)."""
    length = int.from_bytes(raw[at - 8 : at - 4], "big")
    return 49 <= length < 1 << 20 and at + 60 < len(raw)


def test_the_walks_tell_what_each_messages_json_holds():
    """For every API x version x kind (test_protocol's samples: an error code 2 in every ErrorCode, a record set in
    every records field, names in every string): the generated check walk, called as summarize calls it, tells the
    error codes the JSON holds, its record sets, and the names Summary.named reads (the same topics, groups and
    producers as from the JSON), or declines (the message is then read by the definition)."""
    from test_protocol import BATCH, _cases, _json_codes, _sample_body, _write

    from kfmt.protocol import api, read_request, read_response
    from kfmt.protocol.facts import body_of, walk_plan
    from kfmt.runtime.options import DEFAULT_OPTIONS

    native = C._native_capture()
    walked = named = 0
    for kind in ("request", "response"):
        for key, v in _cases():
            name = api(key).name
            frame = _write(key, kind, v, _sample_body(key, kind, v))
            plan = quick._plan_for(kind, key, v)
            if not plan:
                continue
            head, hv, hwant, body, bwant = plan[:5]
            facts = walk_plan(kind, key, v, Summary.NAMED_PATHS.get(name, ()) if kind == "request" else ())[6]
            pos, told_head = native.walk(head, frame, 0, hv, hwant, DEFAULT_OPTIONS)
            end, told = native.walk(body, frame, pos, v, bwant, DEFAULT_OPTIONS) if pos >= 0 else (-1, [])
            m = read_request(frame) if kind == "request" else read_response(frame, key, v)
            if end < 0:
                continue
            walked += 1
            assert end == len(frame), (name, kind, v)
            j = m.to_json(records=False)["body"]
            codes = [p for i, p, _ in told if i == -1]
            assert codes == _json_codes(j), (name, kind, v)
            sets = [bytes(frame[p : p + n]) for i, p, n in told if i == -2]
            assert sets == [BATCH] * json.dumps(j).count('"_batches"'), (name, kind, v)
            if kind == "request":
                ids = [bytes(frame[p : p + n]).decode() if n >= 0 else None for i, p, n in told_head if i >= 0]
                assert (ids or [None]) == [m.client_id], (name, v)  # (header v0 has none)
                if name in Summary.NAMED_PATHS:
                    mine, theirs = Summary(), Summary()
                    values = [(i, bytes(frame[p : p + n]) if n >= 0 else None) for i, p, n in told if i >= 0]
                    mine.named(kind, name, m.client_id, body_of(values, facts), "", 0)
                    theirs.named(kind, name, m.client_id, j, "", 0)
                    assert mine.state()["sets"] == theirs.state()["sets"], (name, v)
                    named += any(mine.state()["sets"])
    assert walked > 400 and named > 20, (walked, named)


def test_port_reads_one_ports_connections_in_one_pass(tmp_path, monkeypatch, capsys):
    """``--port``: the connections of that port counted in one pass, another protocol's connection beside them left
    aside even with a segment missing (it is not read); as the definition counts them, with each port asked."""
    import dpkt
    from test_capture import _pcap

    import kfmt
    import kfmt.protocol as P

    syn, ack = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH
    batch = kfmt.encode_batch([kfmt.Record(key=b"k", value=b"v" * 50)]).hex()
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [
        {"Name": "orders", "PartitionData": [{"Index": 0, "Records": batch}]}]}  # fmt: skip
    req = P.write_request(0, 9, body, correlation_id=7, client_id="shop")
    part = {"Index": 0, "ErrorCode": 6, "BaseOffset": -1, "LogAppendTimeMs": -1, "LogStartOffset": -1,
            "RecordErrors": [], "ErrorMessage": None}  # fmt: skip
    answer = {"Responses": [{"Name": "orders", "PartitionResponses": [part]}], "ThrottleTimeMs": 0}
    resp = P.write_response(0, 9, answer, correlation_id=7)
    framed = [len(x).to_bytes(4, "big") + x for x in (req, resp)]
    path = tmp_path / "two.pcap"
    _pcap(path, [(True, 0, syn, b""), (True, 1, ack, framed[0][:30]), (True, 31, ack, framed[0][30:]),
                 (False, 1, ack, framed[1])],
          more=[(True, 0, syn, b""), (True, 1, ack, b"GET / HTTP/1.1\r\n"), (True, 40, ack, b"Host: x\r\n\r\n")])  # fmt: skip
    for port in (None, 9092, 80, 5000):
        counted: list[bool] = []
        how = [] if port is None else ["--port", str(port)]
        for out in ([], ["--json"]):
            mine = _summary(path, [*how, *out], monkeypatch, capsys, False)
            assert mine == _summary(path, [*how, *out], monkeypatch, capsys, True), (port, out)
        monkeypatch.delenv("KFMT_CAPTURE_PYTHON")  # (the definition's runs set it)
        counted.append(quick.summarized(path, Summary(), _Args(port)))
        assert counted == [port == 9092], port
    rc, out, _ = _summary(path, ["--port", "9092", "--json"], monkeypatch, capsys, False)
    got = json.loads(out)
    assert rc == 0 and got["connections"] == 1 and got["apis"]["Produce"]["errors"] == {"6": 1}
    assert got["produced"] == {"shop": ["orders"]} and got["batches"] == {"opened": 0, "crc_checked": 1}


class _Args:
    def __init__(self, port):
        self.port, self.deep = port, False


def test_raw_sasl_tokens_hand_the_capture_to_the_definition(tmp_path, monkeypatch, capsys):
    """A SaslHandshake v0 (before KIP-152: raw SASL tokens follow, a size and no header) hands the capture back:
    the definition tells the tokens apart; the summary is its."""
    import dpkt
    from test_capture import _pcap

    import kfmt.protocol as P

    syn, ack = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH
    req = P.write_request(17, 0, {"Mechanism": "PLAIN"}, correlation_id=1, client_id="c")
    resp = P.write_response(17, 0, {"ErrorCode": 0, "Mechanisms": ["PLAIN"]}, correlation_id=1)
    token, answer = b"\x00user\x00secret", b""
    up = [len(x).to_bytes(4, "big") + x for x in (req, token)]
    down = [len(x).to_bytes(4, "big") + x for x in (resp, answer)]
    path = tmp_path / "sasl.pcap"
    _pcap(path, [(True, 0, syn, b""), (True, 1, ack, up[0]), (False, 1, ack, down[0]),
                 (True, 1 + len(up[0]), ack, up[1]), (False, 1 + len(down[0]), ack, down[1])])  # fmt: skip
    counted: list[bool] = []
    _both(path, monkeypatch, capsys, counted)
    assert counted and not any(counted)
    rc, out, _ = _summary(path, ["--json"], monkeypatch, capsys, False)
    assert json.loads(out)["apis"]["SaslHandshake"]["requests"] == 1
