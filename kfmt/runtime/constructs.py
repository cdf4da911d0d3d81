"""Construct building blocks for Kafka's wire conventions, used by the generated Construct backend.

Construct has no nullable length-prefixed bytes, no Kafka-exact varints, no
"CRC over the rest of a region written before it" and no Kafka compression, so
these few classes add them.  Each is format-independent; the generated modules
compose them declaratively (``this`` expressions, no lambdas).

One file (past 600 lines) because it is one vocabulary: the blocks every generated ``construct.py``
imports by name from here, each small and independent of the others.
"""

from __future__ import annotations

import io
import zlib
from typing import Any

import construct as c
from construct.core import stream_read, stream_seek, stream_tell, stream_write
from crc32c import crc32c

from kfmt.runtime import compression as _compression
from kfmt.runtime.errors import CodecError, InvalidValueError, UnsupportedCodecError
from kfmt.runtime.tagged import write_tagged
from kfmt.runtime.varint import _MASK32, _MASK64, write_uvarint, write_varint, write_varlong

_I32 = c.Int32sb


class SubStream(io.BytesIO):
    """A bounded stream cut from a parent stream; remembers where, so tools can map offsets back."""

    parent = None
    base = 0
    compressed = False


def _sub(data, parent, base, compressed=False) -> SubStream:
    s = SubStream(data)
    s.parent, s.base, s.compressed = parent, base, compressed
    return s


def _parse_span(subcon, stream, n, context, path):
    """Parse ``subcon`` from the next ``n`` bytes of ``stream``; returns the value and how many bytes it used."""
    base = stream_tell(stream, path)
    sub = _sub(stream_read(stream, n, path), stream, base)
    return subcon._parsereport(sub, context, path), sub.tell()


def _build_alone(subcon, obj, context, path) -> bytes:
    """The bytes of ``subcon`` built on their own (what a length or CRC written before them measures)."""
    sub = io.BytesIO()
    subcon._build(obj, sub, context, path)
    return sub.getvalue()


def _checksum(func: str, data) -> int:
    # the standard library's CRC-32 on purpose: this backend checks the codec backend (kfmt.runtime.checksums)
    return crc32c(data) if func == "crc32c" else zlib.crc32(data) & 0xFFFFFFFF


def _verify(func: str, data, stored: int, context, verify_key: str, path) -> None:
    """Raise a ChecksumError if ``stored`` is not the checksum of ``data`` (unless the parse turned checks off)."""
    if context._params.get(verify_key, True):
        computed = _checksum(func, data)
        if computed != stored:
            raise c.ChecksumError(f"stored {func} {stored:#010x} != computed {computed:#010x}", path=path)


class KVarint(c.Construct):
    """Kafka varint: zigzag (signed) or plain (unsigned); 5 bytes max for 32 bits, 10 for 64; masked.
    ``compact``: Kafka's compact length or count, an unsigned varint holding N + 1 (0: null, read as -1)."""

    def __init__(self, bits: int = 32, signed: bool = True, compact: bool = False):
        super().__init__()
        self.bits, self.signed, self.compact = bits, signed, compact
        self.max_len = 5 if bits == 32 else 10
        self.mask = _MASK32 if bits == 32 else _MASK64

    def _parse(self, stream, context, path):
        result = shift = 0
        for _ in range(self.max_len):
            b = stream_read(stream, 1, path)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                v = result & self.mask
                return (v >> 1) ^ -(v & 1) if self.signed else v - self.compact
            shift += 7
        raise c.ValidationError(f"varint is too long: continuation bit set on byte {self.max_len}", path=path)

    def _build(self, obj, stream, context, path):
        out = bytearray()
        if not self.signed:
            write_uvarint(out, obj + self.compact)
        elif self.bits == 32:
            write_varint(out, obj)
        else:
            write_varlong(out, obj)
        stream_write(stream, bytes(out), len(out), path)
        return obj

    def _sizeof(self, context, path):
        raise c.SizeofError("varint has no fixed size", path=path)


