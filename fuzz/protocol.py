"""`make fuzz-protocol`: hostile frames for every API's reader. Seeds are a sample of every API x version x kind
built from Kafka's spec files (the suite's builder, tests/test_protocol.py, one definition), each written by
kfmt; every seed is mutated (bit flips, cuts, insertions, a count or length claiming anything) and read by
every backend built here (python, construct for a share, native).

What counts as a crash: an exception other than kfmt's CodecError; an error of more than one line; a message
read that does not re-encode to the frame's bytes (a walked message builds its header and body there: a walk
that answered for a frame its decoders refuse fails so); the native and python backends reading different JSON
or one failing where the other reads, or their check walks (generator.ir.walk) answering differently. The run reports how far the process grew (a count of 2^31 in a 20-byte frame
must be refused at once, as Kafka refuses it since KAFKA-14063). Crashes are saved under fuzz/found/protocol/
(the frame and why) and the run exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# after what PYTHONPATH names: fuzz/sanitized.py puts its sanitized copy of kfmt and generated/ first
sys.path[1:1] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(ROOT), str(ROOT / "tests")]

import test_protocol as T  # noqa: E402  (the suite's sample messages and frame helpers)

import kfmt  # noqa: E402
import kfmt.protocol as P  # noqa: E402
from fuzz.campaign import mutate  # noqa: E402

FOUND = ROOT / "fuzz" / "found" / "protocol"  # frames that crashed, kept until a fix replays them in the suite


def seeds(apis: set[int] | None = None) -> list[tuple[str, int, int, bytes]]:
    """``(kind, api key, version, frame)``: every API (of ``apis``) x version x kind, every field its version has set."""
    return [(kind, key, v, T._write(key, kind, v, T._sample_body(key, kind, v)))
            for key, v in T._cases() if apis is None or key in apis for kind in ("request", "response")]  # fmt: skip


def save(name: str, data: bytes, why: str) -> Path:
    FOUND.mkdir(parents=True, exist_ok=True)
    p = FOUND / f"protocol-{name}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
    p.write_bytes(data)
    p.with_suffix(".txt").write_text(f"found by: fuzz/protocol.py\n\n{why}\n")
    return p


def one(kind: str, key: int, version: int, data: bytes, backends: tuple[str, ...]) -> str | None:
    """Read ``data`` with each backend: a crash described, or None."""
    said = {}
    for backend in backends:
        try:
            m = T._read(data, kind, key, version, backend)
        except kfmt.CodecError as e:
            if "\n" in str(e) or "internal" in str(e):
                return f"{backend}: an error of more than one line, or an internal failure: {e!r:.300}"
            said[backend] = ("error", type(e).__name__)
            continue
        except Exception as e:  # noqa: BLE001 - what the campaign looks for
            return f"{backend}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
        try:
            again = m.encode()
            text = m.to_json()
        except Exception as e:  # noqa: BLE001 - a message read must write and show
            return f"{backend}: read, then encode/to_json failed: {type(e).__name__}: {e}"
        if again != data:
            return f"{backend}: read, re-encoded to other bytes ({len(again)} vs {len(data)})"
        said[backend] = ("ok", repr(text))
    if "native" in backends and len(data) >= 4:
        ends = {b: _walk_ends(kind, key, version, data, b) for b in ("python", "native")}
        if ends["python"] != ends["native"]:
            return f"the native and python walks disagree: {ends}"
    if "native" in said and "python" in said and said["native"][0] != said["python"][0]:
        return f"native and python disagree: {said['native'][0]} / {said['python'][0]}"
    if "native" in said and said["native"][0] == "ok" and said["native"] != said["python"]:
        return "native and python read different JSON"
    return None


def _walk_ends(kind: str, key: int, version: int, data: bytes, backend: str) -> tuple[int, int] | str:
    """Where the header and body walks of ``backend`` end (-1: declined), or why there is no plan."""
    from kfmt.runtime.options import DEFAULT_OPTIONS as O

    if kind == "request":
        key, version = int.from_bytes(data[:2], "big", signed=True), int.from_bytes(data[2:4], "big", signed=True)
    try:
        p = P._plan(kind, key, version, backend)
    except kfmt.CodecError as e:
        return type(e).__name__
    if p is None or p.check is None:
        return "no walk"
    head = p.header_check(data, 0, len(data), O, p.header_version)
    return head, (p.check(data, head, len(data), O, version) if head >= 0 else -1)


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def campaign(n: int, seed: int, construct_share: float, apis: set[int] | None = None) -> tuple[int, int, float, float]:
    """``n`` mutated frames: (inputs, crashes, seconds, peak RSS growth in MB)."""
    from kfmt.codec.formats import available_backends

    rng = random.Random(f"{seed}/protocol")
    pool = seeds(apis)
    base = ("python",) + (("native",) if "native" in available_backends() else ())
    start_kb, t0, crashes = _rss_kb(), time.time(), 0
    for i in range(n):
        kind, key, version, frame = rng.choice(pool)
        data = mutate(frame, rng) if rng.random() < 0.97 else rng.randbytes(rng.randrange(0, 40))
        backends = base + (("construct",) if rng.random() < construct_share else ())
        if apis is not None and kind == "request" and int.from_bytes(data[:2], "big", signed=True) not in apis:
            backends = ("python",)  # a mutated key names an API whose native decoder this build left out
        why = one(kind, key, version, data, backends)
        if why:
            crashes += 1
            if crashes <= 5:
                where = save(f"{key}-{kind}-v{version}", data, why)
                print(f"CRASH {P.api(key).name} {kind} v{version}: {where}\n{why}", file=sys.stderr)
        if i and i % 100_000 == 0:
            print(f"{i:,} frames, {crashes} crashes, {time.time() - t0:.0f}s", file=sys.stderr)
    return n, crashes, time.time() - t0, (_rss_kb() - start_kb) / 1024


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=1_000_000, help="mutated frames (default 1,000,000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--construct-share", type=float, default=0.02, help="share of frames also read by construct")
    p.add_argument("--apis", help="API keys to mutate (default: every API)")
    p.add_argument("--sanitized", metavar="DIR", help="(fuzz/sanitized.py) the sanitized build the native backend "
                   "must come from: the run stops if it does not")  # fmt: skip
    args = p.parse_args(argv)
    apis = {int(k) for k in args.apis.split(",")} if args.apis and args.apis != "all" else None
    if args.sanitized:
        import generated.protocol.request_header._native as m

        if not m.__file__.startswith(args.sanitized):
            print(f"the native protocol decoders are not the sanitized build: {m.__file__}", file=sys.stderr)
            return 2
    n, crashes, secs, grown = campaign(args.frames, args.seed, args.construct_share, apis)
    print(f"\n## protocol fuzz: {n:,} frames of {len(apis) if apis else len(P.apis())} APIs in {secs:.0f}s, {crashes} crashes, "
          f"peak RSS growth {grown:.0f} MB")  # fmt: skip
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
