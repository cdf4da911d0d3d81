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
    #: estimated memory of what one array of a batch decodes to: the bytes it spans (the keys, values and
    #: headers sliced from them) plus ``RECORD_COST`` per record or message and ``HEADER_COST`` per header,
    #: checked before the elements are built (the records of a batch with their headers count together)
    max_memory: int = 256 * 1024 * 1024


#: estimated bytes of Python objects per decoded record or message beyond its key and value bytes (the
#: slotted object, its ints, its headers list), and per header (the tuple, its list slot, the value's
#: object header); measured with tracemalloc on CPython 3.11 (303 and 65 bytes), rounded up
RECORD_COST = 320
HEADER_COST = 96


DEFAULT_OPTIONS = DecodeOptions()
NO_CRC_OPTIONS = DecodeOptions(verify_crc=False)


def options_for(verify_crc: bool = True, **limits) -> DecodeOptions:
    if not limits:
        return DEFAULT_OPTIONS if verify_crc else NO_CRC_OPTIONS
    return DecodeOptions(verify_crc=verify_crc, **limits)
