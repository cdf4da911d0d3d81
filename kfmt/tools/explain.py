"""`kfmt explain`: byte layouts of formats, and of real batches, from the Construct backend.

* ``kfmt explain FORMAT`` draws a packet diagram per level (fields with offsets and sizes) to SVG/PNG;
* ``kfmt explain --bytes FILE`` annotates each byte of a real batch with the field it belongs to,
  hexdump style, by tracing the Construct parser;
* ``kfmt explain --api NAME --version V`` draws a protocol request or response at a version, and with
  ``--bytes FRAME`` annotates a real frame (kfmt.tools.explain_protocol);
* :func:`attribute` sums the bytes of an encoding by schema field (used by ``kfmt diff --corpus``).
"""

from __future__ import annotations

import argparse
import sys

import kfmt
from kfmt.codec.formats import get_format
from kfmt.tools.args import existing_file, positive_int
from kfmt.tools.hexrows import write_rows


def hexdump(mod, data: bytes, out=None, limit: int | None = None) -> None:
    """Every byte of the entries in ``data`` with its field; ``mod`` None picks Kafka's format by magic."""
    from kfmt.codec.formats import by_magic as _by_magic
    from kfmt.log.measure import byte_values
    from kfmt.log.scanner import iter_entries

    out = out or sys.stdout
    shown = 0
    for pos, end, magic in iter_entries(data):
        fmt = mod or _by_magic().get(magic)
        if fmt is None:
            raise kfmt.InvalidValueError(f"invalid magic {magic}", offset=pos + 16, path="log.entry.magic")
        entry = data[pos:end]
        write_rows(entry, byte_values(fmt, entry), pos, out)
        out.write("\n")
        shown += 1
        if limit and shown >= limit:
            break
    if not shown:  # nothing to show is never a quiet success: say why the bytes hold no entry
        from kfmt.log.scanner import tail_error

        if not data:
            raise kfmt.TruncatedError("the file is empty: no log entry to explain", offset=0, path="log.entry")
        raise tail_error(data, 0, len(data))


