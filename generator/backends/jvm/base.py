"""What the JVM backend's lowering modules share: the Java names of the batch values, the readers of fixed-width
integers, and how Java identifiers and literals are spelled."""

from __future__ import annotations

from typing import Protocol

from generator.ir import nodes as n

# kfmt.runtime.model.Batch's attributes the columns read, as fields of kfmt.jvm.Batch (name, Java type)
BATCH_FIELDS = {
    "magic": ("magic", "int"),
    "codec": ("codec", "int"),
    "base_offset": ("baseOffset", "long"),
    "last_offset": ("lastOffset", "long"),
    "producer_id": ("producerId", "long"),
    "producer_epoch": ("producerEpoch", "int"),
    "base_sequence": ("baseSequence", "int"),
    "is_transactional": ("isTransactional", "boolean"),
    "is_control": ("isControl", "boolean"),
    "has_delete_horizon": ("hasDeleteHorizon", "boolean"),
    "partition_leader_epoch": ("partitionLeaderEpoch", "int"),
    "timestamp_type": ("timestampType", "int"),
    "base_timestamp": ("baseTimestamp", "long"),
    "max_timestamp": ("maxTimestamp", "long"),
}
READ = {(1, True): "i8", (1, False): "u8", (2, True): "i16", (2, False): "u16", (4, True): "i32",
         (4, False): "u32", (8, True): "i64"}  # fmt: skip


class Unsupported(Exception):
    """A language feature this backend does not lower (the format then has no Java decoder)."""


def class_name(fmt_id: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in fmt_id.split("_"))


def jstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def doc(text: str) -> str:
    """Text for a Javadoc comment."""
    return " ".join(str(text).replace("*/", "* /").split())


class Lowering(Protocol):
    """What the struct and entry lowerings read of the format's lowering (:class:`~generator.backends.jvm.jgen.JavaGen`)."""

    f: n.FormatIR
    root: n.Struct
    by_name: dict[str, n.Struct]
    enums: dict[str, n.Enum]
    roles: dict[str, str]

    def long_expr(self, e: n.Expr, here: str) -> str: ...

    def bool_expr(self, e: n.Expr, here: str) -> str: ...
