"""A fault-injecting HTTP proxy for the tests, on 127.0.0.1 in front of the loopback S3 server.

Each request is forwarded, or (by a seeded draw, for the request kinds named) answered with a fault:
``reset`` (the connection is closed with no answer), ``5xx`` (500 InternalError or 503 SlowDown, by the same
seeded draws, not forwarded), ``drop`` (an
upload forwarded with an empty body, and the server's success passed back: a store that acknowledged
what it did not keep), ``truncate`` (half the body forwarded, success passed back).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import random
import socket
import threading
from urllib.parse import urlparse

FAULTS = ("reset", "5xx", "drop", "truncate")
ANSWERS = [(500, b"InternalError", b"We encountered an internal error. Please try again."),
           (503, b"SlowDown", b"Please reduce your request rate.")]  # fmt: skip


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 20  # a client that stops sending does not hold a thread forever
    server: _Proxy

    def log_message(self, *args):  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        body = self._body()
        fault = self.server.draw(self.command, body)
        if fault == "reset":
            self.server.faults.append((fault, self.command, self.path))
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if fault in ("500", "503"):
            status, code, text = next(a for a in ANSWERS if str(a[0]) == fault)
            self.server.faults.append(("5xx", self.command, self.path))
            msg = b"<Error><Code>%s</Code><Message>%s (injected)</Message></Error>" % (code, text)
            self.send_response(status)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        if fault in ("drop", "truncate"):
            self.server.faults.append((fault, self.command, self.path))
            body = b"" if fault == "drop" else body[: len(body) // 2]
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("content-length", "transfer-encoding", "content-md5", "connection",
                                        "x-amz-decoded-content-length", "content-encoding")}  # fmt: skip
        if fault in ("drop", "truncate"):
            headers = {k: v for k, v in headers.items() if not k.lower().startswith("x-amz-checksum")}
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(self.server.target[0], self.server.target[1], timeout=30)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        # a HEAD answer has no body but says the object's length
        self.send_header(
            "Content-Length", resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


class _Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target: str, rate: float, kinds, seed: int):
        super().__init__(("127.0.0.1", 0), _Handler)
        u = urlparse(target)
        self.target = (u.hostname, u.port)
        self.rate, self.kinds, self.rng = rate, tuple(kinds), random.Random(seed)
        self.faults: list = []
        self.lock = threading.Lock()

    def draw(self, method: str, body: bytes) -> str | None:
        with self.lock:
            if self.rate <= 0 or self.rng.random() >= self.rate:
                return None
            kind = self.rng.choice(self.kinds)
            if kind == "5xx":
                kind = self.rng.choice(("500", "503"))
        if kind in ("drop", "truncate") and not (method in ("PUT", "POST") and body):
            return None  # only uploads with a body can lose it
        return kind


@contextlib.contextmanager
def fault_proxy(target: str, rate: float = 0.1, kinds=FAULTS, seed: int = 1):
    """Yields the proxy (its ``endpoint``, ``faults`` injected so far, and ``rate``, which may be changed)."""
    p = _Proxy(target, rate, kinds, seed)
    p.endpoint = f"http://127.0.0.1:{p.server_address[1]}"  # type: ignore[attr-defined]
    t = threading.Thread(target=p.serve_forever, daemon=True)
    t.start()
    try:
        yield p
    finally:
        p.shutdown()
        p.server_close()
