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
    out = {}
    for key, kinds in sorted(by_key.items()):
        (req, a), (resp, b) = kinds["request"], kinds["response"]
        flexible = a["flexible"]
        out[key] = Api(
            key=key, name=a["name"], versions=_versions(a["versions"]),
            flexible_from=None if flexible == "none" else int(flexible.rstrip("+")),
            unstable=tuple(sorted(set(a.get("unstable", [])) | set(b.get("unstable", [])))),
            request=req, response=resp, sources=dict(a.get("sources", {})),
            listeners=tuple(a.get("listeners", ())), classes={"request": a["classes"], "response": b["classes"]},
        )  # fmt: skip
    return out


def apis() -> list[Api]:
    """Every API kfmt reads and writes, by key."""
    return list(_table().values())


def api(key: int) -> Api | None:
    """The API of ``key``, None for a key Kafka has no API of."""
    return _table().get(key)
