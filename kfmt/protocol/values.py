"""A protocol message's value from Kafka's JSON of it (what ``Message.to_json()["body"]`` gives), checked as
Kafka's writers check a message before they write it: a field a version lacks may only hold its default, and a
key that names no field of the message is refused rather than dropped."""

from __future__ import annotations

from kfmt.runtime.errors import InvalidValueError


def from_json(cls, data, version: int, path: str):
    """A value of generated class ``cls`` at ``version`` from its JSON; raises InvalidValueError, located."""
    from kfmt.payloads import from_kafka_json

    check(cls, data, version, path)
    try:
        return from_kafka_json(cls, data)
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise InvalidValueError(f"not JSON of a {cls._kafka_name}: {e}", path=path) from None


def check(cls, data, version: int, path: str) -> None:
    """Refuse keys that name no field, a field ``version`` has left out (Kafka's JSON reader requires every field
    but the tagged ones), and a value other than the default in a field ``version`` lacks."""
    import sys

    if not isinstance(data, dict):
        raise InvalidValueError(f"{cls._kafka_name} is a JSON object, not {type(data).__name__}", path=path)
    fields = {kafka: (name, kind, versions) for name, kafka, kind, versions in cls._kafka_fields}
    for key in data:
        if key not in fields and not key.startswith("_"):  # kfmt's own keys (_batches...) are what it shows
            raise InvalidValueError(f"{cls._kafka_name} has no field {key!r} (its fields: {', '.join(fields)})",
                                    path=path)  # fmt: skip
    module = sys.modules[cls.__module__]
    tagged = {name for name, _ in getattr(cls, "_kafka_tagged", ())}
    for key, (name, kind, versions) in fields.items():
        present = versions is None or versions[0] <= version <= versions[1]
        if key not in data:
            if present and kind != "tags" and name not in tagged and path.startswith("body"):  # Kafka's JSON reader
                raise InvalidValueError(f"missing: {cls._kafka_name} has {key} at version {version}, and Kafka's JSON "
                                        "reader requires it (only tagged fields may be left out)", path=f"{path}.{key}")  # fmt: skip
            continue
        where = f"{path}.{key}"
        if versions is not None and not versions[0] <= version <= versions[1]:
            _absent(cls, name, kind, data[key], version, versions, where)
        elif kind.startswith("struct:") and data[key] is not None:
            check(getattr(module, kind[7:]), data[key], version, where)
        elif kind.startswith("struct[]:") and isinstance(data[key], list):
            for i, x in enumerate(data[key]):
                check(getattr(module, kind[9:]), x, version, f"{where}[{i}]")


def at_default(cls, name: str, kind: str, value) -> bool:
    """Whether ``value`` (JSON) is field ``name``'s default in generated class ``cls``, as Kafka's writer takes it
    where a version lacks the field (an empty list or string stands for a null default)."""
    from kfmt.payloads import _value

    default = _value(getattr(cls(), name), kind)
    return value == default or (default is None and value in ([], ""))


def _absent(cls, name: str, kind: str, value, version: int, versions: tuple[int, int], where: str) -> None:
    """A field ``version`` lacks: its default (as JSON) is what Kafka's writer takes; anything else is refused."""
    from kfmt.payloads import _value

    if at_default(cls, name, kind, value):
        return
    default = _value(getattr(cls(), name), kind)
    lo, hi = versions
    have = f"v{lo}+" if hi >= 1 << 15 else f"v{lo}-v{hi}"
    raise InvalidValueError(f"{value!r} at version {version}, which has no such field ({have} have it); Kafka's "
                            f"writer refuses any value but its default ({default!r}) there", path=where)  # fmt: skip
