"""Kafka's network protocol: every request and response of every API and version, read and written by the
codecs generated from Kafka's own message specs (``schemas/protocol``), byte for byte.

    >>> m = read_request(frame)                  # the bytes after the frame's 4-byte size
    >>> m.api_name, m.api_version, m.correlation_id, m.client_id
    ('Metadata', 12, 7, 'rdkafka')
    >>> m.to_json()["body"]["Topics"]            # fields named and valued as Kafka's JSON converters write them
    >>> m.encode() == frame                      # unknown tags, their order and what follows kept
    True
    >>> r = read_response(frame, api_key=3, api_version=12)   # a response does not say its API: pair it by id
    >>> write_request(3, 12, body_json, correlation_id=7, client_id="me")

A frame is a header (request header v0-v2, response header v0-v1, as Kafka chooses them by the API's version:
:mod:`kfmt.protocol.apis`) and a body. Record sets inside (Produce requests, Fetch responses...) are decoded
by the record codecs in ``to_json``; bytes after the body, which Kafka's parsers leave unread, are kept and
noted. Everything else wrong is one :class:`~kfmt.runtime.errors.CodecError`, located.
May import: kfmt.runtime, kfmt.codec, kfmt.payloads (Kafka's JSON), kfmt.log (the record sets inside) and the
generated protocol package.
"""

from __future__ import annotations

import functools
import gc
import struct
from dataclasses import dataclass
from typing import Any

from kfmt.codec.formats import backend_env
from kfmt.protocol.apis import API_VERSIONS, Api, api, apis
from kfmt.runtime.errors import CodecError, InvalidValueError, TruncatedError
from kfmt.runtime.options import DEFAULT_OPTIONS
from kfmt.runtime.scalars import matches

__all__ = [
    "Api",
    "Message",
    "apis",
    "read_request",
    "read_response",
    "write_body",
    "write_header",
    "write_request",
    "write_response",
]

#: the generated package holding the protocol's schemas
PACKAGE = "generated.protocol"
#: Kafka's error code for a version the broker does not support (KIP-511's ApiVersions answer carries it)
UNSUPPORTED_VERSION = 35


_FOUND: dict = {}  # (schema, backend, package, KFMT_BACKEND where backend is None) -> codec module, once found


def _codec(schema: str, backend: str | None, package: str = PACKAGE):
    """The codec of one of the protocol's schemas (kfmt.payloads' rule: None is the default backend, KFMT_BACKEND
    read on each call), remembered once found: a message is read and written with a lookup, not a search."""
    key = (schema, backend, package, backend_env() if backend is None else None)
    found = _FOUND.get(key)
    if found is None:
        from kfmt.payloads import _codec as payload_codec

        found = _FOUND[key] = payload_codec(schema, backend, package)
    return found


