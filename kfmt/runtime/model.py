"""Format-independent base classes for what decoders yield and encoders take.

Generated modules subclass these per format, adding a slot per wire field the
format has (``attributes``, ``timestamp_delta``...).  Attributes a format does
not have fall back to the class-level defaults here (for example a magic 0
batch reports ``producer_id == -1`` and ``timestamp_type is None``, as Kafka does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

_STD_RECORD = ("offset", "timestamp", "key", "value", "headers", "control")


class Record:
    """One record (v2) or message (v0/v1).

    ``headers`` is a list of ``(str, bytes | None)`` in wire order (duplicates kept);
    ``control`` is ``(version, type)`` for the records of a control batch, else None.
    """

    __slots__ = _STD_RECORD
    _fields = _STD_RECORD

    def __init__(self, key=None, value=None, headers=(), timestamp=None, offset=None, control=None):
        self.key = key
        self.value = value
        if not headers:
            self.headers = []
        elif type(headers) is list:  # the common case: copied, no attribute probing (which costs an exception)
            self.headers = headers.copy()
        else:
            if hasattr(headers, "keys"):
                raise TypeError("headers are a list of (str, bytes | None) pairs in wire order, not a mapping "
                                "(Kafka headers repeat and keep their order): use list(headers.items())")  # fmt: skip
            self.headers = list(headers)
        self.timestamp = timestamp
        self.offset = offset
        self.control = control

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        if type(self) is type(other):
            return all(getattr(self, f) == getattr(other, f) for f in self._fields)
        return all(getattr(self, f) == getattr(other, f) for f in _STD_RECORD)

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class Batch:
    """A v2 record batch, or a legacy shallow message / compressed wrapper.

    Subclasses hold the format's fields in slots; the defaults below answer for
    fields a format does not have.
    """

    __slots__ = ()
    _fields: tuple = ()
    if TYPE_CHECKING:  # every generated batch class has these (slots or properties)
        base_offset: int
        last_offset: int
        records: list
    magic: int | None = None
    partition_leader_epoch = -1
    crc = None
    codec = "none"
    timestamp_type = None
    is_transactional = False
    is_control = False
    has_delete_horizon = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    base_timestamp = -1
    max_timestamp = -1

    def as_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self._fields}
        if "records" in d:
            d["records"] = [r.as_dict() for r in d["records"]]
        return d

    def __eq__(self, other):
        if type(self) is not type(other):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields if f != "records")
        n = len(getattr(self, "records", ()) or ())
        return f"{type(self).__name__}({inner}, records=<{n}>)"


class Struct:
    """Base of generated classes for structs that are neither a batch nor a record."""

    __slots__ = ()
    _fields: tuple = ()

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other):
        if type(self) is not type(other):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class Message(Record, Batch):
    """A legacy (magic 0/1) log entry: a shallow message, or a compressed wrapper holding inner messages.

    As a batch, its ``records`` are the inner messages of a wrapper, or the message itself.
    Kafka reports a v0 message's timestamp as -1 and its timestamp type as None.
    """

    __slots__ = ()
    messages = None  # formats without compressed wrappers have no inner messages

    @property
    def records(self):  # type: ignore[override]  # computed for legacy entries
        inner = self.messages
        return inner if inner is not None else [self]

    @property
    def base_offset(self):  # type: ignore[override]  # computed for legacy entries
        inner = self.messages
        return inner[0].offset if inner else self.offset

    @property
    def last_offset(self):  # type: ignore[override]  # computed for legacy entries
        return self.offset

    @property
    def max_timestamp(self):  # type: ignore[override]  # computed for legacy entries
        return self.timestamp

    @property
    def base_timestamp(self):  # type: ignore[override]  # computed for legacy entries
        inner = self.messages
        return inner[0].timestamp if inner else self.timestamp

    def as_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self._fields if name != "messages"}
        if self.messages is not None:
            d["messages"] = [m.as_dict() for m in self.messages]
        return d

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields if f != "messages")
        n = "None" if self.messages is None else f"<{len(self.messages)}>"
        return f"{type(self).__name__}({inner}, messages={n})"


class FieldInfo(NamedTuple):
    """One field of a format's struct, for tools (``FIELDS`` of a generated format package): its wire
    ``kind`` (int, varint, blob, struct, array), ``wire`` type (``int32``, ``varint``, ``bytes(int32)``...),
    fixed ``width`` in bytes (None when variable), fixed ``offset`` from the struct's start (None after a
    variable-size field), the full ``label`` (with what it is derived from), Kafka's name, and the struct
    an array or struct field holds (``elem``)."""

    name: str
    kind: str
    wire: str
    width: int | None
    offset: int | None
    label: str
    orig_name: str
    elem: str | None
