"""`kfmt diff`'s arguments (kfmt.tools.diff, which measures, is imported when the command runs: every other command
starts without it)."""

from __future__ import annotations

from kfmt.tools.args import CODECS, codec_list, int_at_least, int_list, non_negative_int


def _run(args) -> int:
    from kfmt.tools.diff import run

    return run(args)


def add_parser(sub) -> None:
    d = sub.add_parser(
        "diff",
        help="compare formats (or versions of a protocol message, API@V): structure, and bytes measured by encoding",
        description="Compare wire formats (ids from `kfmt formats`). Without --structure/--workload/--corpus, "
        "shows structure and the workload table. Sizes come from encoding with the generated codecs. "
        "SCHEMA@VERSION arguments (e.g. group_coordinator_value@3 group_coordinator_value@4) compare versions of "
        "Kafka's own messages instead: with --corpus, every record of their topic re-encoded at each version. "
        "API@VERSION arguments (e.g. Metadata@8 Metadata@12) write one protocol request (--response: response) "
        "given as Kafka's JSON of its body (--message FILE) at each version: bytes by field, and what a version "
        "cannot carry. A pcap or pcapng capture instead writes every request and response it holds at every "
        "version of its API (and at each API@VERSION given, e.g. a proposal): bytes per API and version, and the "
        "messages a version cannot carry; --fields says which fields, lengths, counts and tagged sections make the "
        "difference, --plot draws it.",
    )
    d.add_argument("formats", nargs="+", metavar="FORMAT")
    d.add_argument("--structure", action="store_true", help="fields per level, added/removed/moved/retyped")
    d.add_argument("--workload", action="store_true", help="overhead bytes by batch size")
    d.add_argument("--corpus", nargs="+", metavar="PATH", help="re-encode the batches of these logs into each format")
    d.add_argument(
        "--corpus-codecs", type=codec_list, default="none,zstd", help="codecs for --corpus (default none,zstd)"
    )
    d.add_argument(
        "--batch-sizes", type=int_list, default="1,3,10,50,100", help="comma-separated (default 1,3,10,50,100)"
    )
    d.add_argument("--key-size", type=int_at_least(-1), default=10, help="key bytes (-1 for a null key; default 10)")
    d.add_argument(
        "--value-size", type=int_at_least(-1), default=100, help="value bytes (-1 for a null value; default 100)"
    )
    d.add_argument("--headers", type=non_negative_int, default=0, help="headers per record (default 0)")
    d.add_argument("--header-size", type=non_negative_int, default=8, help="bytes per header value (default 8)")
    d.add_argument(
        "--timestamp-step", type=non_negative_int, default=0, help="ms between records of a batch (default 0)"
    )
    d.add_argument("--codec", choices=CODECS, default="none", help="codec for the workload (default none)")
    d.add_argument("--message", metavar="FILE", help="with API@VERSION: the body to write, as Kafka's JSON")
    d.add_argument("--response", action="store_true", help="with API@VERSION: the message is a response")
    d.add_argument("--markdown", action="store_true", help="Markdown tables")
    d.add_argument(
        "--json", action="store_true", help='JSON: {"rows": [{"batch_size", "key_size", "value_size", "overhead"}]}'
    )
    d.add_argument(
        "--plot",
        metavar="STEM",
        help="write STEM.png and STEM.svg (overhead per record by batch size; "
        "for a capture: each version's bytes against the captured, per API)",
    )
    d.add_argument(
        "--fields",
        action="store_true",
        help="for a capture: bytes by field at every version beside the "
        "captured messages' own (lengths, counts, tagged sections and values apart: what makes the "
        "difference)",
    )
    d.set_defaults(func=_run)
