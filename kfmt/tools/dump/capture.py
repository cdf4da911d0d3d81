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


def _counts() -> dict:
    """What is counted of an API's or a connection's messages (a connection's versions as (API, version) pairs)."""
    from collections import Counter

    return {"requests": 0, "responses": 0, "bytes": 0, "versions": set(), "errors": Counter(), "latencies": []}


def _absorbed(mine: dict, theirs: dict) -> None:
    """Another process's :func:`_counts` added to these."""
    for k in ("requests", "responses", "bytes"):
        mine[k] += theirs[k]
    mine["versions"] |= theirs["versions"]
    mine["errors"].update(theirs["errors"])
    mine["latencies"] += theirs["latencies"]


def _counted(counts: dict, versions) -> dict:
    """:func:`_counts` as the JSON summary gives them (``versions`` shaped by the caller)."""
    return {"requests": counts["requests"], "responses": counts["responses"], "bytes": counts["bytes"],
            "versions": versions, "errors": dict(counts["errors"]),
            "latency_ms": latency_percentiles(counts["latencies"])}  # fmt: skip


def _link_versions(pairs) -> dict:
    """A connection's (API, version) pairs as {API: [versions]}."""
    out: dict = {}
    for name, v in sorted(pairs):
        out.setdefault(name, []).append(v)
    return out


def _cells(counts: dict, versions: str) -> list:
    """A row's counts as the text tables show them."""
    lat = latency_percentiles(counts["latencies"])
    return [counts["requests"], counts["responses"], counts["bytes"],
            "/".join(f"{lat[k]:g}" for k in ("p50", "p99", "max")) if lat else "-",
            ",".join(f"{c}x{k}" for k, c in sorted(counts["errors"].items())) or "-", versions]  # fmt: skip


