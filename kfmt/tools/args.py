"""Argument types and the parser every ``kfmt`` command uses: a wrong invocation is one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``kfmt dump: --partition: invalid int value: 'x' (see kfmt dump --help)``."""

    def error(self, message: str):
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):
        """As argparse, but a value starting with '-' and a digit is the value of the option before it when that
        option takes one (``--offsets -5:``; argparse would take ``-5:`` for an option)."""
        takes_one = {s for a in self._actions if a.nargs is None for s in a.option_strings}
        given = list(sys.argv[1:] if args is None else args)
        joined: list[str] = []
        for arg in given:
            if joined and joined[-1] in takes_one and arg[:1] == "-" and arg[1:2].isdigit():
                joined[-1] = f"{joined[-1]}={arg}"
            else:
                joined.append(arg)
        return super().parse_known_args(joined, namespace)


def int_at_least(lo: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, not {value}")
        return value

    parse.__name__ = f"integer >= {lo}"
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def int_list(text: str) -> list[int]:
    """``1,3,10``: positive integers."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, not {text!r}")
    return values


def timestamp_ms(text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 time (UTC unless it names a zone)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds or an ISO 8601 time, not {text!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return round(t.timestamp() * 1000)


def range_of(kind):
    """``FROM:TO`` (or ``FROM..TO``) with either end optional, each parsed by ``kind``; FROM <= TO when both
    have the same sign. An end may hold colons itself (an ISO 8601 time of day): the split is the one colon
    where both sides parse."""

    def parse(text: str) -> tuple:
        splits = (
            [text.split("..", 1)]
            if ".." in text
            else [[text[:i], text[i + 1 :]] for i, c in enumerate(text) if c == ":"]
        )
        found = []
        for lo_text, hi_text in splits:
            try:
                found.append((kind(lo_text) if lo_text else None, kind(hi_text) if hi_text else None))
            except argparse.ArgumentTypeError:
                continue
        if len(found) != 1:
            why = "ambiguous" if found else "expected"
            raise argparse.ArgumentTypeError(f"{why} FROM:TO or FROM..TO (either end may be empty), not {text!r}")
        lo, hi = found[0]
        if lo is not None and hi is not None and (lo < 0) == (hi < 0) and lo > hi:
            raise argparse.ArgumentTypeError(f"FROM is after TO in {text!r}")
        return lo, hi

    parse.__name__ = "range"
    return parse


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None


offset_range = range_of(_int)
time_range = range_of(timestamp_ms)


def existing_file(text: str) -> Path:
    p = Path(text)
    if not p.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    return p


def existing_path(text: str) -> Path:
    p = Path(text)
    if not p.exists():
        raise argparse.ArgumentTypeError(f"no such file or directory: {text}")
    return p


def names(text: str) -> list[str]:
    """``a,b``: non-empty comma-separated names."""
    values = [x.strip() for x in text.split(",")]
    if not all(values):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, not {text!r}")
    return values


def codec_list(text: str) -> list[str]:
    """``none,zstd``: compression codec names."""
    values = names(text)
    bad = [v for v in values if v not in CODECS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown codec(s) {', '.join(bad)}; use {', '.join(CODECS)}")
    return values


def topic_names(text: str) -> list[str]:
    """Comma-separated topic names, legal as Kafka has them (``[a-zA-Z0-9._-]``, at most 249, not . or ..)."""
    import re

    values = names(text)
    bad = [v for v in values if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", v) or v in (".", "..")]
    if bad:
        raise argparse.ArgumentTypeError(f"not a legal Kafka topic name: {bad[0]!r} (letters, digits, '.', '_', '-')")
    return values
