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


def blob_bounds(say, path: str, n_: str, nm: str, end: str, cap: str = "cx.maxBytes") -> None:
    """The rest of a blob whose length ``n_`` was read and whose ``if (<n_> < 0) ... else {`` is open: the length
    within the limit and the region (``end``), then ``<nm>_n`` and the position past it. One emitter for the log
    formats' decoders and the payload decoders."""
    say(f'    if ({n_} > {cap}) throw cx.bad({path}, pos, "length " + {n_} + " exceeds the limit");')
    say(f"    if ({n_} > {end} - pos) throw cx.past({path}, pos, {n_}, {end});")
    say(f"    {nm}_n = (int) {n_}; pos += {nm}_n;")
    say("}")


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


class JavaExpr:
    """The IR's expressions as Java: integers as ``long``, conditions as ``boolean``; a reference is a local of the
    struct ``here`` (``v_<name>``) or a value it was handed (``a_<name>``); a text compared with a constant is
    compared where it lies (its ``_p``/``_n`` locals), by ``kfmt.jvm.Js.same``. One lowering for the log formats'
    decoders and the payload decoders."""

    def long_expr(self, e: n.Expr, here: str) -> str:
        if isinstance(e, n.Const):
            if isinstance(e.value, bool):
                return "1L" if e.value else "0L"
            if isinstance(e.value, int):
                return f"{e.value}L"
            raise Unsupported(f"the constant {e.value!r}")
        if isinstance(e, n.EnumConst):
            return f"{e.value}L"
        if isinstance(e, n.Ref):
            return f"v_{e.name}" if e.owner == here else f"a_{e.name}"
        if isinstance(e, n.Arith):
            op = "+" if e.op == "add" else "-"
            return f"({self.long_expr(e.left, here)} {op} {self.long_expr(e.right, here)})"  # Java longs wrap
        if isinstance(e, n.Choose):
            return (f"({self.bool_expr(e.cond, here)} ? {self.long_expr(e.then, here)} : "
                    f"{self.long_expr(e.otherwise, here)})")  # fmt: skip
        if isinstance(e, (n.Compare, n.Truthy, n.All)):
            return f"({self.bool_expr(e, here)} ? 1L : 0L)"
        raise Unsupported(f"the expression {type(e).__name__}")

    def bool_expr(self, e: n.Expr, here: str) -> str:
        if isinstance(e, n.Compare):
            if isinstance(e.right, n.Const) and isinstance(e.right.value, str) and isinstance(e.left, n.Ref):
                at = e.left.name if e.left.owner == here else f"a_{e.left.name}"
                text = f"Js.same(b, {at}_p, {at}_n, {jstr(e.right.value)})"
                if e.op not in ("eq", "ne"):
                    raise Unsupported(f"the text comparison {e.op}")
                return f"({text})" if e.op == "eq" else f"(!{text})"
            op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[e.op]
            return f"({self.long_expr(e.left, here)} {op} {self.long_expr(e.right, here)})"
        if isinstance(e, n.Truthy):
            return f"({self.long_expr(e.operand, here)} != 0)"
        if isinstance(e, n.All):
            return "(" + " && ".join(self.bool_expr(x, here) for x in e.operands) + ")"
        return f"({self.long_expr(e, here)} != 0)"
