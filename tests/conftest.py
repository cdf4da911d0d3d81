import contextlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

import kfmt
from kfmt.codec.formats import get_format

VECTORS = Path(__file__).parent / "vectors"

# Credentials for the S3 API servers the tests start on 127.0.0.1 (moto takes any): set before the first
# Spark JVM starts, whose Python workers inherit its environment, so code written for credentials taken
# "the usual way" (the README's blocks) runs as written. A developer's own AWS settings are left alone.
for _k, _v in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_REGION", "us-east-1")):
    os.environ.setdefault(_k, _v)
# The Spark JVMs the tests start read tests/spark-conf (the JIT's first tier only: see its spark-defaults.conf).
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).parent / "spark-conf"))


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
    """Every backend of a format, from the registry (kfmt.codec.formats.BACKENDS): [(name, module)], the
    optimised one first. A backend added to the registry is tested everywhere this is used."""
    from kfmt.codec.formats import BACKENDS, backend_module

    return [(b, backend_module(fmt, b)) for b in BACKENDS]


@pytest.fixture(params=__import__("kfmt.codec.formats", fromlist=["BACKENDS"]).BACKENDS)
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


def native_of(module, fmt: str):
    """The native backend of format ``fmt`` in a package generated by :func:`generated_package` (``module``),
    its C extensions compiled here; the test is skipped on a machine without a C compiler."""
    import shutil

    from kfmt.runtime.native import compile_package

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    compile_package(Path(module(f"{fmt}.python").__file__).parent.parent)
    return module(f"{fmt}.native")


def same_outcomes(a, b, data: bytes, **kw) -> int:
    """Every prefix of ``data`` and every byte of it flipped three ways decode in backends ``a`` and ``b`` to the
    same value or the same error (class, message, offset, path); returns how many inputs were compared."""

    def outcome(mod, buf):
        try:
            v, p = mod.decode_from(buf, 0, len(buf), kfmt.DecodeOptions(), **kw)
            return ("ok", v.as_dict() if hasattr(v, "as_dict") else v, p)
        except kfmt.CodecError as e:
            return (type(e), str(e), e.offset, e.path)

    cases = [data[:k] for k in range(len(data))]
    for i in range(len(data)):
        for x in (0x01, 0x80, 0xFF):
            cases.append(data[:i] + bytes([data[i] ^ x]) + data[i + 1 :])
    for buf in cases:
        assert outcome(a, buf) == outcome(b, buf), buf.hex()
    return len(cases)


# With pytest-xdist (`make test` runs the suite on two workers, ``--dist loadgroup``), tests that must share one
# worker: those with the Spark session fixture, in two groups (a session per group, started once: one group's Spark tests
# are about half the suite's time, too much for one worker), the standalone-cluster recipes (one cluster at a time),
# and those that run make in the source tree (one make at a time).
WORKER_GROUPS = {
    "spark": ("test_spark.py", "test_streaming.py", "test_tiered.py"),
    "spark-jvm": ("test_jvm.py", "test_writer_names.py"),
    "cluster": ("test_cluster.py",),
    "make": ("test_readme.py", "test_generated.py", "test_packaging.py"),
}


def _group(item) -> str | None:
    name = item.path.name
    found = next((g for g, files in WORKER_GROUPS.items() if name in files), None)
    if found is not None and found.startswith("spark"):  # only what uses the session shares its worker
        return found if "spark" in getattr(item, "fixturenames", ()) else None
    if found is None and "spark" in getattr(item, "fixturenames", ()):
        return "spark"
    return found


def pytest_collection_modifyitems(config, items):
    """Tests that must share a worker are grouped (:data:`WORKER_GROUPS`). A test marked ``full`` (a further case
    of a capability another test checks in every run) runs only with KFMT_FULL set (``make test-full``).
    In the suite's passes per other backend (``make test-backends`` sets KFMT_SUITE_AGAIN), a test that names its
    backend (the ``backend`` fixture: it ran once per backend in the main pass; or marked ``named_backends``: it
    checks the backends it names) is left out: what it checks does not depend on the default backend, which is all
    such a pass changes."""
    full = pytest.mark.skip(reason="a further case of what make test checks once: make test-full runs it")
    for item in items:
        group = _group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        if item.get_closest_marker("full") and not os.environ.get("KFMT_FULL"):
            item.add_marker(full)
    if not os.environ.get("KFMT_SUITE_AGAIN"):
        return
    named = [i for i in items if "backend" in getattr(i, "fixturenames", ()) or i.get_closest_marker("named_backends")]
    if named:
        config.hook.pytest_deselected(items=named)
        left_out = set(map(id, named))
        items[:] = [i for i in items if id(i) not in left_out]


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (2 cores) for every test that needs one, with the kafka-log source registered:
    a session takes seconds to start, so the Spark, JVM-engine and streaming tests share it."""
    pytest.importorskip("pyspark")
    import kfmt.spark
    from kfmt.spark.jobs import session

    s = session("local[2]", "kfmt-tests")
    kfmt.spark.register(s)
    yield s
    s.stop()
