"""`kfmt dump CAPTURE.pcapng`: the Kafka traffic of a capture, one line (or, with --json, one object) per request
and response, connection by connection (kfmt.capture puts the connections back together, kfmt.protocol reads
them).

What a capture normally has is a note (a connection already open when the capture began: a response whose
request came before it); what hides bytes is a problem and exit 1 (a segment missing inside a stream, a frame
that does not read, a file cut inside a packet record, a response no request of an opened connection asked for)."""

from __future__ import annotations

import json
from pathlib import Path

from kfmt.runtime.errors import CodecError

PCAP_MAGICS = (b"\x0a\x0d\x0d\x0a", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")


def is_capture(path: str) -> bool:
    """Whether ``path`` is a pcap or pcapng file (by its first four bytes)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            return p.is_file() and f.read(4) in PCAP_MAGICS
    except OSError:
        return False


def run(args, out, err) -> int:
    from kfmt.capture import read

    problems = notes = 0
    for path in args.paths:
        try:
            cap = read(path)
        except (CodecError, OSError) as e:
            print(f"kfmt dump: {e}", file=err)
            return 2
        for line in cap.problems:
            print(f"kfmt dump: problem: {line}", file=err)
        problems += len(cap.problems)
        for conn in cap.connections:
            if args.port is not None and args.port not in (conn.server[1], conn.client[1]):
                continue  # another service's traffic: not asked for
            p, n = _connection(conn, args, out, err)
            problems, notes = problems + p, notes + n
    if not args.json:
        print(f"{problems} problem(s), {notes} note(s)", file=out)
    return 1 if problems else 0


def _connection(conn, args, out, err) -> tuple[int, int]:
    """One connection's messages printed; (problems, notes) said."""
    from kfmt.protocol.conversation import read_conversation

    if args.port is not None and conn.client[1] == args.port:  # opened before the capture, its sides by the port
        conn.client, conn.server, conn.to_server, conn.to_client = (
            conn.server,
            conn.client,
            conn.to_client,
            conn.to_server,
        )
    client, broker = f"{conn.client[0]}:{conn.client[1]}", f"{conn.server[0]}:{conn.server[1]}"
    conv = read_conversation(conn.to_server.data, conn.to_client.data)
    if args.port is None and not conv.exchanges and not conv.tokens:  # nothing reads as Kafka's: another protocol
        size = len(conn.to_server.data) + len(conn.to_client.data)
        print(f"kfmt dump: note: {client} -> {broker}: not Kafka traffic (no frame reads as a request; {size} "
              "byte(s)); --port says which connections are", file=err)  # fmt: skip
        return 0, 1
    if not args.json:
        print(f"== {client} -> {broker}{'' if conn.opened else ' (open before the capture began)'}", file=out)
    for x in conv.exchanges:
        for m in (x.request, x.response):
            if m is not None:
                _message(m, client, broker, args, out)
    problems = notes = 0
    for line in conv.problems:
        unasked = "which no request of this connection carries" in line
        if unasked and not conn.opened:  # its request went before the capture began
            notes += 1
            print(f"kfmt dump: note: {client} -> {broker}: {line}", file=err)
        else:
            problems += 1
            print(f"kfmt dump: problem: {client} -> {broker}: {line}", file=err)
    for side, d in (("client", conn.to_server), ("broker", conn.to_client)):
        if d.hole_at is not None:
            problems += 1
            print(f"kfmt dump: problem: {client} -> {broker}: the {side}'s bytes have a hole at byte {d.hole_at} (a "
                  f"segment the capture lacks): {d.after_hole} byte(s) after it unread", file=err)  # fmt: skip
    return problems, notes


def _message(m, client: str, broker: str, args, out) -> None:
    if args.json:
        j = m.to_json()
        print(json.dumps({"client": client, "broker": broker, **j}, default=str), file=out)
        return
    size = len(m.encode())
    who = f"client_id {m.client_id!r}  " if m.kind == "request" else ""
    errors = sorted(set(_error_codes(m.to_json()["body"]))) if m.kind == "response" else []
    said = f"  errors {','.join(map(str, errors))}" if errors else ""
    print(f"{m.kind:<8} {m.api_name} v{m.api_version}  correlation_id {m.correlation_id}  {who}{size} B{said}",
          file=out)  # fmt: skip


def _error_codes(node):
    """The error codes other than 0 anywhere in a message's JSON."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "ErrorCode" and isinstance(v, int) and v:
                yield v
            else:
                yield from _error_codes(v)
    elif isinstance(node, list):
        for v in node:
            yield from _error_codes(v)