def _without_collection(fn):
    """``fn`` run with the cyclic garbage collector held off: one message's values are built or written at once and
    hold no cycles, and a large response (a Metadata answer of a thousand partitions: some 5,000 lists and objects)
    set off collections of every generation over all that the process holds, several per message, which took most
    of the time of reading one. The collector is put back as it was (it runs at the next allocation)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run


#: a header or body not built yet (kfmt.protocol.Message builds it when asked)
_UNREAD = object()
#: the fields a message is compared and shown by
_FIELDS = ("kind", "api_key", "api_name", "api_version", "header_version", "correlation_id", "client_id", "body",
           "header", "trailing", "notes", "backend")  # fmt: skip


@dataclass(frozen=True)
class _Plan:
    """How a message of one API, kind and version is read with one backend: found once, then a lookup."""

    kind: str
    api: Api
    header_version: int
    header: Any  # the header's codec module
    body: Any  # the body's codec module (None: a body Kafka does not read, KIP-511)
    backend: str | None
    read_as: tuple  # () for a request, (api key, api version asked) for a response (see Message.again)
    header_check: object  # the header codec's check walk (check_from), or None
    check: object  # the body codec's check walk, or None: header and body are decoded as they are read
    walk_max: int  # the largest frame walked (within DEFAULT_OPTIONS' memory budget; generator.ir.walk.factor)


class Message:
    """One request or response: its header's facts, the body (a generated value object: None only for an
    ApiVersions request of a version Kafka does not know, whose body Kafka does not read), the header value,
    and bytes after the body that Kafka's parsers leave unread (``trailing``), with ``notes`` saying so.

    A frame in the plain form every decoder reads without a question is read by walking it (generator.ir.walk:
    the header and the whole body, every length, count, limit and version checked, where each ends known), and
    its header and body values are built when first asked for; any other frame is decoded as it is read, so an
    error in it is raised by the read. ``frame`` holds the bytes read; ``read_as`` how they were read: () for a
    request, (api key, api version asked) for a response (see :meth:`again`)."""

    __slots__ = ("_plan", "api_version", "correlation_id", "_header", "_body", "_pos", "trailing", "notes", "frame")

    def __init__(self, plan: _Plan, api_version: int, correlation_id: int, header: object, body: object,
                 pos: int = 0, trailing: bytes = b"", notes: list[str] | None = None,
                 frame: bytes | None = None) -> None:  # fmt: skip
        self._plan = plan
        self.api_version = api_version
        self.correlation_id = correlation_id
        self._header = header
        self._body = body
        self._pos = pos  # where the body starts in the frame
        self.trailing = trailing
        self.notes = [] if notes is None else notes
        self.frame = frame

    kind = property(lambda self: self._plan.kind, doc='"request" or "response"')
    api_key = property(lambda self: self._plan.api.key, doc="the API's key (0: Produce, 1: Fetch ...)")
    api_name = property(lambda self: self._plan.api.name, doc='the API\'s name as Kafka has it ("Produce")')
    header_version = property(lambda self: self._plan.header_version, doc="the header's version")
    backend = property(lambda self: self._plan.backend, doc="the backend it is read and written with")
    read_as = property(lambda self: self._plan.read_as if self.frame is not None else None)
    client_id = property(lambda self: getattr(self.header, "client_id", None), doc="a request's client id")

    @property
    def header(self) -> object:
        """The header's value, built from the frame when first asked for (then kept)."""
        h = self._header
        if h is _UNREAD:
            h = self._header = _built(self, self._plan.header, 0, header_version=self._plan.header_version)
        return h

    @header.setter
    def header(self, value: object) -> None:
        self._header = value

    @property
    def body(self) -> object:
        """The body's value, built from the frame when first asked for (then kept)."""
        b = self._body
        if b is _UNREAD:
            b = self._body = _built(self, self._plan.body, self._pos, api_version=self.api_version)
        return b

    @body.setter
    def body(self, value: object) -> None:
        self._body = value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Message:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # (mutable, compared by value)

    def __repr__(self) -> str:
        return "Message(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS) + ")"

    def again(self) -> Message | None:
        """The frame this message was read from, read again as it was (None: it was not read from a frame)."""
        if self.frame is None or self.read_as is None:
            return None
        if self.kind == "request":
            return read_request(self.frame, backend=self.backend)
        return read_response(self.frame, *self.read_as, backend=self.backend)

    def encode(self) -> bytes:
        """The frame's bytes again (without the 4-byte size): header, body, and what followed them.

        A frame Kafka reads but would not write so (a bool byte other than 0 and 1, read as true; a negative
        length other than -1, read as null; a varint longer than it needs) is written back as it was read while
        the values it decodes to are unchanged; once a value changes, the message is written in Kafka's own form
        (as tagged-field sections are, kfmt.runtime.tagged)."""
        return b"".join(self.encode_parts())

    @_without_collection
    def encode_parts(self) -> list:
        """What :meth:`encode` returns, as a list of buffers whose ``b"".join`` it is, for a gather write
        (``sock.sendmsg(m.encode_parts())``), as Kafka's own network layer sends record sets: the header, the
        body's pieces with each record set of 4 KiB or more between them as the value holds it (a view of the
        frame read, or the bytes given: not copied), and what followed the body. The construct backend, which
        has no gather writer, gives the body as one piece."""
        codec = self._body_codec()
        parts = self._parts(codec)
        if self.frame is None or self.read_as is None:
            return parts
        match = getattr(codec, "matches", matches)
        if match(self.frame, parts):
            return parts
        again = self.again()
        return [self.frame] if again is not None and match(b"".join(again._parts(codec)), parts) else parts

    def encode_header(self) -> bytes:
        """The header's bytes as written (in Kafka's own form)."""
        return self._plan.header.encode(self.header, header_version=self.header_version)

    def _written(self) -> bytes:
        """The message written in Kafka's own form (not as read)."""
        return b"".join(self._parts(self._body_codec()))

    def _body_codec(self):
        if self.body is None:
            return None
        a = _api(self.api_key)
        return _codec(a.request if self.kind == "request" else a.response, self.backend)

    def _parts(self, codec) -> list:
        """The message written in Kafka's own form, in pieces (see :meth:`encode_parts`); ``codec`` the body's."""
        head = [self.encode_header()]
        if codec is not None:
            gather = getattr(codec, "encode_parts", None)
            if gather is not None:
                head += gather(self.body, api_version=self.api_version)
            else:
                head.append(codec.encode(self.body, api_version=self.api_version))
        return head + [self.trailing] if self.trailing else head

    def to_json(self, *, records: bool | str = True, sets=None) -> dict:
        """``{"kind", "api", "api_key", "version", "header", "body"}``: fields as Kafka's JSON converters name and
        value them (bytes as hex, uuids in Kafka's base64, unknown tags under ``_unknownTaggedFields``); a record
        set as its hex with ``_batches`` beside it (and ``_partial``, ``_damage``); ``trailing`` (hex) and
        ``notes`` when there are any. ``records=False``: each batch is read and checked alike, its records counted
        (``record_count``) instead of listed; ``records="text"``: each batch's records as JSON text that
        ``kfmt.runtime.jsonl`` writes as is (faster, where the dict is only written out); ``records="crc"``: see
        kfmt.protocol.records.RecordSets. ``sets``: the RecordSets to read them with (``records`` then unused),
        which counts what it read."""
        from kfmt.payloads import kafka_json
        from kfmt.protocol.records import RecordSets

        sets = RecordSets(self.backend, records=records) if sets is None else sets
        out = {
            "kind": self.kind, "api": self.api_name, "api_key": self.api_key, "version": self.api_version,
            "header": kafka_json(self.header, self.header_version),
            "body": None if self.body is None else kafka_json(self.body, self.api_version, sets, "body"),
        }  # fmt: skip
        if self.trailing:
            out["trailing"] = self.trailing.hex()
        notes = self.notes + sets.problems
        return out | ({"notes": notes} if notes else {})

    def error_codes(self, sets) -> list[int]:
        """The error codes other than 0 in the body, as in its ``to_json()``, found without the rest; its record
        sets read by ``sets`` (a kfmt.protocol.records.RecordSets: what they hide goes to its ``problems``)."""
        from kfmt.payloads import error_codes

        return [] if self.body is None else error_codes(self.body, self.api_version, sets, "body")

    def problems(self, j: dict | None = None) -> list[str]:
        """What did not decode inside the message although the message did: damaged record sets, each with its
        field path and byte (``j``: its ``to_json()``, when already made)."""
        return [n for n in (self.to_json(records=False) if j is None else j).get("notes", []) if n.startswith("body.")]


