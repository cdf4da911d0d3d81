import contextlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

import kfmt
from kfmt.api import get_format

VECTORS = Path(__file__).parent / "vectors"

# Credentials for the S3 API servers the tests start on 127.0.0.1 (moto takes any): set before the first
# Spark JVM starts, whose Python workers inherit its environment, so code written for credentials taken
# "the usual way" (the README's blocks) runs as written. A developer's own AWS settings are left alone.
for _k, _v in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_REGION", "us-east-1")):
    os.environ.setdefault(_k, _v)


@contextlib.contextmanager
def generated_package(d: Path, files: dict, package: str):
    """Schemas ``{file name: YAML text}`` compiled by the generator into ``d/<package>``, importable while
    the context lasts: yields ``module(name)`` importing ``<package>.<name>``."""
    from generator.driver import generate

    schemas = d / "schemas"
    schemas.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (schemas / name).write_text(text)
    generate(schemas, d / package)
    sys.path.insert(0, str(d))
    try:
        yield lambda name: importlib.import_module(f"{package}.{name}")
    finally:
        sys.path.remove(str(d))
        for m in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[m]


def backends(fmt: str):
    """Every backend of a format, from the registry (kfmt.formats.BACKENDS): [(name, module)], the
    optimised one first. A backend added to the registry is tested everywhere this is used."""
    from kfmt.formats import BACKENDS, backend_module

    return [(b, backend_module(fmt, b)) for b in BACKENDS]


@pytest.fixture(params=__import__("kfmt.formats", fromlist=["BACKENDS"]).BACKENDS)
def backend(request) -> str:
    """Each backend in the registry, by name (for tests that go through read_batches / encode_batch)."""
    return request.param


def load_vectors(fmt: str):
    out = []
    for p in sorted((VECTORS / fmt).glob("*.json")):
        v = json.loads(p.read_text())
        v["name"] = p.stem
        v["bytes"] = bytes.fromhex(v["hex"])
        out.append(v)
    return out


def _norm(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, tuple):
        return [_norm(x) for x in v]
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def check_case(mod, data: bytes, expect_batch: dict | None = None, expect_records: list | None = None):
    """Construct's common() idea: decode == expected, encode(decoded) == bytes, encoded_size == len(bytes)."""
    batch = mod.decode(data)
    for k, v in (expect_batch or {}).items():
        assert _norm(getattr(batch, k)) == v, k
    if expect_records is not None:
        assert len(batch.records) == len(expect_records)
        for r, e in zip(batch.records, expect_records):
            for k, v in e.items():
                got = _norm(getattr(r, k))
                if k == "headers":
                    got = [[hk, hv] for hk, hv in got]
                assert got == v, k
    assert mod.encode(batch) == data
    assert mod.encoded_size(batch) == len(data)
    return batch


@pytest.fixture
def v2():
    return get_format("kafka_v2")


# The suite explores a fixed set of examples (reproducible in CI); `make fuzz` runs the open-ended campaign.
from hypothesis import settings as _settings  # noqa: E402

_settings.register_profile("suite", derandomize=True, deadline=None, print_blob=True)
_settings.load_profile("suite")


def mixed_log(rng) -> bytes:
    """A log mixing v0, v1 and v2 entries, every codec, headers and a COMMIT marker (random sizes)."""
    parts, off = [], 0
    for magic, codec in ((0, "none"), (1, "gzip"), (2, "none"), (2, "lz4"), (1, "none"), (2, "snappy")):
        n = rng.randint(1, 6)
        recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * rng.randint(0, 30), timestamp=1000 + i if magic else None,
                            headers=[("h", b"x")] if magic == 2 else []) for i in range(n)]  # fmt: skip
        parts.append(kfmt.encode_batch(recs, magic=magic, codec=codec, base_offset=off))
        off += n
    parts.insert(3, kfmt.encode_batch([kfmt.control_record("commit")], base_offset=off, producer_id=9,
                                      is_transactional=True, is_control=True))  # fmt: skip
    return b"".join(parts)


def mutated(rng, data: bytes) -> bytes:
    """``data`` with up to three random byte changes or short deletions."""
    out = bytearray(data)
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(out))
        if rng.random() < 0.7:
            out[i] = rng.randrange(256)
        else:
            del out[i : i + rng.randint(1, 8)]
    return bytes(out)
