"""Kafka's own payloads decoded by name: the keys and values of its internal topics (``__consumer_offsets``,
``__cluster_metadata`` and its snapshots, ``__transaction_state``, ``__share_group_state``,
``__remote_log_metadata``), with the schemas under ``schemas/messages`` (lowered from Kafka's JSON message
specs by ``kfmt import-kafka-spec``) and a binding table saying which schema reads which topic's keys and
values. A null value is a tombstone. May import: kfmt.runtime, kfmt.codec and the generated message packages.

    >>> p = decode_payload("__consumer_offsets", key_bytes, value_bytes)
    >>> p.key.type, p.value.type, p.value.version, p.value.data.offset
    ('OffsetCommitKey', 'OffsetCommitValue', 3, 41)
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import importlib
import math
from dataclasses import dataclass

from kfmt.codec.formats import backend_env, of_default_backend
from kfmt.runtime.errors import CodecError, InvalidValueError
from kfmt.runtime.options import DEFAULT_OPTIONS


@dataclass(frozen=True)
class Binding:
    """The schemas (ids in ``generated.messages``) of a topic's keys and values; ``param``: the value schema's
    parameter, taken from the decoded key's root field of that name (a coordinator's record type)."""

    key: str | None
    value: str
    param: str | None = None


#: which schemas read which topic (or kind of file): KRaft's records carry no key; a coordinator's value is
#: chosen by its key's record type (CoordinatorRecordSerde); "kraft-snapshot": *.checkpoint files
BINDINGS: dict[str, Binding] = {
    "__consumer_offsets": Binding("group_coordinator_key", "group_coordinator_value", "record_type"),
    "__transaction_state": Binding("transaction_coordinator_key", "transaction_coordinator_value", "record_type"),
    "__share_group_state": Binding("share_coordinator_key", "share_coordinator_value", "record_type"),
    "__cluster_metadata": Binding(None, "kraft_metadata"),
    "kraft-snapshot": Binding(None, "kraft_metadata"),
    "__remote_log_metadata": Binding(None, "remote_log_metadata"),
}


@dataclass(frozen=True)
class Decoded:
    """One key or value: Kafka's message name, its version, and the message (a generated value object)."""

    type: str
    version: int
    data: object
    trailing: bytes = b""  # bytes after the message that Kafka's reader ignores (kept, and a problem)

    def to_json(self) -> dict:
        """``{"type": ..., "version": N, "data": {<field as Kafka names it>: value}}`` (uuids in Kafka's base64
        form, bytes as hex, unknown tagged fields under ``_unknownTaggedFields`` when there are any), and
        ``"trailing"`` (hex) when bytes Kafka's reader ignores follow the message."""
        out = {"type": self.type, "version": self.version, "data": kafka_json(self.data, self.version)}
        return out | ({"trailing": self.trailing.hex()} if self.trailing else {})

    def problems(self) -> list[str]:
        """What in the message did not decode although the message did: bytes holding a message (a consumer
        group member's subscription or assignment) that do not parse stay bytes, and each says why here; so do
        bytes after the message that Kafka's reader ignores."""
        out = _view_errors(self.data, self.type)
        if self.trailing:
            out.append(f"{self.type}: {len(self.trailing)} byte(s) follow it (Kafka's reader ignores them; kept)")
        return out


@dataclass(frozen=True)
class Payload:
    """A record's key and value decoded (None: a null key or value, or a key the topic's records do not use)."""

    key: Decoded | None
    value: Decoded | None

    @property
    def problems(self) -> list[str]:
        """What in the key and value did not decode (see :meth:`Decoded.problems`), prefixed ``key``/``value``."""
        return [f"{w}.{p}" for w, d in (("key", self.key), ("value", self.value)) if d for p in d.problems()]


#: the schema of control records' values (KRaft's LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion
#: and Voters), chosen by the control type (ABORT and COMMIT markers are read by kfmt.log.txn)
CONTROL_SCHEMA = "raft_control"
CONTROL_TYPES = frozenset(range(2, 7))