def _api(key: int) -> Api:
    a = api(key)
    if a is None:
        known = apis()
        raise InvalidValueError(f"api_key {key}: Kafka has no such API (its keys: {known[0].key}-{known[-1].key})",
                                offset=0, path="header.RequestApiKey")  # fmt: skip
    return a


def _version_error(a: Api, version: int, kind: str) -> CodecError:
    lo, hi = a.versions.start, a.versions.stop - 1
    return InvalidValueError(f"{a.name} v{version}: not a version of the {a.name} {kind} Kafka has (v{lo}-v{hi})",
                             offset=2 if kind == "request" else None, path="header.RequestApiVersion")  # fmt: skip


def _data(frame) -> bytes:
    if type(frame) is bytes:
        return frame
    try:
        return bytes(frame)
    except TypeError:
        raise TypeError(f"a frame is bytes-like, not {type(frame).__name__}") from None


_KEY_VERSION = struct.Struct(">hh")
_REQUEST_START = struct.Struct(">hhi").unpack_from  # a request's API key, version and correlation id
_RESPONSE_START = struct.Struct(">i").unpack_from  # a response's correlation id
_PLANS: dict = {}  # (kind, api key, version, backend, KFMT_BACKEND where backend is None) -> _Plan, once found
_new = object.__new__


