"""Reading a schema file's YAML with the line of every value kept (:class:`_Located`), and the checks every
key and value goes through (one-line errors naming the file, line and key path: :class:`_Ctx`)."""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from generator.loader.spec import (
    ENTRY_POINTS,
    IDENT,
    MAX_DEPTH,
    MAX_INT,
    MAX_INT_DIGITS,
    MAX_SCALAR,
    RESERVED,
    RESERVED_PREFIX,
    SchemaError,
)


class _Located:
    __slots__ = ("value", "line")

    def __init__(self, value, line):
        self.value = value
        self.line = line


def _construct(node, file, scalars=None):
    """``node`` as located values; ``scalars``: the file's one constructor of scalar values (a loader made per
    scalar cost more than the rest of reading a schema)."""
    if scalars is None:
        scalars = yaml.constructor.SafeConstructor()
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for k, v in node.value:
            key = _construct(k, file, scalars)
            if not isinstance(key.value, (str, int)) or isinstance(key.value, bool):
                raise SchemaError(f"{file}:{key.line}: mapping keys must be strings or integers")
            if key.value in out:
                raise SchemaError(f"{file}:{key.line}: duplicate key {key.value!r}")
            out[key.value] = _construct(v, file, scalars)
        return _Located(out, line)
    if isinstance(node, yaml.SequenceNode):
        return _Located([_construct(v, file, scalars) for v in node.value], line)
    if isinstance(node, yaml.ScalarNode):
        if node.tag and node.tag.startswith("!") and not node.tag.startswith("tag:yaml.org"):
            raise SchemaError(f"{file}:{line}: YAML tags are not allowed ({node.tag})")
        try:
            value = scalars.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            raise SchemaError(f"{file}:{line}: {getattr(e, 'problem', e)}") from None
        return _Located(value, line)
    raise SchemaError(f"{file}:{line}: unsupported YAML node")


class _Ctx:
    """Where we are in a file: produces located errors."""

    def __init__(self, file: str, path: str = "", line: int = 1):
        self.file, self.path, self.line = file, path, line

    def sub(self, key, located: _Located | None = None) -> _Ctx:
        p = f"{self.path}[{key}]" if isinstance(key, int) else (f"{self.path}.{key}" if self.path else str(key))
        return _Ctx(self.file, p, located.line if located is not None else self.line)

    def error(self, msg: str) -> SchemaError:
        where = f"{self.file}:{self.line}"
        return SchemaError(f"{where} {self.path}: {msg}" if self.path else f"{where}: {msg}")


def _suggest(word, options) -> str:
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _mapping(loc: _Located, ctx: _Ctx, allowed: Mapping[str, Any], required=()) -> dict[str, _Located]:
    if not isinstance(loc.value, dict):
        raise ctx.error(f"expected a mapping, got {type(loc.value).__name__}")
    for k, v in loc.value.items():
        if k not in allowed:
            raise ctx.sub(k, v).error(f"unknown key {k!r}{_suggest(k, allowed)}; allowed: {', '.join(allowed)}")
        want = allowed[k]
        if want is not Any and not _is(v.value, want):
            raise ctx.sub(k, v).error(f"expected {_tname(want)}, got {type(v.value).__name__}")
    for k in required:
        if k not in loc.value:
            raise ctx.error(f"missing required key {k!r}")
    return loc.value


def _is(value, want) -> bool:
    wants = want if isinstance(want, tuple) else (want,)
    if isinstance(value, bool) and bool not in wants:
        return False
    return isinstance(value, wants)


def _tname(want) -> str:
    wants = want if isinstance(want, tuple) else (want,)
    names = {str: "a string", int: "an integer", bool: "a boolean", dict: "a mapping", list: "a list"}
    return " or ".join(names.get(w, w.__name__) for w in wants)


def _ident(name, ctx: _Ctx, what="name", *, reserved: bool = True) -> str:
    if not isinstance(name, str) or not IDENT.match(name) or keyword.iskeyword(name) or name.startswith("_"):
        raise ctx.error(f"{what} {name!r} is not a valid lower_snake Python identifier")
    if len(name) > 64:
        raise ctx.error(f"{what} {name!r} is longer than 64 characters")
    if reserved and (name in RESERVED or RESERVED_PREFIX.match(name)):
        raise ctx.error(f"{what} {name!r} is reserved by the generated code (names of generated locals)")
    if reserved and name in ENTRY_POINTS:
        raise ctx.error(f"{what} {name!r} is reserved: generated modules define {name}()")
    return name


