"""`kfmt dump CAPTURE.pcapng`: the Kafka traffic of a capture, one line (or, with --json, one object) per request
and response, connection by connection (kfmt.capture puts the connections back together, kfmt.protocol reads
them).

What a capture normally has is a note (a connection already open when the capture began: a response whose
request came before it); what hides bytes is a problem and exit 1 (a segment missing inside a stream, a frame
that does not read, a file cut inside a packet record, a response no request of an opened connection asked for)."""

from __future__ import annotations

import itertools
import json
import os

from kfmt.payloads import json_error_codes
from kfmt.protocol.records import RecordSets
from kfmt.runtime import jsonl
from kfmt.runtime.errors import CodecError
from kfmt.tools.dump.quick import summarized
from kfmt.tools.dump.summary import Summary


def run(args, out, err) -> int:
    from kfmt.capture import read
    from kfmt.tools.dump.jobs import BROKEN, outlet

    problems = notes = 0
    args.capture_summary = Summary() if args.summary else None
    if args.json and not args.template:  # JSON lines alone on out: written as bytes
        out = jsonl.Lines(out)
    for path in args.paths:
        if args.capture_summary is not None and summarized(path, args.capture_summary, args):
            continue  # a plain capture, counted in one pass in C (the same counts)
        try:
            cap = read(path)
        except (CodecError, OSError) as e:
            print(f"kfmt dump: {e}", file=err)
            return 2
        for line in cap.problems:
            print(f"kfmt dump: problem: {line}", file=err)
        problems += len(cap.problems)
        # (another service's traffic, on another port than --port's: not asked for)
        conns = [c for c in cap.connections if args.port is None or args.port in (c.server[1], c.client[1])]
        sink = outlet(args, out, err, os.path.getsize(path))
        try:
            for conn in conns:
                _connection(conn, args, sink)
            sink.finish()
        except BrokenPipeError:  # the output's reader went away (`| head`): as one process's dump ends then
            sink.abandon(BROKEN)
            raise
        except OSError as e:
            if BROKEN in sink.abandon():
                raise BrokenPipeError from None
            print(str(e) if str(e).startswith("kfmt dump: ") else f"kfmt dump: {e}", file=err)
            return 2
        except BaseException:
            sink.abandon()
            raise
        problems, notes = problems + sink.problems, notes + sink.notes
    summary = args.capture_summary
    if summary is not None:
        if args.json:
            out.put(summary.as_dict() | {"problems": problems, "notes": notes})
        else:
            print(summary.text(), file=out)
    if not args.json and not args.template:
        print(f"{problems} problem(s), {notes} note(s)", file=out)
    return 1 if problems else 0


def _connection(conn, args, sink) -> None:
    """One connection's messages printed, and what it says said (``sink``: a kfmt.tools.dump.jobs.Outlet)."""
    from kfmt.capture import exchanges_of
    from kfmt.protocol.conversation import Conversation

    if args.port is not None and conn.client[1] == args.port:  # opened before the capture, its sides by the port
        conn.client, conn.server, conn.to_server, conn.to_client = (
            conn.server,
            conn.client,
            conn.to_client,
            conn.to_server,
        )
    client, broker = f"{conn.client[0]}:{conn.client[1]}", f"{conn.server[0]}:{conn.server[1]}"
    link = f"{client} -> {broker}"
    conv = Conversation()
    given = exchanges_of(conn, conv)
    first = next(given, None)
    if args.capture_summary is not None:
        args.capture_summary.connections += 1
    # nothing reads as Kafka's: another protocol, unless the broker's side is whole frames (then the client's
    # first frame is damaged, and what does not read is said as problems)
    kafka_answers = conv.frames.get("server", 0) > 0 and not conv.tails.get("server")
    if args.port is None and first is None and not conv.tokens and not kafka_answers:
        size = len(conn.to_server.data) + len(conn.to_client.data)
        sink.say("note", f"{link}: not Kafka traffic (no frame reads as a request; {size} byte(s)); --port says which "
                 "connections are")  # fmt: skip
        return
    if not args.json and not args.template and args.capture_summary is None:
        sink.text(f"== {link}{'' if conn.opened else ' (open before the capture began)'}\n")
    for x in itertools.chain([first] if first is not None else [], given):  # each printed as the reading goes
        asked = conn.to_server.packet_at(x.request_position)
        if sink.begin(len(x.request.frame)):  # (a message of another process's share: read, not written here)
            _message(x.request, client, broker, asked, None, args, sink)
        if x.response is not None and sink.begin(len(x.response.frame)):
            answered = conn.to_client.packet_at(x.response_position)
            _message(x.response, client, broker, answered, _latency(asked, answered), args, sink)
    _said_of(conn, conv, link, sink)