def _plan(kind: str, key: int, version: int, backend: str | None) -> _Plan | None:
    """The plan for reading a ``kind`` of API ``key`` at ``version``; found (and the API and version checked) once.
    None: an ApiVersions request newer than Kafka's, read as KIP-511 says (never remembered)."""
    k = (kind, key, version, backend, backend_env() if backend is None else None)
    p = _PLANS.get(k)
    if p is not None:
        return p
    a = _api(key)
    if version not in a.versions:
        if kind == "request" and key == API_VERSIONS and version > a.versions.stop - 1:
            return None
        raise _version_error(a, version, kind)
    read_as: tuple
    if kind == "request":
        hv, schema, read_as = a.request_header_version(version), a.request, ()
    else:
        hv, schema, read_as = a.response_header_version(version), a.response, (key, version)
    header, body = _codec(f"{kind}_header", backend), _codec(schema, backend)
    header_check, check = getattr(header, "check_from", None), getattr(body, "check_from", None)
    walk_max = -1
    if header_check is not None and check is not None:
        walk_max = DEFAULT_OPTIONS.max_memory // max(header.CHECK_FACTOR, body.CHECK_FACTOR)
    p = _PLANS[k] = _Plan(kind, a, hv, header, body, backend, read_as, header_check, check, walk_max)
    return p


def read_request(frame, *, backend: str | None = None) -> Message:
    """A request frame (the bytes after its 4-byte size) read: its header by the version Kafka gives the API's
    version, then the body (walked, or decoded: see :class:`Message`). An ApiVersions request of a version newer
    than Kafka's is read as Kafka's broker reads it (KIP-511): its header only, the body kept unread, and a note."""
    data = frame if type(frame) is bytes else _data(frame)  # (bytes, the usual frame, without a call)
    if len(data) >= 8:
        key, version, correlation_id = _REQUEST_START(data)
    elif len(data) >= 4:
        (key, version), correlation_id = _KEY_VERSION.unpack_from(data), None
    else:
        raise TruncatedError(f"a request header needs 4 bytes for its API key and version, the frame has {len(data)}",
                             offset=0, path="header")  # fmt: skip
    p = _plan("request", key, version, backend)
    if p is None:
        return _kip_511(data, _api(key), key, version, backend)
    if correlation_id is not None and len(data) <= p.walk_max:
        m = _walked(p, data, version, correlation_id)
        if m is not None:
            return m
    return _read_request(data, p, version)


def read_response(frame, api_key: int, api_version: int, *, backend: str | None = None) -> Message:
    """A response frame (the bytes after its 4-byte size) read as the response to a request of ``api_key`` at
    ``api_version`` (a response does not carry its API: pair it with its request by correlation id). An
    ApiVersions response that does not read at the request's version is read at v0, as Kafka's client falls
    back (KIP-511: a broker answers a version it does not know with v0 and error 35), with a note."""
    data = frame if type(frame) is bytes else _data(frame)  # (bytes, the usual frame, without a call)
    p = _plan("response", api_key, api_version, backend)
    assert p is not None  # (only a request is read as KIP-511 says)
    if 4 <= len(data) <= p.walk_max:
        m = _walked(p, data, api_version, _RESPONSE_START(data)[0])
        if m is not None:
            return m
    return _read_response(data, p, api_key, api_version)


def _walked(p: _Plan, data: bytes, version: int, correlation_id: int) -> Message | None:
    """The message of a frame whose header and body the check walks answer for, their values not built yet;
    None: a walk declined (the frame is decoded as it is read)."""
    pos = p.header_check(data, 0, len(data), DEFAULT_OPTIONS, p.header_version)  # type: ignore[operator]
    if pos < 0:
        return None
    end = p.check(data, pos, len(data), DEFAULT_OPTIONS, version)  # type: ignore[operator]
    if end < 0:
        return None
    m = _new(Message)  # its slots set here, not through __init__: a call less per message on the reader's hot path
    m._plan = p
    m.api_version = version
    m.correlation_id = correlation_id
    m._header = m._body = _UNREAD
    m._pos = pos
    m.trailing = b""
    m.notes = []
    m.frame = data
    return m if end == len(data) else _with_trailing(m, data, end)


