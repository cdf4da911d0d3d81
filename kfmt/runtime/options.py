"""Decode options and resource limits, checked before allocating."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """What a decoder checks and how much it may allocate.

    Every limit is checked *before* the allocation it guards, so memory stays
    proportional to the input whatever the lengths in it claim.
    """

    verify_crc: bool = True
    #: decompressed bytes allowed for one batch
    max_decompressed: int = 256 * 1024 * 1024
    #: decompressed size allowed relative to the compressed size (bomb guard; at least 1 MiB is always allowed)
    max_ratio: int = 1024
    #: records (or inner messages) in one batch
    max_records: int = 10_000_000
    #: headers on one record
    max_headers: int = 100_000
    #: bytes in one key, value, or header
    max_bytes: int = 256 * 1024 * 1024
    #: nested compressed message sets (Kafka allows exactly one level)
    max_depth: int = 1


DEFAULT_OPTIONS = DecodeOptions()
NO_CRC_OPTIONS = DecodeOptions(verify_crc=False)


def options_for(verify_crc: bool = True, **limits) -> DecodeOptions:
    if not limits:
        return DEFAULT_OPTIONS if verify_crc else NO_CRC_OPTIONS
    return DecodeOptions(verify_crc=verify_crc, **limits)
