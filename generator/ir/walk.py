"""The check walk: which bytes a message's body covers and whether it is in the plain form every decoder reads
without a question, found without building a value. One definition (a plan of steps per struct, made here
from the typed IR), which the native and python backends each render (``k_<struct>`` in C, ``_check_<struct>``
in Python) and a differential test holds equal.

A walk answers the end of the body, or declines; it declines (and the reader decodes the body at once, which
then says what is wrong, where) at anything but the plain form: a tag section that is not empty, a string that
is not ASCII, a null marker or length other than Kafka's own, a count over its limit or beyond the bytes left,
a version a struct is not defined for. So a walk that answers guarantees the decoders read the same bytes to the
same end without an error: the body can be built when it is first asked for (``kfmt.protocol.Message.body``).

A format has a check walk only where every construct it uses is one of these; others (the record formats: CRCs,
regions, wrappers) are decoded at once.

The same walk, given a sink, tells what a summary of traffic needs without a value built (``facts``): each error
code other than 0 (an int16 Kafka names ``ErrorCode``), where each record set is (a ``records`` blob), and, where
the sink asks for them by their ids, the bytes of strings and uuids and where each element of an array of structs
begins; :func:`fact_paths` names each id by the Kafka path it is found at (``TopicData[].Name``).

The memory budget the decoders keep is not walked: a frame is walked only when its size times :func:`factor` is
within ``max_memory``, where no budget can be exceeded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.ir import nodes as n


class NoCheck(Exception):
    """A construct the check walk does not cover (the format is decoded at once)."""


@dataclass(frozen=True)
class Skip:
    """Fixed-width bytes: a run of integers, booleans, floats and uuids; ``facts``: the error codes and uuids among
    them."""

    width: int
    facts: tuple[tuple[int, str, int, str], ...] = ()  # (offset in the run, "code" or "uuid", fact id, Kafka's name)


@dataclass(frozen=True)
class VarintSkip:
    """A varint scalar (at most ``max_bytes`` bytes)."""

    max_bytes: int


@dataclass(frozen=True)
class Bytes:
    """A string or byte blob: its length prefix (an Int, or a Varint with Kafka's compact N + 1) or the rest of the
    input less ``trailer``; a negative length is null where ``nullable``; a string's bytes must be ASCII."""

    length: n.Int | n.Varint | n.Rest
    nullable: bool
    text: bool
    max: int | None
    fact: int | None = None  # a string's fact id
    records: bool = False  # a record set (Kafka's ``records`` type)
    name: str = ""  # Kafka's name of the field


@dataclass(frozen=True)
class Array:
    """A counted array: its count prefix, null where negative and ``nullable``; at most ``limit`` (an option's
    name) elements of at least ``min_elem`` bytes; each a struct walked (``elem``) or ``width`` bytes skipped."""

    count: n.Int | n.Varint
    nullable: bool
    limit: str
    min_elem: int
    elem: str | None
    width: int | None
    fact: int | None = None  # an array of structs' fact id (where each element begins)
    name: str = ""  # Kafka's name of the field


@dataclass(frozen=True)
class Call:
    """A nested struct, behind a null marker (int8 -1 / uvarint 0: null; 1: present) when ``marker`` is set."""

    struct: str
    marker: n.Int | n.Varint | None
    name: str = ""  # Kafka's name of the field


@dataclass(frozen=True)
class Switch:
    """One struct of several by a parameter's value; any other value declines."""

    selector: str
    cases: tuple[tuple[tuple[int, ...], str], ...]


@dataclass(frozen=True)
class Cond:
    """Steps present only when ``expr`` (over parameters) holds."""

    expr: n.Expr
    steps: tuple


@dataclass(frozen=True)
class Requires:
    """The struct is defined only where ``expr`` (over parameters) holds: elsewhere the walk declines."""

    expr: n.Expr


@dataclass(frozen=True)
class NoTags:
    """A tag section holding no tag: the one byte 0."""


@dataclass(frozen=True)
class StructPlan:
    name: str
    params: tuple[str, ...]
    steps: tuple


def plan(ir: n.FormatIR) -> list[StructPlan] | None:
    """Each struct's walk, dependencies first (the root last), or None when the format has no check walk."""
    ids = iter(range(1 << 30))  # fact ids, in struct and field order
    try:
        plans = {st.name: _struct(ir, st, ids) for st in ir.structs}
    except NoCheck:
        return None
    used = _reached(plans, ir.root)
    return [p for name, p in plans.items() if name in used]


def fact_paths(ir: n.FormatIR, plans: list[StructPlan]) -> dict[int, tuple[str, tuple[str, ...]]]:
    """Each fact id of a walk from the root: its kind ("text", "uuid" or "array": where each element begins) and the
    Kafka paths it is found at (``Topics[].Name``; an array's: ``Topics[]``), in the order first reached."""
    by = {p.name: p for p in plans}
    found: dict[int, tuple[str, tuple[str, ...]]] = {}

    def walk(steps: tuple, path: str, seen: tuple[str, ...]) -> None:
        for s in steps:
            for i, kind, where in _facts_of(s, path):
                found[i] = (kind, (*found.get(i, ("", ()))[1], where))
            for name, inner in _inner(s, path):
                if name not in seen:  # (a struct that holds itself: its paths from the first time only)
                    walk(by[name].steps, inner, (*seen, name))

    walk(by[ir.root].steps, "", (ir.root,))
    return {i: (kind, tuple(dict.fromkeys(ps))) for i, (kind, ps) in found.items()}


def _facts_of(s, path: str) -> list[tuple[int, str, str]]:
    """(fact id, kind, Kafka path) of what a step tells (a condition's steps: those it holds)."""
    if isinstance(s, Cond):
        return [x for t in s.steps for x in _facts_of(t, path)]
    if isinstance(s, Skip):
        return [(i, kind, _at(path, name)) for _, kind, i, name in s.facts if kind == "uuid"]
    if isinstance(s, Bytes) and s.fact is not None:
        return [(s.fact, "text", _at(path, s.name))]
    if isinstance(s, Array) and s.fact is not None:
        return [(s.fact, "array", _at(path, s.name) + "[]")]
    return []


def _inner(s, path: str) -> list[tuple[str, str]]:
    """(struct, its Kafka path) of each struct a step walks into."""
    if isinstance(s, Cond):
        return [x for t in s.steps for x in _inner(t, path)]
    if isinstance(s, Array) and s.elem is not None:
        return [(s.elem, _at(path, s.name) + "[]")]
    if isinstance(s, Call):
        return [(s.struct, _at(path, s.name))]
    if isinstance(s, Switch):
        return [(name, path) for _, name in s.cases]
    return []


def _at(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _reached(plans: dict[str, StructPlan], root: str) -> set[str]:
    """The structs a walk from ``root`` calls (an array of fixed-width elements skips them, uncalled)."""
    return _closure(root, lambda name: _callees(plans[name].steps))


def _closure(root: str, next_of) -> set[str]:
    """``root`` and every struct ``next_of`` leads to from it, transitively."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += next_of(name)
    return seen


def _callees(steps: tuple) -> list[str]:
    out: list[str] = []
    for s in steps:
        if isinstance(s, Call):
            out.append(s.struct)
        elif isinstance(s, Array) and s.elem is not None:
            out.append(s.elem)
        elif isinstance(s, Switch):
            out += [name for _, name in s.cases]
        elif isinstance(s, Cond):
            out += _callees(s.steps)
    return out


def factor(ir: n.FormatIR) -> int:
    """A bound on the memory a decoder accounts per byte of input: 1 + the cost per byte of every array's
    elements (each element takes at least its minimum size, and elements of one array field never share bytes),
    over the structs one value can reach (the version a protocol message is read at: the largest sum). A frame
    whose size times this is within ``max_memory`` cannot exceed a memory budget; a larger one is decoded at
    once, not walked."""
    root = ir.struct(ir.root)
    tops = [name for f in root.fields if isinstance(f.wire, n.Switch) for _, name in f.wire.cases] or [ir.root]
    return 1 + max(sum(_cost_per_byte(ir.struct(s)) for s in _reachable(ir, t)) for t in set(tops))


def _cost_per_byte(st: n.Struct) -> int:
    return sum(math.ceil(f.wire.budget.cost / max(f.wire.min_elem_size, 1)) for f in st.fields
               if isinstance(f.wire, n.ArrayType) and f.wire.budget is not None)  # fmt: skip


def _reachable(ir: n.FormatIR, top: str) -> set[str]:
    """The structs a value of ``top`` can hold: its elements, nested structs, switch cases and tagged fields."""
    return _closure(top, lambda name: _nested(ir.struct(name)))


def _nested(st: n.Struct) -> list[str]:
    out: list[str] = []
    for f in st.fields:
        w = f.wire
        out += [w.elem] if isinstance(w, n.ArrayType) else [w.name] if isinstance(w, n.StructType) else []
        out += [name for _, name in w.cases] if isinstance(w, n.Switch) else []
        out += [t.struct for t in w.fields] if isinstance(w, n.Tagged) else []
    return out


def _params_only(e: n.Expr | None, where: str) -> None:
    """Refuse an expression over anything but parameters (the walk reads no field's value)."""
    if e is None:
        return
    if isinstance(e, n.Ref):
        if e.owner != "<params>":
            raise NoCheck(f"{where}: a condition on field {e.name}")
        return
    for x in vars(e).values():
        if isinstance(x, tuple):
            for y in x:
                _params_only(y, where)
        elif isinstance(x, (n.Ref, n.Compare, n.All, n.Truthy, n.Arith, n.Choose, n.Length, n.Fold)):
            _params_only(x, where)


def _struct(ir: n.FormatIR, st: n.Struct, ids) -> StructPlan:
    if st.regions or st.views or st.wrappers or st.logical:
        raise NoCheck(f"{st.name}: regions, views, wrappers or logical values")
    for p in st.params:
        if p.owner != "<params>":
            raise NoCheck(f"{st.name}: a parameter from a field ({p.name})")
    _params_only(st.requires, st.name)
    steps: list = [Requires(st.requires)] if st.requires is not None else []
    for f in st.fields:
        step = _field(ir, st, f, ids)
        if f.condition is not None:
            _params_only(f.condition, f"{st.name}.{f.name}")
            step = Cond(f.condition, (step,))
        _append(steps, step)
    return StructPlan(st.name, tuple(p.name for p in st.params), tuple(steps))


def _append(steps: list, step) -> None:
    """Consecutive fixed widths are one skip (one bounds check)."""
    if isinstance(step, Skip) and steps and isinstance(steps[-1], Skip):
        last = steps[-1]
        facts = last.facts + tuple((o + last.width, k, i, name) for o, k, i, name in step.facts)
        steps[-1] = Skip(last.width + step.width, facts)
    else:
        steps.append(step)


#: Kafka's name of an error code (the facts a walk tells: kfmt.payloads.error_codes counts these)
ERROR_CODE = "ErrorCode"


def _field(ir: n.FormatIR, st: n.Struct, f: n.Field, ids):
    w = f.wire
    where, name = f"{st.name}.{f.name}", f.orig_name or f.name
    if f.const is not None or f.bits or f.derived is not None:
        raise NoCheck(f"{where}: a constant, bits or a derived value")
    if isinstance(w, n.Int):
        if _is_code(f):
            return Skip(2, ((0, "code", -1, name),))
        return Skip(w.width, ((0, "uuid", next(ids), name),) if w.kind == "uuid" else ())
    if isinstance(w, n.Varint):
        return VarintSkip(w.max_bytes)
    if isinstance(w, n.Blob):
        if isinstance(w.length, n.CountFrom):
            raise NoCheck(f"{where}: a length from another field")
        return Bytes(w.length, w.nullable, w.text, w.max, next(ids) if w.text else None, w.view, name)
    if isinstance(w, n.ArrayType):
        return _array(ir, w, where, name, ids)
    if isinstance(w, n.StructType):
        if w.size is not None or (w.nullable and w.marker is None):
            raise NoCheck(f"{where}: a sized struct")
        return Call(w.name, w.marker, name)
    if isinstance(w, n.Switch):
        if w.selector.owner != "<params>":
            raise NoCheck(f"{where}: a switch on a field")
        return Switch(w.selector.name, tuple(w.grouped()))
    if isinstance(w, n.Tagged):
        return NoTags()
    raise NoCheck(f"{where}: {type(w).__name__}")


def _array(ir: n.FormatIR, w: n.ArrayType, where: str, name: str, ids) -> Array:
    if w.size is not None or w.compressed_by is not None or not isinstance(w.count, (n.Int, n.Varint)):
        raise NoCheck(f"{where}: a sized, compressed or uncounted array")
    if w.min_elem_size < 1:
        raise NoCheck(f"{where}: elements that may take no bytes")
    fixed = _fixed_width(ir.struct(w.elem))  # (the bytes a count may claim: no fewer than its elements take)
    least = max(w.min_elem_size, fixed or 0)
    if fixed and not _tells(ir.struct(w.elem)):  # (elements with an error code or uuid are walked, to tell them)
        return Array(w.count, w.nullable, w.limit, least, None, fixed, None, name)
    return Array(w.count, w.nullable, w.limit, least, w.elem, None, next(ids), name)


def _is_code(f: n.Field) -> bool:
    """Whether a field is an error code a walk tells (an int16 Kafka names ErrorCode)."""
    w = f.wire
    return (
        isinstance(w, n.Int) and (f.orig_name or f.name) == ERROR_CODE and w.width == 2 and w.signed and w.kind == "int"
    )


def _tells(st: n.Struct) -> bool:
    """Whether a struct holds a fact a walk tells (an error code, a uuid)."""
    return any(_is_code(f) or (isinstance(f.wire, n.Int) and f.wire.kind == "uuid") for f in st.fields)


def _fixed_width(st: n.Struct) -> int | None:
    """The width of a struct that is only fixed-width values with nothing to check (``[]int32``'s element)."""
    if st.requires is not None or st.params or st.regions or st.views or st.wrappers:
        return None
    width = 0
    for f in st.fields:
        if not isinstance(f.wire, n.Int) or f.condition is not None or f.const is not None or f.bits or f.derived:
            return None
        width += f.wire.width
    return width or None