class _LengthPrefixed(c.Construct):
    """Shared by KBytes and KSized: a length prefix where, if ``nullable``, a negative length means None."""

    lengthfield: Any = None
    nullable = False

    def _length(self, stream, context, path) -> int | None:
        n = self.lengthfield._parsereport(stream, context, path)
        if n < 0:
            if self.nullable:
                return None
            raise c.ValidationError(f"negative length {n}", path=path)
        return n

    def _build_null(self, stream, context, path):
        if not self.nullable:
            raise c.ValidationError("may not be null", path=path)
        self.lengthfield._build(-1, stream, context, path)


class _Elements(c.Construct):
    """An array whose length is not written by the array itself: building writes the elements only.

    Parsing checks the ``max_memory`` budget the optimised backend checks, in the same order: the bytes
    the array spans plus ``cost`` per element (all at once for a known count, one by one otherwise),
    then, after each element, ``cost`` per element of the arrays inside it (``nested``: (name, cost)
    pairs, the headers of a record)."""

    subcon: Any = None
    limit = "max_records"
    cost = 0
    min = 1
    nested: tuple = ()

    def _parse_elements(self, stream, context, path, n: int | None):
        opts = _opts(context)
        here = stream_tell(stream, path)
        end = stream.seek(0, io.SEEK_END)
        stream.seek(here)
        left = end - here
        budget = opts.max_memory - left
        if n is not None:
            _check_count(n, self.limit, context, path)
            if n * self.min > left:
                raise c.ValidationError(f"count {n} needs at least {n * self.min} bytes, {left} left", path=path)
            budget -= n * self.cost
            if self.cost:  # 0: the elements are counted by an enclosing array's budget
                _check_budget(budget, opts, path)
        out = c.ListContainer()
        while (len(out) < n) if n is not None else stream_tell(stream, path) < end:
            if n is None:
                if len(out) >= getattr(opts, self.limit):
                    raise LimitError(f"more than {getattr(opts, self.limit)} elements", path=path)
                budget -= self.cost
                if self.cost:
                    _check_budget(budget, opts, path)
            item = self.subcon._parsereport(stream, context, path)
            out.append(item)
            for name, cost in self.nested:  # an array absent at this version (None) holds nothing
                budget -= len(_member(item, name) or ()) * cost
            if self.nested:
                _check_budget(budget, opts, path)
        return out

    def _build(self, obj, stream, context, path):
        for item in obj:
            self.subcon._build(item, stream, context, path)
        return obj


def _check_budget(budget: int, opts, path) -> None:
    if budget < 0:
        raise LimitError(
            f"decoding needs an estimated {opts.max_memory - budget} bytes, over max_memory={opts.max_memory}",
            path=path,
        )


def _member(item, name: str):
    """Field ``name`` of a parsed struct, looking into the groups Region / CrcGuarded introduce."""
    if name in item:
        return item[name]
    for k, v in item.items():
        if k.startswith("_g") and isinstance(v, dict):
            found = _member(v.get("value", v) if "offset1" in v else v, name)
            if found is not None:
                return found
    return None


class KArray(_Elements):
    """An array whose count is another field (a context expression), checked against ``limit`` first."""

    def __init__(self, count, subcon, limit: str = "max_records", cost: int = 0, min: int = 1, nested: tuple = ()):
        super().__init__()
        self.count, self.subcon, self.limit, self.cost, self.nested = count, subcon, limit, cost, nested
        self.min = min

    def _parse(self, stream, context, path):
        return self._parse_elements(stream, context, path, c.evaluate(self.count, context))