def decode_control(control_type: int, value, *, backend: str | None = None) -> Decoded | None:
    """A control record's value decoded by its control type (the record's key: (version, type)); None for
    the types kfmt.log.txn reads (ABORT, COMMIT) and unknown ones. Raises CodecError (under ``value``)."""
    if control_type not in CONTROL_TYPES or value is None:
        return None
    try:
        return _decode(_codec(CONTROL_SCHEMA, backend), bytes(value), "value", control_type=control_type)
    except CodecError as e:
        raise e.under("value") from None


def binding(topic_or_kind: str) -> Binding | None:
    """The binding of a topic (or file kind), None for a topic whose payloads are the user's own."""
    return BINDINGS.get(topic_or_kind)


def _codec(schema: str, backend: str | None = None, package: str = "generated.messages"):
    """A message schema's codec in ``backend``; None: the default backend (native where its extension was
    built, else python, as for the record formats; ``KFMT_BACKEND`` read on each call). ``package``: the
    generated package holding the schema (``generated.protocol`` for the protocol's)."""
    if backend is not None:
        return _module(schema, backend, package)
    return _default_codec(schema, backend_env(), package)


@functools.lru_cache(maxsize=None)
def _default_codec(schema: str, _env: str | None, package: str = "generated.messages"):
    return of_default_backend(lambda name: _module(schema, name, package))


def _module(schema: str, backend: str, package: str = "generated.messages"):
    """A message schema's module in ``backend``, the name checked by the rule every reader uses
    (kfmt.codec.formats: an unknown or unbuilt backend is a one-line UnsupportedCodecError)."""
    from kfmt.codec.formats import _checked

    return _imported(schema, _checked(backend), package)


@functools.lru_cache(maxsize=None)
def _imported(schema: str, backend: str, package: str = "generated.messages"):
    return importlib.import_module(f"{package}.{schema}.{backend}")


@functools.lru_cache(maxsize=None)
def _shape(cls) -> tuple[str | None, str]:
    """A family root class's version field (``version`` or ``record_type``; None for control records, whose
    version is 0) and the field holding its message."""
    fields = cls._fields
    return next((f for f in ("version", "record_type") if f in fields), None), fields[-1]


def _decode(codec, data: bytes, what: str, **params) -> Decoded:
    """A key or value decoded whole; where Kafka's reader ignores bytes after the message (the schema's
    ``trailing: ignore``: coordinator records, control records), they are kept and reported, not refused."""
    if codec.TRAILING == "exact":
        return _message(codec.decode(data, **params), what)
    root, end = codec.decode_from(data, 0, len(data), DEFAULT_OPTIONS, **params)
    d = _message(root, what)
    return d if end == len(data) else dataclasses.replace(d, trailing=data[end:])


def _message(root, what: str) -> Decoded:
    """A family root (its version or record type, then the message its switch chose) as a Decoded."""
    version_field, message = _shape(type(root))  # type: ignore[arg-type]  # classes are hashable
    if getattr(root, "frame_version", 1) != 1:
        raise InvalidValueError(f"frame version {root.frame_version} (Kafka reads only frame version 1)", path=what)
    data = getattr(root, message)
    return Decoded(type(data)._kafka_name, getattr(root, version_field) if version_field else 0, data)


def decode_key(topic_or_kind: str, key, *, backend: str | None = None) -> Decoded | None:
    b = BINDINGS[topic_or_kind]
    if key is None or b.key is None:
        return None
    return _decode(_codec(b.key, backend), bytes(key), "key")


def decode_payload(topic_or_kind: str, key, value, *, backend: str | None = None) -> Payload:
    """The key and value of a record of an internal topic (or a KRaft snapshot: ``"kraft-snapshot"``),
    decoded by the schemas its binding names. Raises KeyError for a topic with no binding, and CodecError
    (saying ``key`` or ``value``, where and why) for a payload that does not decode with nothing left over."""
    b = BINDINGS[topic_or_kind]
    try:
        k = decode_key(topic_or_kind, key, backend=backend)
    except CodecError as e:
        raise e.under("key") from None
    if value is None:
        return Payload(k, None)  # a tombstone
    kwargs: dict = {}
    if b.param is not None:
        if k is None:
            raise InvalidValueError(f"a {topic_or_kind} value needs its key (the record type chooses its layout)",
                                    path="value")  # fmt: skip
        kwargs[b.param] = k.version
    codec = _codec(b.value, backend)
    try:
        return Payload(k, _decode(codec, bytes(value), "value", **kwargs))
    except CodecError as e:
        raise e.under("value") from None