# ------------------------------------------------------------------ packet diagrams
def draw(mod, stem: str) -> list[str]:
    """A packet-diagram figure per level of a format: boxes with field names, sizes and offsets."""
    from matplotlib.patches import Rectangle

    from kfmt.tools.plotting import pyplot, save_figure

    plt = pyplot()

    from kfmt.log.measure import levels

    lv = [(k, s) for k, s in levels(mod).items() if s]
    width = 16  # bytes per row
    rows_needed = []
    for _, s in lv:
        units = sum(_units(f) for f in mod.FIELDS[s])
        rows_needed.append(max(1, -(-units // width)))
    fig_h = sum(r * 0.7 + 0.8 for r in rows_needed) + 0.4
    fig, ax = plt.subplots(figsize=(12, fig_h))
    ax.set_xlim(0, width)
    ax.axis("off")
    y = 0.0
    colors = ["#dbe9f6", "#fde2c8", "#d9f0d3", "#f3d9ef", "#fff2b3"]
    for level, s in lv:
        ax.text(0, y - 0.35, f"{level} level: struct '{s}'", fontsize=10, weight="bold", va="center")
        y -= 0.7
        x = 0.0
        for k, f in enumerate(mod.FIELDS[s]):
            name = f.name
            u = _units(f)
            size = f.width
            remaining: float = u
            while remaining > 0:
                take = min(remaining, width - x)
                ax.add_patch(Rectangle((x, y - 0.6), take, 0.6, facecolor=colors[k % len(colors)], edgecolor="black"))
                if remaining == u:
                    where = f"@{f.offset}" if f.offset is not None else "@var"
                    txt = f"{name}\n{size if size else 'var'}B {where}"
                    ax.text(x + take / 2, y - 0.3, txt, ha="center", va="center", fontsize=6.5)
                remaining -= take
                x += take
                if x >= width:
                    x = 0
                    y -= 0.7
        y -= 0.7 if x else 0
        y -= 0.5
    ax.set_ylim(y, 0.2)
    ax.set_title(f"{mod.FORMAT_ID}: {mod.DOC}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, stem)


def _units(f) -> int:
    """Boxes a field takes in the diagram: its width, or 3 for a variable-size field."""
    return f.width or 3


def _stem(out: str | None, format_id: str) -> str:
    """Where the diagrams go: ``--out`` as a stem (``diagrams/v2`` -> diagrams/v2.svg, .png), or a folder (one that
    exists, or a path ending in ``/``) to write ``<format>-layout.svg`` in; by default ./out/<format>-layout."""
    import os

    name = f"{format_id}-layout"
    if not out:
        return os.path.join("out", name)
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        return os.path.join(out, name)
    return out


def run(args) -> int:
    from pathlib import Path

    import construct as c

    if args.api:
        return _run_protocol(args)
    if args.target is None:
        print("kfmt explain: name a format (kfmt formats lists them), or a protocol API with --api", file=sys.stderr)
        return 2
    if args.bytes:
        try:
            mod = get_format(args.format) if args.format else None
            data = existing_file(args.target).read_bytes()
        except (kfmt.CodecError, argparse.ArgumentTypeError, OSError) as e:
            print(f"kfmt explain: {e}", file=sys.stderr)
            return 2
        try:
            hexdump(mod, data, limit=args.limit)
        except (kfmt.CodecError, c.ConstructError) as e:
            print(f"kfmt explain: {args.target}: {e}", file=sys.stderr)
            return 1
        return 0
    try:
        mod = get_format(args.target)
    except kfmt.CodecError as e:
        print(f"kfmt explain: {e}", file=sys.stderr)
        return 2
    stem = _stem(args.out, mod.FORMAT_ID)
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    for p in draw(mod, stem):
        print(f"wrote {p}")
    return 0


def _run_protocol(args) -> int:
    """``--api NAME --version V [--response]``: the message's fields at that version; with ``--bytes FILE`` a frame's
    bytes annotated (FILE holds one frame, with or without its 4-byte size)."""
    import construct as c

    from kfmt.tools import explain_protocol as ep

    kind = "response" if args.response else "request"
    try:
        a = ep.find_api(args.api)
        version = a.versions.stop - 1 if args.version is None else args.version
        if not args.bytes:
            print("\n".join(ep.layout(a, kind, version)))
            return 0
        if args.target is None:
            raise kfmt.InvalidValueError("--bytes needs a file holding one frame")
        frame = existing_file(args.target).read_bytes()
    except (kfmt.CodecError, argparse.ArgumentTypeError, OSError) as e:
        print(f"kfmt explain: {e}", file=sys.stderr)
        return 2
    if len(frame) >= 4 and int.from_bytes(frame[:4], "big") == len(frame) - 4:
        frame = frame[4:]  # the frame's size, as on the wire
    try:
        ep.annotate(a, kind, version, frame)
    except (kfmt.CodecError, c.ConstructError) as e:
        print(f"kfmt explain: {args.target}: {e}", file=sys.stderr)
        return 1
    return 0


def add_parser(sub) -> None:
    e = sub.add_parser(
        "explain",
        help="draw a format's byte layout (or a protocol message's, --api), or annotate the bytes of a real batch or frame",
        description="kfmt explain FORMAT: packet diagrams (SVG and PNG) of each level. "
        "kfmt explain --bytes FILE: every byte of the batches in FILE, hexdump style, with its field. "
        "kfmt explain --api NAME [--version V] [--response]: a request or response of Kafka's protocol, its fields "
        "at that version in wire order; with --bytes FRAME, a frame's bytes field by field.",
    )
    e.add_argument("target", nargs="?", help="a format id, or with --bytes a log file (with --api: a frame)")
    e.add_argument("--bytes", action="store_true", help="annotate the bytes of TARGET (a log file)")
    e.add_argument("--format", help="with --bytes: the format to read (default: by magic, Kafka formats)")
    e.add_argument("--limit", type=positive_int, default=1, help="with --bytes: entries to show (default 1)")
    e.add_argument("--api", help="a protocol API by Kafka's name (Produce, Metadata...) or key")
    e.add_argument("--version", type=int, help="with --api: the API version (default: the newest)")
    e.add_argument("--response", action="store_true", help="with --api: the response (default: the request)")
    e.add_argument(
        "--out",
        help="where the diagrams go: a stem (DIR/NAME gives DIR/NAME.svg and .png) or a folder "
        "(existing, or ending in /); default ./out/<format>-layout",
    )
    e.set_defaults(func=run)
