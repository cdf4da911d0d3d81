"""Kafka's APIs as the protocol's schemas declare them (``schemas/protocol``, each body's ``api:``), and Kafka's
rules for the header a message of an API and version has. One place for both: every reader and writer of
frames asks here."""

from __future__ import annotations

import functools
from dataclasses import dataclass

#: ControlledShutdown: its version 0 has request header v0 (no client id), the only message that does
CONTROLLED_SHUTDOWN = 7
#: ApiVersions: its response header is always v0 (a client reads it before it knows what the broker speaks)
API_VERSIONS = 18


@dataclass(frozen=True)
class Api:
    """One API: its key, Kafka's name, the versions kfmt reads (``versions``), the first flexible one (None:
    none is), the versions Kafka marks unstable, the schemas of its request and response, which source gives
    which versions, and the listeners that take it."""

    key: int
    name: str
    versions: range
    flexible_from: int | None
    unstable: tuple[int, ...]
    request: str
    response: str
    sources: dict
    listeners: tuple[str, ...]
    classes: dict  # kind -> {version: value class name}
    package: str = "generated.protocol"  # the generated package of its schemas
    proposal: str | None = None  # a message Kafka does not have: what proposes it (its other kind may be "")

    def flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def request_header_version(self, version: int) -> int:
        """Kafka's ApiMessageType.requestHeaderVersion: 2 when flexible, else 1; ControlledShutdown v0 has 0."""
        if self.key == CONTROLLED_SHUTDOWN and version == 0:
            return 0
        return 2 if self.flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Kafka's ApiMessageType.responseHeaderVersion: 1 when flexible, else 0; ApiVersions always 0."""
        if self.key == API_VERSIONS:
            return 0
        return 1 if self.flexible(version) else 0

    def as_dict(self) -> dict:
        return {
            "key": self.key, "name": self.name, "versions": [self.versions.start, self.versions.stop - 1],
            "flexible": [v for v in self.versions if self.flexible(v)], "unstable": list(self.unstable),
            "sources": dict(self.sources), "listeners": list(self.listeners),
        }  # fmt: skip


def _versions(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


@functools.lru_cache(maxsize=1)
def _table() -> dict[int, Api]:
    from generated.protocol import APIS

    by_key: dict[int, dict] = {}
    for schema, a in APIS.items():
        if a["kind"] in ("request", "response"):
            by_key.setdefault(a["key"], {})[a["kind"]] = (schema, a)
    return {key: _api(kinds, "generated.protocol") for key, kinds in sorted(by_key.items())}


def _api(kinds: dict, package: str) -> Api:
    """One API from its request's and response's registry entries (a proposal may have only one of them)."""
    (req, a), (resp, b) = kinds.get("request", ("", None)), kinds.get("response", ("", None))
    first = a or b
    flexible = first["flexible"]
    return Api(
        key=first["key"], name=first["name"], versions=_versions(first["versions"]),
        flexible_from=None if flexible == "none" else int(flexible.rstrip("+")),
        unstable=tuple(sorted(set((a or {}).get("unstable", [])) | set((b or {}).get("unstable", [])))),
        request=req, response=resp, sources=dict(first.get("sources", {})), listeners=tuple(first.get("listeners", ())),
        classes={"request": (a or {}).get("classes", {}), "response": (b or {}).get("classes", {})},
        package=package, proposal=first.get("proposal"),
    )  # fmt: skip


@functools.lru_cache(maxsize=1)
def proposals() -> list[Api]:
    """The protocol proposals (``schemas/protocol_proposals``: messages Kafka does not have, e.g. a KIP's new version),
    by name: they are drawn and measured (kfmt explain, kfmt diff), never used to read Kafka's frames."""
    try:
        from generated.protocol_proposals import APIS
    except ImportError:
        return []
    by_name: dict[str, dict] = {}
    for schema, a in APIS.items():
        by_name.setdefault(a["name"], {})[a["kind"]] = (schema, a)
    return [_api(kinds, "generated.protocol_proposals") for _, kinds in sorted(by_name.items())]


def apis() -> list[Api]:
    """Every API kfmt reads and writes, by key."""
    return list(_table().values())


def api(key: int) -> Api | None:
    """The API of ``key``, None for a key Kafka has no API of."""
    return _table().get(key)