def _uuid(v: bytes) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(bytes(v)).rstrip(b"=").decode("ascii")


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _value(v, kind: str, version: int | None = None, hook=None, path: str = ""):
    if v is None:
        return None
    if kind == "float64":  # Jackson (Kafka's converters) quotes what JSON has no number for
        return v if math.isfinite(v) else "NaN" if v != v else "Infinity" if v > 0 else "-Infinity"
    if type(v) is str or (type(v) is list and v and type(v[0]) is str):
        return _texts(v)
    if kind == "uuid":
        return _uuid(v)
    if kind == "bytes":
        return v.hex()  # bytes, or a record set's view of its frame
    if kind == "uuid[]":
        return [_uuid(x) for x in v]
    if kind == "bytes[]":
        return [bytes(x).hex() for x in v]
    if isinstance(v, list):  # structs (kind struct[]:...) and values
        return [kafka_json(x, version, hook, f"{path}[{i}]") for i, x in enumerate(v)]
    return kafka_json(v, version, hook, path)


def _view_errors(obj, path: str) -> list[str]:
    """The errors of views that kept their bytes (``on_error: raw``) anywhere in ``obj``, with where."""
    if isinstance(obj, list):
        return [e for i, x in enumerate(obj) for e in _view_errors(x, f"{path}[{i}]")]
    out = []
    for name, kafka, kind, _versions in getattr(type(obj), "_kafka_fields", ()):
        if kind.startswith("view:"):
            err = getattr(obj, kind.split(":")[1] + "_error", None)
            if err:
                out.append(f"{path}.{kafka}: {err} (kept as bytes)")
        elif kind.startswith("struct"):
            out += _view_errors(getattr(obj, name), f"{path}.{kafka}")
    return out


def kafka_json(obj, version: int | None = None, hook=None, path: str = ""):
    """A decoded message as JSON data, fields named as Kafka names them; with its ``version``, only the fields
    that version has (as Kafka's JSON converters write them; a message read from bytes, such as a consumer
    group member's subscription, has its own version). ``hook(value, path)``: what a field holding a record set
    (kind ``records``) adds beside its hex (``path``: where it is, Kafka's names from the root ``path``); a hook
    whose ``hex`` is false leaves the hex out."""
    cls = type(obj)
    if getattr(cls, "_kafka_fields", None) is None:
        return obj if not isinstance(obj, (bytes, bytearray, memoryview)) else obj.hex()
    if "version" in cls._fields and cls._kafka_fields[0][0] == "version":
        version = obj.version  # a message with its own version first
    out: dict = {}
    for name, kafka, kind, how, default in _plan(cls, version):  # type: ignore[arg-type]
        v = getattr(obj, name)
        if how == _PLAIN and (type(v) is int or type(v) is bool):  # most fields: a number as it is (not tagged)
            out[kafka] = v
            continue
        if default is not _NOT_TAGGED and _at_default(cls.__module__, v, default):
            continue  # a tagged field at its default: Kafka's converters leave it out
        if how == _ENUM:  # Kafka writes the id (an int8 TransactionState); kfmt reads the name
            out[kafka] = _enum_table(cls.__module__, kind[5:], ids=True).get(v, v)
        elif how == _TAGS:
            if v:
                out[kafka] = [{"tag": t, "data": bytes(d).hex()} for t, d in v]
        elif how == _VIEW:  # bytes holding a message: the message, as kafka-dump-log shows it
            inner = getattr(obj, kind.split(":")[1])
            out[kafka] = kafka_json(inner) if inner is not None else _value(v, "bytes")
        elif how == _RECORDS:  # a record set: its bytes (unless the hook leaves them out), what it reads beside
            if getattr(hook, "hex", True):
                out[kafka] = _value(v, "bytes")
            out.update(hook(v, f"{path}.{kafka}") if hook is not None and v is not None else {})
        else:
            out[kafka] = _value(v, kind, version, hook, f"{path}.{kafka}")
    return out