def _built(m: Message, codec, pos: int, **param) -> object:
    """A header or body the check walks answered for, decoded now: its decoders read it to where the walk ended
    without an error (generator.ir.walk; tests/test_protocol_walk.py holds them to it)."""
    assert m.frame is not None
    where, stop = ("header", m._pos) if "header_version" in param else ("body", len(m.frame) - len(m.trailing))
    value, end = _decoded(codec, m.frame, pos, where, **param)
    if end != stop:  # pragma: no cover - a walk and its decoders disagree
        raise InvalidValueError(f"decoded to byte {end}, walked to {stop}", offset=end, path=where)
    return value


def _read_request(data: bytes, p: _Plan, version: int) -> Message:
    """A request decoded as it is read (a walk declined): any error raised, located."""
    header, pos = _read(p.header, data, 0, "header", header_version=p.header_version)
    body, end = _decoded(p.body, data, pos, "body", api_version=version)
    m = Message(p, version, header.correlation_id, header, body, pos, frame=data)
    return m if end == len(data) else _with_trailing(m, data, end)


def _kip_511(data: bytes, a: Api, key: int, version: int, backend: str | None) -> Message:
    """An ApiVersions request newer than Kafka's, read as Kafka's broker reads it: the header only."""
    hv = a.request_header_version(version)
    codec = _codec("request_header", backend)
    header, pos = _read(codec, data, 0, "header", header_version=hv)
    note = (f"ApiVersions v{version} is newer than Kafka's newest (v{a.versions.stop - 1}): its body is not "
            f"read, as Kafka's broker does not read it (KIP-511: it answers with a v0 response, error 35)")  # fmt: skip
    p = _Plan("request", a, hv, codec, None, backend, (), None, None, -1)
    return Message(p, version, header.correlation_id, header, None, pos, data[pos:], [note], data)


def _read_response(data: bytes, p: _Plan, api_key: int, api_version: int) -> Message:
    """A response decoded as it is read (a walk declined): any error raised, located."""
    header, pos = _read(p.header, data, 0, "header", header_version=p.header_version)
    version = api_version
    try:
        body, end = _decoded(p.body, data, pos, "body", api_version=api_version)
    except CodecError:
        if api_key != API_VERSIONS or api_version == 0:
            raise
        body, end = _decoded(p.body, data, pos, "body", api_version=0)
        version = 0
    m = Message(p, version, header.correlation_id, header, body, pos, frame=data)
    if version != api_version:
        m.notes.append(f"ApiVersions response read at v0, not v{api_version}, as Kafka's client falls back "
                       f"(error code {getattr(body, 'error_code', '?')}; KIP-511)")  # fmt: skip
    return m if end == len(data) else _with_trailing(m, data, end)


def _read(codec, data: bytes, pos: int, where: str, **param) -> tuple:
    """One part of a frame decoded from ``pos``: (value, where it ends); an error located in the frame, at its
    field path in Kafka's names."""
    try:
        return codec.decode_from(data, pos, len(data), DEFAULT_OPTIONS, **param)
    except CodecError as e:
        raise _in_kafkas_names(e, codec, param).under(where) from None


#: a body decoded with the collector held off (a large one is thousands of objects)
_decoded = _without_collection(_read)


def _in_kafkas_names(e: CodecError, codec, param: dict) -> CodecError:
    """``e`` located at the field path Kafka's names give (kfmt.protocol.paths)."""
    from kfmt.protocol.paths import kafka_path

    package, schema = codec.__name__.rsplit(".", 2)[:2]
    try:
        cls = _header_class(schema, param["header_version"], package) if "header_version" in param else (
            _registry(package)[schema]["classes"][param["api_version"]])  # fmt: skip
    except (KeyError, ImportError):
        return e
    return type(e)(e.reason, offset=e.offset, path=kafka_path(package, schema, cls, e.path))


def _with_trailing(m: Message, data: bytes, end: int) -> Message:
    if end < len(data):
        m.trailing = data[end:]
        m.notes.append(f"{len(m.trailing)} byte(s) follow the {m.api_name} {m.kind} v{m.api_version} at byte {end} "
                       "(Kafka's parser leaves them unread; kept)")  # fmt: skip
    return m


