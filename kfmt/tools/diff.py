"""`kfmt diff`: compare formats by structure, and by bytes measured by actually encoding.

* structure: the fields of each level (batch, record, header) side by side, with what was added,
  removed, moved or retyped relative to the first format;
* workload: bytes per batch and per record over batch sizes, key/value sizes and header counts,
  encoded with the generated codecs (never computed by formula);
* corpus: real log files re-encoded into each format, with and without compression.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import kfmt
from kfmt.codec.formats import get_format
from kfmt.log.measure import (
    LEVELS,
    _header_key,
    _mod,
    corpus_sizes,
    fid,
    levels,
    table,
)

TIMESTAMP0 = 1_700_000_000_000


# ------------------------------------------------------------------ levels and structure
@dataclass
class StructureRow:
    level: str
    field: str
    cells: list[str]  # one per format: type label, or "—"
    status: list[str]  # one per format: "", "added", "removed", "moved", "retyped"


def structure(formats) -> list[StructureRow]:
    mods = [_mod(f) for f in formats]
    rows: list[StructureRow] = []
    for level in LEVELS:
        per = []
        for m in mods:
            s = levels(m)[level]
            per.append({f.name: (i, f) for i, f in enumerate(m.FIELDS[s])} if s else {})
        names: list[str] = []
        for fields in per:
            for n in sorted(fields, key=lambda x: fields[x][0]):
                if n not in names:
                    names.append(n)
        base = per[0]
        base_common_order = [n for n in sorted(base, key=lambda x: base[x][0])]
        for n in names:
            cells, status = [], []
            for j, fields in enumerate(per):
                if n not in fields:
                    cells.append("—")
                    status.append("removed" if n in base and j else "")
                    continue
                cells.append(fields[n][1].label)
                if j == 0:
                    status.append("")
                elif n not in base:
                    status.append("added")
                elif fields[n][1].wire != base[n][1].wire:  # the type, not what it is derived from
                    status.append("retyped")
                else:
                    common = [x for x in sorted(fields, key=lambda x: fields[x][0]) if x in base]
                    common_base = [x for x in base_common_order if x in fields]
                    status.append("moved" if common.index(n) != common_base.index(n) else "")
            rows.append(StructureRow(level, n, cells, status))
    return rows


# ------------------------------------------------------------------ workload
def workload_records(mod, n, key_size, value_size, headers, header_size=8, timestamp_step=0):
    hk = [_header_key(mod, i) for i in range(headers)]
    if headers and hk[0] is None:
        raise kfmt.InvalidValueError(f"{fid(mod)} has no record headers", path="workload.headers")
    return [
        kfmt.Record(
            key=(b"k" * key_size) if key_size >= 0 else None,
            value=(b"v" * value_size) if value_size >= 0 else None,
            headers=[(k, b"h" * header_size) for k in hk],
            timestamp=TIMESTAMP0 + i * timestamp_step,
        )
        for i in range(n)
    ]


def encoded_size(mod, records, codec="none") -> int:
    return len(kfmt.encode_batch(records, format=mod, codec=codec))


def workload_rows(formats, *, batch_sizes=(1, 3, 10, 50, 100), key_size=10, value_size=100, headers=0,
                  header_size=8, timestamp_step=0, codec="none") -> list[dict]:  # fmt: skip
    """Overhead (encoded size minus key and value bytes) per format and batch size, by encoding."""
    mods = [_mod(f) for f in formats]
    rows = []
    for n in batch_sizes:
        over: dict[str, int | None] = {}
        for m in mods:
            if headers and not levels(m)["header"]:
                over[fid(m)] = None  # the format cannot carry headers: no figure rather than a wrong one
                continue
            recs = workload_records(m, n, key_size, value_size, headers, header_size, timestamp_step)
            over[fid(m)] = encoded_size(m, recs, codec) - n * (max(key_size, 0) + max(value_size, 0))
        rows.append({"batch_size": n, "key_size": key_size, "value_size": value_size, "overhead": over})
    return rows


# ------------------------------------------------------------------ corpus
# ------------------------------------------------------------------ rendering
def render_structure(formats, markdown=False) -> str:
    mods = [_mod(f) for f in formats]
    rows = structure(mods)
    parts = []
    for level in LEVELS:
        lr = [r for r in rows if r.level == level]
        if not lr:
            continue
        parts.append(("### " if markdown else "== ") + f"{level} level" + ("" if markdown else " =="))
        body = [[r.field] + [c + (f" ({s})" if s else "") for c, s in zip(r.cells, r.status)] for r in lr]
        parts.append(table(["field"] + [fid(m) for m in mods], body, markdown))
    return "\n\n".join(parts)


def render_workload(rows, formats, markdown=False) -> str:
    ids = [fid(_mod(f)) for f in formats]
    body = []
    for r in rows:
        n = r["batch_size"]
        body.append([n] + [f"{r['overhead'][i]} ({r['overhead'][i] / n:.1f}/rec)" if r["overhead"][i] is not None
                            else "n/a (no headers)" for i in ids])  # fmt: skip
    return table(["batch size"] + [f"{i} overhead bytes" for i in ids], body, markdown)


def plot(rows, formats, stem: str) -> list[str]:
    """Overhead per record against batch size, one line per format; writes <stem>.png and <stem>.svg."""
    from kfmt.tools.plotting import pyplot, save_figure

    plt = pyplot()
    ids = [fid(_mod(f)) for f in formats]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [r["batch_size"] for r in rows]
    for i in ids:
        if any(r["overhead"][i] is None for r in rows):
            continue
        ax.plot(xs, [r["overhead"][i] / r["batch_size"] for r in rows], marker="o", label=i)
    ax.set_xscale("log")
    ax.set_xlabel("records per batch")
    ax.set_ylabel("overhead bytes per record")
    r0 = rows[0]
    ax.set_title(f"Format overhead (key {r0['key_size']} B, value {r0['value_size']} B), by encoding")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, stem, dpi=120)


def run(args) -> int:
    from kfmt.capture import is_capture

    if any(is_capture(f) for f in args.formats):  # traffic: its messages written at every version of their API
        from kfmt.tools import diff_capture

        return diff_capture.run(args)
    if any("@" in f for f in args.formats):  # versions of a protocol API's message, or of one of Kafka's own
        from kfmt.tools import diff_messages, diff_protocol

        rc = diff_protocol.run(args)
        if rc >= 0:
            return rc

        return diff_messages.run(args)
    try:
        mods = _inputs(args)
        want_structure = args.structure or not (args.workload or args.corpus)
        want_workload = args.workload or not (args.structure or args.corpus)
        rows = workload_rows(mods, batch_sizes=args.batch_sizes, key_size=args.key_size, value_size=args.value_size,
                             headers=args.headers, header_size=args.header_size, timestamp_step=args.timestamp_step,
                             codec=args.codec) if want_workload or args.plot else None  # fmt: skip
    except (kfmt.CodecError, FileNotFoundError) as e:
        print(f"kfmt diff: {e}", file=sys.stderr)
        return 2
    account: dict = {}
    if args.json:
        _print_json(args, mods, rows, want_structure, account)
        return _corpus_status(account)
    md = args.markdown
    if want_structure:
        print(("## Structure\n\n" if md else "") + render_structure(mods, md) + "\n")
    if want_workload and rows:
        title = f"key {args.key_size} B, value {args.value_size} B, {args.headers} header(s), codec {args.codec}"
        print(
            ("## Overhead by batch size (" if md else "== overhead by batch size: ") + title + (")\n" if md else " ==")
        )
        print(render_workload(rows, mods, md) + "\n")
    if args.corpus:
        _print_corpus(corpus_sizes(mods, args.corpus, tuple(args.corpus_codecs), account), account, md)
    if args.plot:
        from pathlib import Path

        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        for p in plot(rows, mods, args.plot):
            print(f"wrote {p}", file=sys.stderr)
    return _corpus_status(account)


def _inputs(args) -> list:
    """The formats' modules, and the corpus paths checked (a one-line error for either, exit 2)."""
    from pathlib import Path

    mods = [get_format(f) for f in args.formats]
    for path in args.corpus or ():
        if not Path(path).exists():
            raise FileNotFoundError(f"no such file or directory: {path}")
    return mods