def error_codes(obj, version: int | None = None, hook=None, path: str = "") -> list[int]:
    """The error codes other than 0 anywhere in a decoded message (fields Kafka names ``ErrorCode``), those
    :func:`kafka_json` would write, found without writing the rest; ``hook(value, path)`` is called on each record
    set as kafka_json calls it (its answer unused), the same paths."""
    codes: list[int] = []
    _codes_in(obj, version, hook, path, codes)
    return codes


def _codes_in(obj, version, hook, path: str, codes: list[int]) -> None:
    cls = type(obj)
    if getattr(cls, "_kafka_fields", None) is None:
        return
    if "version" in cls._fields and cls._kafka_fields[0][0] == "version":
        version = obj.version
    for name, kafka, _kind, how, default in _codes_plan(cls, version):  # type: ignore[arg-type]
        v = getattr(obj, name)
        if v is None or default is not _NOT_TAGGED and _at_default(cls.__module__, v, default):
            continue
        if how == _PLAIN:  # an ErrorCode
            if type(v) is int and v:
                codes.append(v)
        elif how == _RECORDS:
            if hook is not None:
                hook(v, f"{path}.{kafka}")
        elif how == _VIEW:  # a message inside bytes: as kafka_json shows it
            codes += json_error_codes(kafka_json(v))
        elif type(v) is list:
            for i, x in enumerate(v):
                _codes_in(x, version, hook, f"{path}.{kafka}[{i}]", codes)
        else:
            _codes_in(v, version, hook, f"{path}.{kafka}", codes)


def json_error_codes(node) -> list[int]:
    """The error codes other than 0 anywhere in Kafka's JSON of a message (:func:`kafka_json`), in order; kfmt's
    own keys (``_batches``...) hold none."""
    if type(node) is list:
        return [c for x in node for c in json_error_codes(x)]
    if type(node) is not dict:
        return []
    out = [v for k, v in node.items() if k == "ErrorCode" and type(v) is int and v]
    return out + [c for k, v in node.items() if type(v) in (dict, list) and k[:1] != "_" for c in json_error_codes(v)]


@functools.lru_cache(maxsize=None)
def _codes_plan(cls, version: int | None) -> tuple:
    """The fields of :func:`_plan` that hold an error code, a record set, a message inside bytes, or structs;
    a view's field holds its value under the view's name."""
    out = []
    for name, kafka, kind, how, default in _plan(cls, version):
        if how == _VIEW:
            out.append((kind.split(":")[1], kafka, kind, how, _NOT_TAGGED))
        elif how == _RECORDS or kind.startswith("struct") or kafka == "ErrorCode" and kind == "":
            out.append((name, kafka, kind, _PLAIN if kind == "" else how, default))
    return tuple(out)


_PLAIN, _ENUM, _TAGS, _VIEW, _RECORDS, _OTHER = range(6)
_NOT_TAGGED = object()


@functools.lru_cache(maxsize=None)
def _plan(cls, version: int | None) -> tuple:
    """What :func:`kafka_json` does with each field of a class at a version, worked out once: (attribute, Kafka's
    name, kind, how, the default of a tagged field or _NOT_TAGGED), the fields the version lacks left out."""
    tagged = dict(getattr(cls, "_kafka_tagged", ()))
    plan = []
    for name, kafka, kind, versions in cls._kafka_fields:
        if versions is not None and version is not None and not versions[0] <= version <= versions[1]:
            continue
        how = (_ENUM if kind.startswith("enum:") else _TAGS if kind == "tags" else _VIEW if kind.startswith("view:")
               else _RECORDS if kind == "records" else _PLAIN if kind == "" and name not in tagged else _OTHER)  # fmt: skip
        plan.append((name, kafka, kind, how, tagged.get(name, _NOT_TAGGED)))
    return tuple(plan)