def _said_of(conn, conv, link: str, sink) -> None:
    """What a connection read says of itself: where it began inside a message, what does not read, its holes."""
    for side, n in conv.skipped.items():
        if n:  # the capture began inside a message: what captures normally have
            sink.say("note", f"{link}: the {side}'s first {n} byte(s) are the end of a message that began before the "
                     "capture (skipped; read from the first whole frame)")  # fmt: skip
    for line in conv.problems:
        unasked = "which no request of this connection carries" in line
        sink.say("note" if unasked and not conn.opened else "problem", f"{link}: {line}")  # (a note: its request
        # went before the capture began)
    for side, hole, at, before, after in conv.resumed:  # a segment the capture lacks: what it hides, said
        sink.say("problem", f"{link}: the {side}'s bytes lack {at - hole} byte(s) from byte {hole} (a segment the "
                 f"capture lacks): the message across the gap is unread ({before} byte(s) of it before the gap, "
                 f"{after} after it), read on from byte {at + after}")  # fmt: skip


def _message(m, client: str, broker: str, packet, latency: float | None, args, sink) -> None:
    """One message printed: ``packet`` (number, time) of the packet where it starts, ``latency`` in milliseconds
    from its request's first packet to this response's (None for requests); then what the message says of itself:
    a damaged record set inside it hides records, a problem; bytes after it that Kafka leaves unread, or KIP-511's
    fallback, notes."""
    if args.capture_summary is not None:  # counted; a summary's batches checked by their CRCs unless --deep
        sets = RecordSets(m.backend, records=False if args.deep else "crc", hex=False)
        args.capture_summary.count(m, sets, client, broker, latency, sink.index)
        _said(m, m.notes + sets.problems, client, broker, sink)
        return
    records: bool | str = bool(args.json or args.records or args.template)
    if records and args.json and not args.records and not args.template:  # the message written out whole
        records = "text"
    j = m.to_json(sets=RecordSets(m.backend, records=records, hex=bool(args.json)))  # (a line shows no hex)
    number, when = packet if packet is not None else (None, None)
    if args.records or args.template:
        _records(m, j, client, broker, number, when, args, sink)
    elif args.json:
        head = {"time": when, "frame": number, "client": client, "broker": broker, "kind": j["kind"], "api": j["api"],
                "api_key": j["api_key"], "version": j["version"], "correlation_id": m.correlation_id}  # fmt: skip
        head |= {"client_id": m.client_id} if m.kind == "request" else {"latency_ms": _ms(latency)}
        sink.put(head | j)
    else:
        _line(m, j, number, when, latency, sink)
    _said(m, j.get("notes", []), client, broker, sink)


def _said(m, notes: list[str], client: str, broker: str, sink) -> None:
    """What a message says of itself (``notes``: its to_json()'s): what did not decode in its body (a damaged
    record set: Message.problems) a problem, the rest notes."""
    which = f"{m.api_name} v{m.api_version} {m.kind} (correlation id {m.correlation_id})"
    damaged = m.problems({"notes": notes})
    for n in notes:
        sink.say("problem" if n in damaged else "note", f"{client} -> {broker}: {which}: {n}")


def _line(m, j: dict, number, when, latency: float | None, sink) -> None:
    size = len(m.frame)
    who = f"client_id {m.client_id!r}  " if m.kind == "request" else ""
    errors = sorted(set(json_error_codes(j["body"]))) if m.kind == "response" else []
    said = f"  errors {','.join(map(str, errors))}" if errors else ""
    took = f"  {_ms(latency)} ms" if latency is not None else ""
    sink.text(f"{_clock(when)} #{number}  {m.kind:<8} {m.api_name} v{m.api_version}  correlation_id {m.correlation_id}  "
              f"{who}{size} B{took}{said}{where_text(j['body'])}\n")  # fmt: skip


#: the keys naming a message's topic (a name, or a topic id) and partition in Kafka's JSON; "Name" names a topic
#: inside a list of topics (its key says topics, or it is Produce's and DeleteTopics' "Responses")
TOPIC_KEYS, PARTITION_KEYS = ("Topic", "TopicName", "TopicId"), ("Index", "PartitionIndex", "Partition")