class KBytes(_LengthPrefixed):
    """Length-prefixed bytes or UTF-8 string; with ``nullable`` a negative length is None. A length above
    ``max_len`` (or the ``max_bytes`` option) is an error before anything is read."""

    def __init__(self, lengthfield, *, nullable: bool, string: bool, max_len: int | None = None):
        super().__init__()
        self.lengthfield, self.nullable, self.string, self.max_len = lengthfield, nullable, string, max_len

    def _parse(self, stream, context, path):
        n = self._length(stream, context, path)
        if n is None:
            return None
        cap = self.max_len if self.max_len is not None else _opts(context).max_bytes
        if n > cap:
            raise LimitError(f"length {n} exceeds the limit", path=path)
        data = stream_read(stream, n, path)
        return str(data, "utf-8", "surrogateescape") if self.string else data

    def _build(self, obj, stream, context, path):
        if obj is None:
            self._build_null(stream, context, path)
            return obj
        if (
            self.string
            and not isinstance(obj, str)
            or not self.string
            and not isinstance(obj, (bytes, bytearray, memoryview))
        ):
            raise c.ValidationError(
                f"expected {'str' if self.string else 'bytes'}, got {type(obj).__name__}", path=path
            )
        data = obj.encode("utf-8", "surrogateescape") if self.string else bytes(obj)
        self.lengthfield._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class KRest(c.Construct):
    """The bytes up to the end of the enclosing region, less a fixed trailer."""

    def __init__(self, trailer: int = 0):
        super().__init__()
        self.trailer = trailer

    def _parse(self, stream, context, path):
        data = stream.read()
        if len(data) < self.trailer:
            raise c.StreamError("no room for the trailer", path=path)
        if self.trailer:
            stream.seek(-self.trailer, io.SEEK_CUR)
            data = data[: -self.trailer]
        cap = _opts(context).max_bytes
        if len(data) > cap:
            raise LimitError(f"length {len(data)} exceeds the limit", path=path)
        return data

    def _build(self, obj, stream, context, path):
        stream_write(stream, bytes(obj), len(obj), path)
        return obj


class LimitError(c.ValidationError):
    """A count or length above the decode options' limit (reported as LimitExceededError)."""


class UnsupportedError(c.ValidationError):
    """An unknown compression codec id (reported as UnsupportedCodecError, as the Python backend does)."""


def _opts(context):
    """The DecodeOptions a parse was started with (``parse_stream(..., opts=...)``), else the defaults."""
    from kfmt.runtime.options import DEFAULT_OPTIONS

    return getattr(getattr(context, "_params", None), "opts", None) or DEFAULT_OPTIONS


def _check_count(n: int, limit: str, context, path) -> None:
    if n < 0:
        raise c.ValidationError(f"negative count {n}", path=path)
    cap = getattr(_opts(context), limit)
    if n > cap:
        raise LimitError(f"count {n} exceeds the limit of {cap}", path=path)


class KCounted(_Elements):
    """An array whose count is a prefix; a negative count, or one above the ``limit`` option
    (``max_headers`` or ``max_records``), is an error before anything is allocated. ``nullable``: a negative
    count (compact: 0) is a null array, and None writes it."""

    def __init__(self, countfield, subcon, limit: str = "max_headers", cost: int = 0, min: int = 1, nested: tuple = (),
                 nullable: bool = False):  # fmt: skip
        super().__init__()
        self.countfield, self.subcon, self.limit, self.cost, self.nested = countfield, subcon, limit, cost, nested
        self.min, self.nullable = min, nullable

    def _parse(self, stream, context, path):
        n = self.countfield._parsereport(stream, context, path)
        if n < 0 and self.nullable:
            return None  # a null array: count -1 (compact: 0)
        return self._parse_elements(stream, context, path, n)

    def _build(self, obj, stream, context, path):
        if obj is None and self.nullable:
            self.countfield._build(-1, stream, context, path)
            return obj
        self.countfield._build(len(obj), stream, context, path)
        return super()._build(obj, stream, context, path)


class BitsView(c.Adapter):
    """Named views of an integer attributes field: ``(name, mask, shift, kind, enum[, const[, codec]])``, kind
    enum|flag|int; ``codec``: an unknown id of this enum view is an unsupported compression codec;
    a view with a ``const`` must hold that raw value."""

    def __init__(self, subcon, views):
        super().__init__(subcon)
        self.views = views

    def _decode(self, obj, context, path):
        out = c.Container()
        for name, mask, shift, kind, enum, *extra in self.views:
            const, codec = (extra + [None, False])[:2]
            v = (obj & mask) >> shift
            if const is not None and v != const:
                raise c.ValidationError(f"{name} must be {const} in this format", path=path)
            if kind == "enum":
                if v not in enum:
                    raise (UnsupportedError if codec else c.ValidationError)(f"unknown {name} id {v}", path=path)
                v = enum[v]
            elif kind == "flag":
                v = v != 0
            out[name] = v
        return out

    def _encode(self, obj, context, path):
        raw = 0
        for name, mask, shift, kind, enum, *_const in self.views:
            v = obj.get(name)
            if kind == "enum":
                ids = {n: k for k, n in enum.items()}
                if v not in ids:
                    raise c.ValidationError(f"unknown {name} {v!r}", path=path)
                v = ids[v]
            elif kind == "flag":
                v = 1 if v else 0
            raw |= ((v or 0) << shift) & mask
        return raw


