"""`kfmt dump --summary CAPTURE`: what a capture's messages are counted into (:class:`Summary`), per API and per
connection, topic by topic, and what its brokers said they support; written as a text report or JSON."""

from __future__ import annotations


def _counts() -> dict:
    """What is counted of an API's or a connection's messages (a connection's versions as (API, version) pairs)."""
    from array import array
    from collections import Counter

    return {
        "requests": 0,
        "responses": 0,
        "bytes": 0,
        "versions": set(),
        "errors": Counter(),
        "latencies": array("d"),
    }  # (8 bytes a response: percentiles are exact)


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
        names what is in it (requests of :data:`NAMED` APIs, ApiVersions responses; else None), ``codes`` its
        error codes other than 0 (a response's counted); ``latency``: a response's, in milliseconds; ``at``: its
        place in the capture, the latest ApiVersions answer counting."""
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
        self.named(m.kind, m.api_name, m.client_id if m.kind == "request" else None, body or {}, broker, at)

    def named(self, kind: str, api_name: str, client_id, body: dict, broker: str, at: int) -> None:
        """What a message's body names counted: the topics a client id produced to or fetched from, the groups and
        their topics, what a broker said it supports (``body``: the JSON :meth:`add` is given, those keys at least:
        :data:`NAMED_PATHS`)."""
        if kind == "response":
            if api_name == "ApiVersions" and body.get("ApiKeys") and at >= self.supported_at.get(broker, -1):
                self.supported[broker] = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in body["ApiKeys"]}
                self.supported_at[broker] = at
        elif api_name == "Produce":
            self.produced[client_id].update(t.get("Name") or t.get("TopicId") for t in body.get("TopicData") or [])
        elif api_name == "Fetch":
            self.fetched[client_id].update(t.get("Topic") or t.get("TopicId") for t in body.get("Topics") or [])
        elif api_name in ("OffsetCommit", "OffsetFetch"):
            for group in body.get("Groups") or [body]:  # OffsetFetch v8 on: several groups in one request
                self.groups[group.get("GroupId")].update(t.get("Name") for t in group.get("Topics") or [])

    #: the APIs whose requests the summary reads topics and groups from
    NAMED = ("Produce", "Fetch", "OffsetCommit", "OffsetFetch")
    #: the paths of those requests' JSON :meth:`named` reads (kfmt.protocol.facts: what a walk in C tells of them)
    NAMED_PATHS = {
        "Produce": ("TopicData[].Name", "TopicData[].TopicId"),
        "Fetch": ("Topics[].Topic", "Topics[].TopicId"),
        "OffsetCommit": ("GroupId", "Topics[].Name", "Groups[].GroupId", "Groups[].Topics[].Name"),
        "OffsetFetch": ("GroupId", "Topics[].Name", "Groups[].GroupId", "Groups[].Topics[].Name"),
    }

    def count(self, m, sets, client: str, broker: str, latency: float | None, at: int = 0) -> None:
        """Message ``m`` counted (:meth:`add`), its record sets read by ``sets`` (kfmt.protocol.records.RecordSets),
        whose batches are counted as it read them; JSON made only of what the summary names (the error codes read
        from it then), the body read once either way."""
        from kfmt.payloads import json_error_codes

        if m.api_name == "ApiVersions" if m.kind == "response" else m.api_name in self.NAMED:
            body = m.to_json(sets=sets)["body"]
            codes = json_error_codes(body)
        else:
            body, codes = None, m.error_codes(sets)
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


def latency_percentiles(values) -> dict:
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