def placed(node, topic=None, partition=None, under: str = ""):
    """``(topic, partition, struct)`` of every struct in a message's JSON (``to_json()["body"]``), each with the
    topic and partition it is of (named by it or by the structs around it; None where none is); ``under``: the
    key of the list or struct it is in."""
    if type(node) is list:
        for x in node:
            if type(x) is dict:
                yield from placed(x, topic, partition, under)
        return
    if type(node) is not dict:  # (a body Kafka does not read: None)
        return
    names = ("Name", *TOPIC_KEYS) if "Topic" in under or under == "Responses" else TOPIC_KEYS
    topic = next((v for k in names if type(v := node.get(k)) is str), topic)
    partition = next((v for k in PARTITION_KEYS if type(v := node.get(k)) is int), partition)
    yield topic, partition, node
    for k, v in node.items():
        if (type(v) is list or type(v) is dict) and not k.startswith("_"):
            yield from placed(v, topic, partition, k)


def record_sets(node):
    """``(topic, partition, batches)`` of each record set in a message's JSON, the batches as ``_batches`` shapes
    them (kfmt.protocol.records)."""
    return ((t, p, x["_batches"]) for t, p, x in placed(node) if "_batches" in x)


def _named(node) -> tuple[dict, int | None]:
    """The topics a message's JSON names, in order, each with the partitions it names of it (a list, in order;
    empty where it names none), and the records its record sets carry (None: it carries none), in one walk."""
    found: dict = {}
    records = None
    for t, p, x in placed(node):
        if "_batches" in x:
            records = (records or 0) + sum(b.get("record_count", 0) for b in x["_batches"])
        if t is None:
            continue
        parts = found.setdefault(t, [])
        for q in ([p] if p is not None else []) + [i for i in x.get("PartitionIndexes") or () if type(i) is int]:
            if q not in parts:
                parts.append(q)
    return found, records


def _runs(numbers: list[int]) -> str:
    """Partitions as runs: [0, 1, 2, 5] -> "0-2,5"."""
    out: list[str] = []
    ordered = sorted(numbers)
    start = prev = ordered[0]
    for n in ordered[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def where_text(body) -> str:
    """A message's topics and partitions and the records it carries, as its text line ends: "  orders[0-2,5]
    payments  records 300" ("" for none)."""
    named, records = _named(body)
    text = "".join(f"  {t}[{_runs(ps)}]" if ps else f"  {t}" for t, ps in named.items())
    return text + (f"  records {records}" if records is not None else "")


def _records(m, j: dict, client: str, broker: str, number, when, args, sink) -> None:
    """``--records``: the records a message carries (Produce requests, Fetch responses...), a line each as ``kfmt
    dump --records`` shows a log's (with --json, an object each: the capture's columns, its packet's time as
    ``packet_time``, and the record's; with --template, each through the kcat-style template)."""
    from kfmt.tools.dump.show import template_json_line

    for topic, partition, batches in record_sets(j["body"]):
        for b in batches:
            for r in b["records"]:
                if args.template:
                    sink.text(template_json_line(args.template, topic, partition, r))
                    continue
                if args.json:
                    head = {"packet_time": when, "frame": number, "client": client, "broker": broker, "kind": m.kind,
                            "api": m.api_name, "version": m.api_version, "topic": topic, "partition": partition}  # fmt: skip
                    sink.put(head | r)
                    continue
                sink.text(f"{_clock(when)} #{number}  {m.kind:<8} {m.api_name} v{m.api_version}  {topic} {partition} "
                          f"offset {r['offset']} {r['time'] or r['timestamp']}  keySize {r['key_size']} valueSize "
                          f"{r['value_size']}  key {json.dumps(r['key'])} value {json.dumps(r['value'])}\n")  # fmt: skip


def _latency(asked, answered) -> float | None:
    """Milliseconds from a request's packet to its response's (``(number, time)`` each); None where a time is not
    known (no packet, or a pcapng simple packet block, which has none)."""
    if asked is None or answered is None or asked[1] is None or answered[1] is None:
        return None
    return (answered[1] - asked[1]) * 1000


def _ms(latency: float | None) -> float | None:
    return None if latency is None else round(latency, 3)


def _clock(when: float | None) -> str:
    """A packet's time as the text lines give it: UTC, to the microsecond."""
    import datetime

    if when is None:
        return "-"
    return datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%H:%M:%S.%f")