class Region(c.Construct):
    """A length field followed by the fields it measures; the parsed length is kept under ``name``."""

    def __init__(self, name: str, lengthfield, subcon, minimum: int = 0):
        super().__init__()
        self.lname, self.lengthfield, self.subcon, self.minimum = name, lengthfield, subcon, minimum

    def _parse(self, stream, context, path):
        n = self.lengthfield._parsereport(stream, context, path)
        if n < self.minimum:
            raise c.ValidationError(f"{self.lname} {n} is below the minimum of {self.minimum}", path=path)
        obj, used = _parse_span(self.subcon, stream, n, context, path)
        if used != n:
            raise c.ValidationError(f"{self.lname} declares {n} bytes but the fields end at {used}", path=path)
        obj[self.lname] = n
        return obj

    def _build(self, obj, stream, context, path):
        data = _build_alone(self.subcon, obj, context, path)
        self.lengthfield._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class CrcGuarded(c.Construct):
    """A uint32 CRC followed by the fields it covers: to the end of the enclosing region, or (``to_end``
    False) exactly the fields of ``subcon``."""

    def __init__(self, name: str, func: str, subcon, verify_key: str = "verify_crc", to_end: bool = True):
        super().__init__()
        self.cname, self.func, self.subcon, self.verify_key, self.to_end = name, func, subcon, verify_key, to_end

    def _parse(self, stream, context, path):
        stored = c.Int32ub._parsereport(stream, context, path)
        start = stream_tell(stream, path)
        if self.to_end:  # check before parsing: a corrupt body is reported as corrupt, not as malformed
            _verify(self.func, stream.read(), stored, context, self.verify_key, path)
            stream.seek(start)
            obj = self.subcon._parsereport(stream, context, path)
        else:
            obj = self.subcon._parsereport(stream, context, path)
            end = stream_tell(stream, path)
            stream.seek(start)
            _verify(self.func, stream.read(end - start), stored, context, self.verify_key, path)
        obj[self.cname] = stored
        return obj

    def _build(self, obj, stream, context, path):
        data = _build_alone(self.subcon, obj, context, path)
        c.Int32ub._build(_checksum(self.func, data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class KafkaCompressed(c.Construct):
    """The rest of the region, compressed by Kafka's framing for the codec named by ``codec`` (a ``this`` expression)."""

    def __init__(self, subcon, codec, magic: int, count=None):
        super().__init__()
        self.subcon, self.codec, self.magic, self.count = subcon, codec, magic, count

    def _parse(self, stream, context, path):
        codec = c.evaluate(self.codec, context)
        base = stream_tell(stream, path)
        data = stream.read()
        if self.count is not None and c.evaluate(self.count, context) == 0:
            return c.ListContainer()  # Kafka: a count of 0 iterates as empty whatever follows
        compressed = codec != "none" and bool(data)
        if compressed:
            data = _compression.decompress(codec, data, self.magic, context._params.opts)
        sub = _sub(data, stream, base, compressed)
        obj = self.subcon._parsereport(sub, context, path)
        if sub.tell() != len(data):
            raise c.ValidationError(f"{len(data) - sub.tell()} bytes remain after the last element", path=path)
        return obj

    def _build(self, obj, stream, context, path):
        codec = c.evaluate(self.codec, context)
        data = _build_alone(self.subcon, obj, context, path)
        if codec != "none" and obj:
            data = _compression.compress(codec, data, self.magic)
        stream_write(stream, data, len(data), path)
        return obj


class KTagged(c.Construct):
    """Kafka's tagged-field section: parses to ``{"known": {name: value}, "unknown": [(tag, bytes)]}`` and
    builds from the same; ``fields`` are (tag, name, subcon, condition or None). A named field's value must
    fill its tag's bytes exactly; tags are read in any order (a known tag twice: the last one), written in order."""

    _COUNT = KVarint(32, signed=False)

    def __init__(self, fields):
        super().__init__()
        self.fields = {tag: (name, sub, cond) for tag, name, sub, cond in fields}

    def _known(self, tag: int, context):
        entry = self.fields.get(tag)
        if entry is None or (entry[2] is not None and not c.evaluate(entry[2], context)):
            return None
        return entry

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        n = self._COUNT._parsereport(stream, context, path)
        known, unknown = {}, []
        for _ in range(n):  # in any order, as Kafka's reader takes them (a known tag twice: the last one)
            tag = self._COUNT._parsereport(stream, context, path)
            size = self._COUNT._parsereport(stream, context, path)
            entry = self._known(tag, context)
            if entry is None and tag in self.fields:  # Kafka's reader: "Tag N is not valid for version V"
                raise c.ValidationError(f"tag {tag} ({self.fields[tag][0]}) is not valid at this version", path=path)
            if entry is None:
                unknown.append((tag, stream_read(stream, size, path)))
                continue
            value, used = _parse_span(entry[1], stream, size, context, path)
            if used != size:
                raise c.ValidationError(f"tag {tag} ({entry[0]}) holds {size} bytes, its value {used}", path=path)
            known[entry[0]] = value
        stop = stream_tell(stream, path)
        stream_seek(stream, start, 0, path)
        raw = stream_read(stream, stop - start, path)  # the section as read: kept when Kafka would not write it so
        return c.Container(known=known, unknown=unknown, raw=raw)

    def _build(self, obj, stream, context, path):
        out = bytearray()
        known = []
        valid = {tag for tag in self.fields if self._known(tag, context) is not None}  # at this version
        for tag, (name, sub, _cond) in sorted(self.fields.items()):
            if name in obj["known"] and tag in valid:
                known.append((tag, _build_alone(sub, obj["known"][name], context, path)))
        write_tagged(out, known, obj["unknown"], path, valid)
        stream_write(stream, bytes(out), len(out), path)
        return obj


class KNullMarked(c.Construct):
    """A nullable struct behind a null marker: int8 -1 (null) or 1, or (tagged) an unsigned varint 0 or 1."""

    def __init__(self, marker, subcon, null: int):
        super().__init__()
        self.marker, self.subcon, self.null = marker, subcon, null

    def _parse(self, stream, context, path):
        m = self.marker._parsereport(stream, context, path)
        if m == self.null:
            return None
        if m != 1:
            raise c.ValidationError(f"null marker {m} is neither {self.null} (null) nor 1 (present)", path=path)
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            self.marker._build(self.null, stream, context, path)
            return None
        self.marker._build(1, stream, context, path)
        return self.subcon._build(obj, stream, context, path)


class Requires(c.Construct):
    """A struct decoded and encoded only when ``cond`` holds (its message's valid versions); takes no bytes."""

    def __init__(self, cond, message: str, field: str):
        super().__init__()
        self.cond, self.message, self.field = cond, message, field
        self.flagbuildnone = True  # nothing of the value is built from it

    def _check(self, context, path):
        if not c.evaluate(self.cond, context):
            value = outer(context, self.field)
            raise c.ValidationError(self.message.format(value=value), path=path)

    def _parse(self, stream, context, path):
        self._check(context, path)

    def _build(self, obj, stream, context, path):
        self._check(context, path)

    def _sizeof(self, context, path):
        return 0


class NoCase(c.Construct):
    """A switch's default: the selector names no layout this format knows."""

    def __init__(self, selector: str, known: str):
        super().__init__()
        self.selector, self.known = selector, known

    def _parse(self, stream, context, path):
        value = outer(context, self.selector)
        raise c.ValidationError(f"no layout for {self.selector} {value} (known: {self.known})", path=path)

    def _build(self, obj, stream, context, path):
        self._parse(stream, context, path)


def case(value, cls, name: str, selector: str, chosen):
    """``value`` as the case a switch's selector chose: an instance of that case's class, else one line."""
    if type(value) is not cls:
        raise InvalidValueError(
            f"{name} must be a {cls.__name__} when {selector} is {chosen}, not {type(value).__name__}"
        )
    return value


def no_case(selector: str, chosen, known: str):
    raise InvalidValueError(f"no layout for {selector} {chosen} (known: {known})")


def outer(context, name: str):
    """The value ``name`` of the nearest enclosing struct being parsed or built that has it (a nested struct
    or an array element reading its container's ``version``): up the context chain (``_``)."""
    ctx = context
    while ctx is not None:
        if name in ctx:
            return ctx[name]
        ctx = ctx.get("_")
    raise c.ValidationError(f"no enclosing value {name!r}")


def flatten(container) -> dict:
    """Merge the groups that Region / CrcGuarded introduce (keys starting with '_g') into one mapping."""
    out = {}
    for k, v in container.items():
        if k.startswith("_g"):
            if "data" in v and "value" in v and "offset1" in v:  # a RawCopy group (the fields under a trailing CRC)
                v = v["value"]
            out.update(flatten(v))
        elif not k.startswith("_"):
            out[k] = v
    return out


def map_errors(fn, *args, **kwargs):
    """Run a Construct parse/build; report failures as CodecError like the codec backend."""
    from kfmt.runtime.errors import ChecksumError, LimitExceededError, TruncatedError

    try:
        return fn(*args, **kwargs)
    except CodecError:
        raise
    except c.StreamError as e:
        raise TruncatedError(f"input ends early ({_msg(e)})", path=_path(e)) from None
    except c.ChecksumError as e:
        raise ChecksumError(f"{_msg(e)} (corrupt data)", path=_path(e)) from None
    except LimitError as e:
        raise LimitExceededError(_msg(e), path=_path(e)) from None
    except UnsupportedError as e:
        raise UnsupportedCodecError(_msg(e), path=_path(e)) from None
    except (c.ConstructError, ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError) as e:
        raise InvalidValueError(_msg(e), path=_path(e)) from None


def _msg(e) -> str:
    return str(e).strip().splitlines()[-1]


def _path(e) -> str | None:
    raw = getattr(e, "path", None)
    if not raw:
        return None
    parts = [p.strip() for p in raw.split("->")[1:]]
    parts = [p for p in parts if p and not p.startswith(("_g", "("))]
    return ".".join(p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]) or None


class KSized(_LengthPrefixed):
    """A struct or array preceded by its byte length; with ``nullable`` a negative length is None."""

    def __init__(self, lengthfield, subcon, nullable: bool = False):
        super().__init__()
        self.lengthfield, self.subcon, self.nullable = lengthfield, subcon, nullable

    def _parse(self, stream, context, path):
        n = self._length(stream, context, path)
        if n is None:
            return None
        obj, used = _parse_span(self.subcon, stream, n, context, path)
        if used != n:
            raise c.ValidationError(f"length {n} does not match the content", path=path)
        return obj

    def _build(self, obj, stream, context, path):
        if obj is None:
            self._build_null(stream, context, path)
            return obj
        data = _build_alone(self.subcon, obj, context, path)
        self.lengthfield._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class KUntilEnd(_Elements):
    """Elements up to the end of the enclosing region; unlike GreedyRange, a bad element is an error."""

    def __init__(self, subcon, limit: str = "max_records", cost: int = 0, min: int = 1, nested: tuple = ()):
        super().__init__()
        self.subcon, self.limit, self.cost, self.nested = subcon, limit, cost, nested
        self.min = min

    def _parse(self, stream, context, path):
        return self._parse_elements(stream, context, path, None)


class TrailingCrc(c.Construct):
    """A uint32 CRC over bytes parsed just before it (``data``: a ``this`` expression), checked unless
    the ``verify_crc`` parse option is false."""

    def __init__(self, func: str, data, verify_key: str = "verify_crc"):
        super().__init__()
        self.func, self.data, self.verify_key = func, data, verify_key
        self.flagbuildnone = True  # computed on build: the caller gives no value

    def _parse(self, stream, context, path):
        stored = c.Int32ub._parsereport(stream, context, path)
        _verify(self.func, c.evaluate(self.data, context), stored, context, self.verify_key, path)
        return stored

    def _build(self, obj, stream, context, path):
        value = _checksum(self.func, c.evaluate(self.data, context))
        c.Int32ub._build(value, stream, context, path)
        return value

    def _sizeof(self, context, path):
        return 4
