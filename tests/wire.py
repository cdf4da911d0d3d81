"""Real Kafka traffic for the tests, made here: librdkafka's mock cluster on 127.0.0.1 (started by a
confluent-kafka client with ``test.mock.num.brokers``), real clients talking to it, the loopback captured by
Debian's dumpcap and cut into TCP streams by tshark's "follow" (both from Debian's Wireshark, neither kfmt).

Nothing here decodes Kafka: the streams are bytes as they crossed the socket, each direction of a connection
in order, so the test judges kfmt against what real clients and a real broker implementation sent."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path


def tools_missing() -> str | None:
    """Why traffic cannot be made here (None: it can)."""
    for exe in ("dumpcap", "tshark"):
        if shutil.which(exe) is None:
            return f"{exe} is not installed (Debian's tshark package; make setup installs it where it may)"
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return "confluent-kafka is not installed"
    return None


@contextmanager
def mock_cluster():
    """(the client holding the mock cluster, its broker's "host:port")."""
    import confluent_kafka

    holder = confluent_kafka.Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "", "log_level": 3})
    md = holder.list_topics(timeout=20)
    (broker,) = md.brokers.values()
    try:
        yield holder, f"{broker.host}:{broker.port}"
    finally:
        holder.flush(5)
        del holder


@contextmanager
def capture(port: int, path: Path):
    """dumpcap on the loopback for TCP to and from ``port``, into ``path`` (pcapng), from when it says it captures
    until the block ends and it has written what it saw."""
    p = subprocess.Popen(["dumpcap", "-i", "lo", "-f", f"tcp port {port}", "-w", str(path), "-q"],
                         stderr=subprocess.PIPE, text=True)  # fmt: skip
    said = []
    deadline = time.time() + 30
    assert p.stderr is not None
    while time.time() < deadline:
        line = p.stderr.readline()
        said.append(line)
        if "Capturing on" in line or not line:
            break
    if p.poll() is not None:
        raise RuntimeError(f"dumpcap did not start: {''.join(said)}")
    time.sleep(0.5)  # the capture filter is in place once it says so; a margin for the first packets
    try:
        yield path
    finally:
        time.sleep(0.5)  # the last segments (a FIN, a delayed ACK) reach the capture
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)


def tcp_streams(pcap: Path, port: int | set[int], opened_only: bool = True) -> list[tuple[bytes, bytes]]:
    """Each TCP connection of the capture (``opened_only``: those it saw opened) as (client to broker bytes, broker to
    client bytes), reassembled by tshark ("follow,tcp,raw": every payload byte once, in sequence order); the broker
    is the side on ``port`` (or one of them). A connection that carried no byte either way (a client that connected
    and closed without a word, which a test's clients do now and then as they stop) is left out, as
    kfmt.capture.connections leaves it."""
    ports = {port} if isinstance(port, int) else port
    shown = "tcp.flags.syn == 1 && tcp.flags.ack == 0" if opened_only else "tcp"
    ids = subprocess.run(["tshark", "-r", str(pcap), "-Y", shown, "-T", "fields", "-e", "tcp.stream"],
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    streams = sorted({int(i) for i in ids if i})  # (the mock's own client connected before the capture began: its
    # connections start mid-frame, and are left out)
    if not streams:
        return []
    args = [a for s in streams for a in ("-z", f"follow,tcp,raw,{s}")]
    out = subprocess.run(["tshark", "-r", str(pcap), "-q", *args], capture_output=True, text=True, check=True).stdout
    result = []
    for block in out.split("=" * 67):
        nodes = re.findall(r"^Node (\d): .*:(\d+)$", block, re.M)
        if len(nodes) != 2:
            continue
        first, second = bytearray(), bytearray()
        for line in block.splitlines():
            if re.fullmatch(r"\t?[0-9a-f]+", line):
                (second if line.startswith("\t") else first).extend(bytes.fromhex(line.strip()))
        node0_is_broker = int(nodes[0][1]) in ports
        if not first and not second:
            continue
        result.append((bytes(second), bytes(first)) if node0_is_broker else (bytes(first), bytes(second)))
    return result