def _at_default(model: str, v, default) -> bool:
    """Whether a tagged field's value is its default; ``("empty", struct, bytes)``: Kafka's new Type(), the value
    the python backend decodes from those bytes (a struct with each field at its default)."""
    if type(default) is tuple and default[:1] == ("empty",):
        return v is not None and kafka_json(v) == _empty_json(model, default[1], default[2])
    return type(v) is type(default) and v == default or (v is None and default is None)


@functools.lru_cache(maxsize=None)
def _empty_json(model: str, struct: str, raw: bytes) -> dict:
    """Kafka's JSON of the empty struct the python backend beside ``model`` decodes from ``raw`` (once each)."""
    from kfmt.runtime.options import DEFAULT_OPTIONS

    codec = importlib.import_module(model.rsplit(".", 1)[0] + ".python")
    return kafka_json(getattr(codec, f"_decode_{struct}")(raw, 0, len(raw), DEFAULT_OPTIONS)[0])


@functools.lru_cache(maxsize=None)
def _enum_table(model: str, enum: str, ids: bool) -> dict:
    """An enum's names to ids (``ids``) or ids to names, from the python backend beside ``model`` (a module)."""
    codec = importlib.import_module(model.rsplit(".", 1)[0] + ".python")
    return dict(getattr(codec, f"_ENUM_IDS_{enum}" if ids else f"_ENUM_{enum}"))


def from_kafka_json(cls, data: dict):
    """A value of generated class ``cls`` from Kafka's JSON of it (what :func:`kafka_json` gives): fields by
    Kafka's names, uuids in Kafka's base64 form, bytes as hex, a viewed message as the message; a field the
    JSON does not have takes the class's default. Raises KeyError/ValueError/TypeError for JSON of another
    shape."""
    import sys

    module = sys.modules[cls.__module__]
    kwargs: dict = {}
    for name, kafka, kind, _versions in cls._kafka_fields:
        if kafka not in data:
            continue
        v = data[kafka]
        if kind == "tags":
            kwargs[name] = [(t["tag"], bytes.fromhex(t["data"])) for t in v]
        elif kind.startswith("enum:") and isinstance(v, int):
            kwargs[name] = _enum_table(cls.__module__, kind[5:], ids=False).get(v, v)
        elif kind.startswith("view:") and isinstance(v, dict):  # the viewed message: written from it
            _, view, inner = kind.split(":")
            kwargs[name], kwargs[view] = None, from_kafka_json(getattr(module, inner), v)
        else:
            kwargs[name] = _from_value(v, "bytes" if kind.startswith("view:") else kind, module)
    return cls(**kwargs)


def _texts(v):
    """A string (or strings) for JSON: a string that is not UTF-8 (kfmt keeps its bytes as surrogate escapes) as
    ``{"hex": ..., "kafka": ...}``, its bytes and the text Kafka's Java reader makes of them, as header keys are."""
    if type(v) is list:
        return [_texts(x) for x in v]
    try:
        v.encode("utf-8")
        return v
    except UnicodeEncodeError:
        from kfmt.runtime.text import java_utf8

        raw = v.encode("utf-8", "surrogateescape")
        return {"hex": raw.hex(), "kafka": java_utf8(raw)}


def _from_text(v):
    if isinstance(v, list):
        return [_from_text(x) for x in v]
    if isinstance(v, dict) and "hex" in v:
        return bytes.fromhex(v["hex"]).decode("utf-8", "surrogateescape")
    return v


def _from_value(v, kind: str, module):
    if v is None:
        return None
    if kind == "float64":
        return _NON_FINITE[v] if isinstance(v, str) else v
    if kind == "uuid":
        return base64.urlsafe_b64decode(v + "==")
    if kind == "bytes":
        return bytes.fromhex(v)
    if kind in ("uuid[]", "bytes[]"):
        return [_from_value(x, kind[:-2], module) for x in v]
    if kind == "records":
        return bytes.fromhex(v)
    if kind.startswith("struct[]:"):
        return [from_kafka_json(getattr(module, kind[9:]), x) for x in v]
    if kind.startswith("struct:"):
        return from_kafka_json(getattr(module, kind[7:]), v)
    return _from_text(v)
