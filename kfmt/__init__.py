"""kfmt: Kafka wire formats, declared once in YAML, generated into fast codecs.

Public API (kept light: heavy modules load on first use)::

    kfmt.read_batches(data, verify_crc=True)      # batches of any auto-detected magic in a log
    kfmt.encode_batch(records, magic=2, codec="none", **batch_fields)
    kfmt.Record(key=..., value=..., headers=[...], timestamp=...)
    kfmt.convert(data, to_magic=1, codec=None, strict=False)   # Kafka's conversion rules, losses listed
    kfmt.CodecError and its subclasses
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
from kfmt.runtime.options import DecodeOptions

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "ChecksumError",
    "CodecError",
    "DecodeOptions",
    "InvalidValueError",
    "LimitExceededError",
    "Record",
    "TruncatedError",
    "UnsupportedCodecError",
    "encode_batch",
    "format_ids",
    "get_format",
    "read_arrow",
    "read_arrow_batches",
    "read_batches",
    "control_record",
    "convert",
    "Conversion",
    "scan",
]


def __getattr__(name):
    """The entry points, imported on first use (``import kfmt`` stays light), then kept as attributes."""
    if name in ("read_batches", "scan"):
        from kfmt.log import batches as where
    elif name in ("encode_batch", "control_record"):
        from kfmt.codec import encode as where  # type: ignore[no-redef]
    elif name in ("format_ids", "get_format"):
        from kfmt.codec import formats as where  # type: ignore[no-redef]
    elif name == "iter_entries":
        from kfmt.log import scanner as where  # type: ignore[no-redef]
    elif name in ("convert", "Conversion"):
        from kfmt.log import conversion as where  # type: ignore[no-redef]
    elif name in ("read_arrow", "read_arrow_batches"):
        from kfmt.table import read as where  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'kfmt' has no attribute {name!r}")
    value = globals()[name] = getattr(where, name)
    return value