class Summary:
    """What ``--summary`` counts: per API and per connection its requests, responses, bytes, versions (a
    connection's: of each API it uses), latencies and error codes; the topics each client id produced to and
    fetched from, the topics each consumer group committed or fetched offsets of; the versions each broker said it
    supports (ApiVersions); what was checked of the batches on the wire."""

    def __init__(self):
        from collections import defaultdict

        self.apis: dict = defaultdict(_counts)
        self.links: dict = defaultdict(_counts)
        self.produced: dict = defaultdict(set)
        self.fetched: dict = defaultdict(set)
        self.groups: dict = defaultdict(set)
        self.supported: dict = {}
        self.supported_at: dict = {}
        self.connections = 0
        self.batches = {"opened": 0, "crc_checked": 0}  # the record sets' batches: decompressed and read, or
        # checked by their CRC-32C alone (--summary without --deep)

    def state(self) -> dict:
        """What was counted, as plain data (a --jobs share hands it to the first process: :meth:`absorb`); the
        connections are counted by each process alike, and left out."""
        return {"apis": dict(self.apis), "links": dict(self.links),
                "sets": [dict(x) for x in (self.produced, self.fetched, self.groups)],
                "supported": {b: (self.supported_at[b], v) for b, v in self.supported.items()},
                "batches": dict(self.batches)}  # fmt: skip

    def absorb(self, state: dict) -> None:
        """Another process's counts (:meth:`state`) added to these."""
        for mine, theirs in ((self.apis, state["apis"]), (self.links, state["links"])):
            for key, x in theirs.items():
                _absorbed(mine[key], x)
        for sets, more in zip((self.produced, self.fetched, self.groups), state["sets"]):
            for who, topics in more.items():
                sets[who] |= topics
        for k, n in state["batches"].items():
            self.batches[k] += n
        for b, (at, v) in state["supported"].items():
            if at >= self.supported_at.get(b, -1):
                self.supported[b], self.supported_at[b] = v, at

    def add(self, m, body: dict | None, codes: list[int], client: str, broker: str, latency: float | None,
            at: int = 0) -> None:  # fmt: skip
        """Message ``m`` of the connection ``client -> broker`` counted: ``body`` its body's JSON where the summary
        names what is in it (requests of :data:`NAMED` APIs, ApiVersions responses; else None), ``codes`` a
        response's error codes other than 0; ``latency``: a response's, in milliseconds; ``at``: its place in the
        capture, the latest ApiVersions answer counting."""
        a, link = self.apis[m.api_name], self.links[client, broker]
        a["versions"].add(m.api_version)
        link["versions"].add((m.api_name, m.api_version))
        for counts in (a, link):
            counts["requests" if m.kind == "request" else "responses"] += 1
            counts["bytes"] += len(m.frame)
            if m.kind == "response":
                counts["errors"].update(codes)
                if latency is not None:
                    counts["latencies"].append(latency)
        body = body or {}
        if m.kind == "response":
            if m.api_name == "ApiVersions" and body.get("ApiKeys") and at >= self.supported_at.get(broker, -1):
                self.supported[broker] = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in body["ApiKeys"]}
                self.supported_at[broker] = at
        elif m.api_name == "Produce":
            self.produced[m.client_id].update(t.get("Name") or t.get("TopicId") for t in body.get("TopicData") or [])
        elif m.api_name == "Fetch":
            self.fetched[m.client_id].update(t.get("Topic") or t.get("TopicId") for t in body.get("Topics") or [])
        elif m.api_name in ("OffsetCommit", "OffsetFetch"):
            for group in body.get("Groups") or [body]:  # OffsetFetch v8 on: several groups in one request
                self.groups[group.get("GroupId")].update(t.get("Name") for t in group.get("Topics") or [])

    #: the APIs whose requests the summary reads topics and groups from
    NAMED = ("Produce", "Fetch", "OffsetCommit", "OffsetFetch")

    def count(self, m, sets, client: str, broker: str, latency: float | None, at: int = 0) -> None:
        """Message ``m`` counted (:meth:`add`), its record sets read by ``sets`` (kfmt.protocol.records.RecordSets),
        whose batches are counted as it read them; JSON made only of what the summary names."""
        body = None
        if m.kind == "response":
            codes = m.error_codes(sets)
            if m.api_name == "ApiVersions":
                body = m.to_json(records=False)["body"]
        elif m.api_name in self.NAMED:
            codes, body = [], m.to_json(sets=sets)["body"]
        else:
            codes = []
            m.error_codes(sets)  # (its record sets read)
        self.add(m, body, codes, client, broker, latency, at)
        self.batches["opened"] += sets.opened
        self.batches["crc_checked"] += sets.sealed

    def as_dict(self) -> dict:
        return {"connections": self.connections, "batches": dict(self.batches),
                "apis": {n: _counted(a, sorted(a["versions"])) for n, a in sorted(self.apis.items())},
                "links": [{"client": c, "broker": b, **_counted(x, _link_versions(x["versions"]))}
                          for (c, b), x in sorted(self.links.items())],
                "produced": {str(k): sorted(map(str, v)) for k, v in sorted(self.produced.items(), key=_first_str)},
                "fetched": {str(k): sorted(map(str, v)) for k, v in sorted(self.fetched.items(), key=_first_str)},
                "groups": {str(k): sorted(map(str, v)) for k, v in sorted(self.groups.items(), key=_first_str)},
                "topics": self.topics(),
                "supported": {b: {_api_name(k): list(r) for k, r in sorted(v.items())}
                              for b, v in sorted(self.supported.items())}}  # fmt: skip

    def text(self) -> str:
        from kfmt.runtime.tables import table

        counts = ["requests", "responses", "bytes", "latency ms p50/p99/max", "errors (count x code)", "versions"]
        apis = [[n, *_cells(a, ",".join(map(str, sorted(a["versions"]))))] for n, a in sorted(self.apis.items())]
        links = [[c, b, *_cells(x, ", ".join(f"{n} v{','.join(map(str, vs))}"
                                            for n, vs in _link_versions(x["versions"]).items()))]
                 for (c, b), x in sorted(self.links.items())]  # fmt: skip
        lines = [f"{self.connections} connection(s)", table(["api", *counts], apis, False), "",
                 table(["client", "broker", *counts], links, False)]  # fmt: skip
        topics = self.topics()
        if topics:
            lines += ["", table(["topic", "producers (client ids)", "consumers (client ids)", "groups"],
                                [[t, *(", ".join(x[k]) or "-" for k in ("producers", "consumers", "groups"))]
                                 for t, x in topics.items()], False), ""]  # fmt: skip
        lines.append(self.batches_text())
        for b, v in sorted(self.supported.items()):
            named = [(_api_name(k), lo, hi) for k, (lo, hi) in sorted(v.items())]
            used = [f"{name} v{lo}-{hi}" for name, lo, hi in named if name in self.apis]
            lines.append(f"broker {b} supports {len(v)} APIs (each in --json); those this capture uses:")
            lines += _packed(used)
        return "\n".join(lines)

    def topics(self) -> dict:
        """Each topic (a name, or a topic id where the version names topics by id) with the client ids that
        produced to it and fetched from it, and the consumer groups that committed or fetched its offsets."""
        out: dict = {}
        for key, by in (("producers", self.produced), ("consumers", self.fetched), ("groups", self.groups)):
            for who, topics in by.items():
                for t in topics:
                    out.setdefault(str(t), {"producers": set(), "consumers": set(), "groups": set()})[key].add(str(who))
        return {t: {k: sorted(v) for k, v in x.items()} for t, x in sorted(out.items())}

    def batches_text(self) -> str:
        """What was checked of the batches on the wire, in a line."""
        opened, sealed = self.batches["opened"], self.batches["crc_checked"]
        line = f"batches on the wire: {opened + sealed}"
        if sealed:
            return f"{line}, {sealed} checked by their CRC-32C, not decompressed (--deep decompresses and reads them)"
        return f"{line}, each decompressed and its records read"


def _first_str(kv) -> str:
    return str(kv[0])


def _packed(items: list[str], width: int = 118) -> list[str]:
    """``items`` joined by commas into indented lines of at most ``width`` characters, none split."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(item) + 2 <= width:
            lines[-1] += f", {item}"
            continue
        if lines:
            lines[-1] += ","
        lines.append(f"  {item}")
    return lines


def latency_percentiles(values: list[float]) -> dict:
    """p50, p99 and max of response latencies in milliseconds, by the nearest-rank method (the smallest value at
    least that share of the values is at or below); {} for none."""
    import math

    if not values:
        return {}
    ordered = sorted(values)
    rank = {p: ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1] for p in (50, 99)}
    return {"p50": round(rank[50], 3), "p99": round(rank[99], 3), "max": round(ordered[-1], 3)}


def _api_name(key: int) -> str:
    from kfmt.protocol import api

    a = api(key)
    return a.name if a is not None else f"api {key}"


def run(args, out, err) -> int:
    from kfmt.capture import read
    from kfmt.tools.dump.jobs import BROKEN, outlet

    problems = notes = 0
    args.capture_summary = Summary() if args.summary else None
    if args.json and not args.template:  # JSON lines alone on out: written as bytes
        out = jsonl.Lines(out)
    for path in args.paths:
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
    records: bool | str = args.json or args.records or args.template
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


def topic_partitions(node) -> dict:
    """The topics a message's JSON names, in order, each with the partitions it names of it (a list, in order;
    empty where it names none)."""
    return _named(node)[0]


def _named(node) -> tuple[dict, int | None]:
    """:func:`topic_partitions`, and the records its record sets carry (None: it carries none), in one walk."""
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