def write_request(api_key: int, api_version: int, body: dict, *, correlation_id: int = 0,
                  client_id: str | None = None, backend: str | None = None) -> bytes:  # fmt: skip
    """A request frame (without its 4-byte size) from ``body`` as ``to_json()["body"]`` gives it. A field given a
    value other than its default at a version that lacks it is refused, naming it, as Kafka's writers refuse it."""
    a = _writable(api_key, api_version, "request")
    return write_header(a, "request", api_version, correlation_id=correlation_id, client_id=client_id,
                        backend=backend) + _body_bytes(a, "request", api_version, body, backend)  # fmt: skip


def write_response(api_key: int, api_version: int, body: dict, *, correlation_id: int = 0,
                   backend: str | None = None) -> bytes:  # fmt: skip
    """A response frame (without its 4-byte size) from ``body`` as ``to_json()["body"]`` gives it (refusals as
    :func:`write_request`'s)."""
    a = _writable(api_key, api_version, "response")
    return write_header(a, "response", api_version, correlation_id=correlation_id, backend=backend) + _body_bytes(
        a, "response", api_version, body, backend
    )


def write_header(a: Api, kind: str, api_version: int, *, correlation_id: int = 0, client_id: str | None = None,
                 backend: str | None = None) -> bytes:  # fmt: skip
    """The header of a request or response of ``a`` (an API, or a proposal) at ``api_version``: the header version
    Kafka gives that version (a request's carries its API key, version, correlation id and client id)."""
    if kind == "response":
        hv = a.response_header_version(api_version)
        return _written("response_header", {"CorrelationId": correlation_id}, hv, "header_version", backend)
    hv = a.request_header_version(api_version)
    header: dict = {"RequestApiKey": a.key, "RequestApiVersion": api_version, "CorrelationId": correlation_id}
    if hv >= 1:
        header["ClientId"] = client_id
    elif client_id is not None:
        raise InvalidValueError(f"{a.name} v{api_version} has request header v0, which carries no client id",
                                path="header.ClientId")  # fmt: skip
    return _written("request_header", header, hv, "header_version", backend)


def _writable(api_key: int, api_version: int, kind: str) -> Api:
    a = _api(api_key)
    if api_version not in a.versions:
        raise _version_error(a, api_version, kind)
    return a


def _body_bytes(a: Api, kind: str, version: int, body: dict, backend: str | None) -> bytes:
    schema = a.request if kind == "request" else a.response
    return _written(schema, body, version, "api_version", backend, a.classes[kind][version], a.package)


def write_body(a: Api, kind: str, version: int, body: dict, *, backend: str | None = None) -> bytes:
    """The body of a request or response of ``a`` (an API, or a proposal: kfmt.protocol.apis.proposals) at
    ``version``, without a header, from ``body`` as ``to_json()["body"]`` gives it (refusals as write_request's)."""
    if version not in a.versions or not (a.request if kind == "request" else a.response):
        raise _version_error(a, version, kind)
    return _body_bytes(a, kind, version, body, backend)


def _written(schema: str, data: dict, version: int, param: str, backend: str | None, cls_name: str | None = None,
             package: str = PACKAGE):  # fmt: skip
    """``data`` (Kafka's JSON of a message) encoded at ``version``."""
    import importlib

    from kfmt.protocol.values import from_json

    codec = _codec(schema, backend, package)
    model = importlib.import_module(f"{package}.{schema}.model")  # the value classes every backend shares
    if cls_name is None:
        cls_name = _header_class(schema, version)
    value = from_json(getattr(model, cls_name), data, version, "body" if param == "api_version" else "header")
    try:
        return codec.encode(value, **{param: version})
    except CodecError as e:
        raise _in_kafkas_names(e, codec, {param: version}).under(
            "body" if param == "api_version" else "header"
        ) from None


def _registry(package: str) -> dict:
    import importlib

    return importlib.import_module(package).APIS


def _header_class(schema: str, version: int, package: str = PACKAGE) -> str:
    return _registry(package)[schema]["classes"][version]