def _print_json(args, mods, rows, want_structure: bool, account: dict) -> None:
    doc: dict[str, Any] = {"rows": rows} if rows is not None else {}
    if want_structure and not args.workload:
        doc["structure"] = [r.__dict__ for r in structure(mods)]
    if args.corpus:
        doc["corpus"] = corpus_sizes(mods, args.corpus, tuple(args.corpus_codecs), account)
        doc["input"] = account
    print(json.dumps(doc))


def _print_corpus(res: dict, account: dict, md: bool) -> None:
    """The corpus table (totals per format and codec), then bytes by schema field (uncompressed)."""
    first = next(iter(res), None)
    body = []
    for f, per in res.items():
        for c, acc in per.items():
            bpr = f"{acc['bytes_per_record']:.1f}" if acc["bytes_per_record"] else "n/a"
            body.append([f, c, acc["bytes"], acc["records"], bpr, acc["bytes"] - acc["payload"],
                         _versus(acc, res[first].get(c)), acc["skipped_records"], acc["headers_dropped"]])  # fmt: skip
    print(("## Corpus\n\n" if md else "== corpus ==\n") + _account_line(account) + "\n\n" + table(
        ["format", "codec", "total bytes", "records", "bytes/record", "overhead bytes", f"vs {first}",
         "records not carried", "headers dropped"], body, md) + "\n")  # fmt: skip
    per_format = {
        f: sorted(per.get("none", {}).get("fields", {}).items(), key=lambda kv: -kv[1]) for f, per in res.items()
    }
    if any(per_format.values()):
        print(("### Bytes by schema field (uncompressed)\n\n" if md else "== bytes by schema field (uncompressed) ==\n")
              + _side_by_side(per_format, md) + "\n")  # fmt: skip


def _versus(acc: dict, base: dict | None) -> str:
    """A format's total against the first format's with the same codec: the difference in bytes and percent (n/a
    when either left records out, so the two totals hold different records)."""
    if base is None or acc["skipped_records"] or base["skipped_records"] or not base["bytes"]:
        return "n/a"
    d = acc["bytes"] - base["bytes"]
    return f"{d:+d} ({100 * d / base['bytes']:+.1f}%)" if d else "="


def _side_by_side(per_format: dict, md: bool) -> str:
    """Each format's fields by bytes, largest first, formats side by side (a field and its bytes per format)."""
    names = list(per_format)
    depth = max(len(v) for v in per_format.values())
    rows = []
    for i in range(depth):
        row: list = []
        for f in names:
            row += list(per_format[f][i]) if i < len(per_format[f]) else ["", ""]
        rows.append(row)
    return table([h for f in names for h in (f"{f} field", "bytes")], rows, md)


def _account_line(a: dict) -> str:
    return (f"read {a['records']} records in {a['batches']} batches ({a['control_records']} control records, "
            f"not data, not re-encoded); {a['corrupt_batches']} corrupt batches, {a['unread_bytes']} bytes unread")  # fmt: skip


def _corpus_status(account: dict) -> int:
    """1 when some corpus bytes could not be read (reported on stderr), else 0."""
    if account.get("unread_bytes"):
        print(f"kfmt diff: {_account_line(account)}", file=sys.stderr)
        return 1
    return 0