def _enum_value(name, ctx: _Ctx) -> str:
    """An enum value: a name as the source spells it (``gzip``, Kafka's ``CompleteCommit``), letters, digits
    and underscores, at most 64 characters; it is data (a string), never a Python name."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name):
        raise ctx.error(f"enum value {name!r} must be letters, digits and underscores (at most 64), a letter first")
    return name


def _text(value, ctx: _Ctx, limit=4000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ctx.error("expected a string")
    if len(value) > limit:
        raise ctx.error(f"text longer than {limit} characters")
    return value


def _int(value, ctx: _Ctx, lo=-(2**63), hi=MAX_INT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.error(f"expected an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ctx.error(f"{value} is out of range [{lo}, {hi}]")
    return value


#: libyaml's safe loader where PyYAML was built with it (the same events and nodes, several times faster)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read(path: Path, display: str) -> _Located:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SchemaError(f"{display}: cannot read: {e.strerror or e}") from None
    if len(raw) > 1_000_000:
        raise SchemaError(f"{display}: schema file larger than 1 MB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SchemaError(f"{display}:{line}: not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})") from None
    try:
        _prescan(text, display)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(e, "problem", e)
        if "maximum nesting depth" in str(problem):  # libyaml's own limit, met before ours in flow style
            raise SchemaError(f"{display}:{line}: nested deeper than {MAX_DEPTH} levels") from None
        raise SchemaError(f"{display}:{line}: invalid YAML: {problem}") from None
    if node is None:
        raise SchemaError(f"{display}:1: empty schema")
    return _construct(node, display)


_INT_LIKE = re.compile(r"[-+]?(0[xob])?[0-9a-fA-F_]+")


def _prescan(text: str, display: str) -> None:
    """Refuse what would make composing the YAML itself costly, before any node is built: anchors and
    aliases (a few lines of aliases expand to billions of nodes; a recursive one never ends), nesting
    deeper than MAX_DEPTH (the composer recurses), and overlong scalars and integer literals."""
    depth = 0
    for ev in yaml.parse(text, Loader=_LOADER):
        line = ev.start_mark.line + 1
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
            name = getattr(ev, "anchor", None) or ""
            raise SchemaError(f"{display}:{line}: YAML anchors and aliases are not allowed (&{name} / *{name})")
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise SchemaError(f"{display}:{line}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(ev, yaml.ScalarEvent):
            if len(ev.value) > MAX_SCALAR:
                raise SchemaError(
                    f"{display}:{line}: value too long ({len(ev.value)} characters, at most {MAX_SCALAR})"
                )
            if ev.implicit[0] and len(ev.value) > MAX_INT_DIGITS and _INT_LIKE.fullmatch(ev.value):
                raise SchemaError(f"{display}:{line}: integer literal too long ({len(ev.value)} digits)")


def _apply_override(base: _Located, ov: _Located, ctx: _Ctx) -> _Located:
    """Field-level override: ``{remove: [names], replace: {name: field}, doc: ...}``."""
    om = _mapping(ov, ctx, {"remove": list, "replace": dict, "doc": str, "orig_name": str})
    value = dict(base.value)
    fields = list(value["fields"].value)
    names = [f.value["name"].value for f in fields]
    for r in om["remove"].value if "remove" in om else []:
        if r.value not in names:
            raise ctx.sub("remove", om["remove"]).error(f"no field {r.value!r} to remove{_suggest(r.value, names)}")
        i = names.index(r.value)
        del fields[i], names[i]
    for rname, rv in (om["replace"].value if "replace" in om else {}).items():
        if rname not in names:
            raise ctx.sub("replace", om["replace"]).error(f"no field {rname!r} to replace{_suggest(rname, names)}")
        fields[names.index(rname)] = rv
    value["fields"] = _Located(fields, base.value["fields"].line)
    for k in ("doc", "orig_name"):
        if k in om:
            value[k] = om[k]
    return _Located(value, base.line)


def _trailing(value: str, ctx) -> str:
    if value not in ("exact", "ignore"):
        raise ctx.error(f"'trailing' must be exact or ignore, not {value!r}")
    return value
