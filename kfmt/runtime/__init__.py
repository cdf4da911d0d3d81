"""Runtime support for generated codecs: a leaf layer.

Errors, varint slow paths, CRCs, Kafka's compression framings, the record/batch
base classes and decode limits. Nothing here knows about a particular wire
format; everything format-specific is generated from ``schemas/``.
"""

from kfmt.runtime.errors import (
    ChecksumError,
    CodecError,
    InvalidValueError,
    LimitExceededError,
    TruncatedError,
    UnsupportedCodecError,
)
from kfmt.runtime.model import Batch, Record
from kfmt.runtime.options import DEFAULT_OPTIONS, DecodeOptions

__all__ = [
    "Batch",
    "ChecksumError",
    "CodecError",
    "DEFAULT_OPTIONS",
    "DecodeOptions",
    "InvalidValueError",
    "LimitExceededError",
    "Record",
    "TruncatedError",
    "UnsupportedCodecError",
]
