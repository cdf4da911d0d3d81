"""A fixture schema (tests/fixtures/features.yaml) exercising less common language features, both backends."""

import importlib
import struct
import zlib
from pathlib import Path

import pytest

import kfmt
from conftest import generated_package

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fmt(tmp_path_factory):
    d = tmp_path_factory.mktemp("features")
    files = {"common.yaml": (ROOT / "schemas" / "common.yaml").read_text(),
             "features.yaml": (ROOT / "tests" / "fixtures" / "features.yaml").read_text()}  # fmt: skip
    with generated_package(d, files, "fixture_gen") as module:
        yield module("features"), module("features.construct")


def _frame(mod, **kw):
    recs = [kfmt.Record(key=b"k%d" % i, value=b"v" * i, headers=[("h", b"1")], timestamp=100 + 3 * i) for i in range(4)]
    return mod.Frame(records=recs, base_offset=10, label=b"lbl", origin=mod.python.__dict__["Point"](x=-3, y=4), **kw)


def test_bytes_by_hand_and_both_backends(fmt):
    mod, con = fmt
    f = _frame(mod, version=2, extra=77)
    data = mod.encode(f)
    assert con.encode(f) == data
    # header by hand: offset, version, flags, crc, magic, attributes, first/max ts, extra (version >= 2)
    base_offset, version, flags, crc, magic, attrs, first_ts, max_ts, extra = struct.unpack_from(">qBHIbbqqi", data)
    assert (base_offset, version, flags, magic, attrs, first_ts, max_ts, extra) == (10, 2, 0, 7, 0, 100, 109, 77)
    # the CRC-32 covers magic .. the trailer field, exclusive
    assert crc == zlib.crc32(data[15:-4]) and data[-4:] == b"\xfe\xed\xfa\xce"
    d = mod.decode(data)
    assert d == con.decode(data)
    assert (d.extra, d.legacy_note, d.label, (d.origin.x, d.origin.y), d.total_ts) == (77, 0, b"lbl", (-3, 4), 209)
    assert [r.offset for r in d.records] == [10, 11, 12, 13]


def test_conditions_absent_fields(fmt):
    mod, con = fmt
    data = mod.encode(_frame(mod, version=1))
    assert len(data) == len(mod.encode(_frame(mod, version=2))) - 4  # no `extra`
    assert mod.decode(data).extra == 0 and con.decode(data).extra == 0


def test_capped_blob_and_crc_end(fmt):
    mod, con = fmt
    big = _frame(mod)
    big.label = b"x" * 17
    data = mod.encode(big)
    for m in (mod,):
        with pytest.raises(kfmt.LimitExceededError):
            m.decode(data)
    bad = bytearray(mod.encode(_frame(mod)))
    bad[-1] ^= 1  # the trailer is outside the CRC range: still valid
    assert mod.decode(bytes(bad)).trailer == 0xFEEDFACE ^ 1
    bad[20] ^= 1  # inside the range
    with pytest.raises(kfmt.ChecksumError):
        mod.decode(bytes(bad))


def test_view_on_condition_and_encodable(fmt):
    mod, con = fmt
    f = _frame(mod, flags=1)
    for r in f.records:
        r.key = None
        r.control = (0, 1)  # encoded into the key by the view
    data = mod.encode(f)
    assert con.encode(f) == data
    d = mod.decode(data)
    assert [r.control for r in d.records] == [(0, 1)] * 4 and d.records[0].key == b"\x00\x00\x00\x01"


@pytest.mark.named_backends
def test_native_backend_of_the_fixture_holds_to_python(fmt):
    """The native backend compiled for this fixture (conditions, a CRC ending at a field, a capped blob, a
    struct field, a view, uvarint counts): no per-format code, built where the package was generated,
    and every value, byte and error equal to the python backend's, on valid and damaged frames."""
    import random
    import shutil
    import sys

    from kfmt.runtime.native import compile_package

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    mod, _ = fmt
    pkg = Path(sys.modules[mod.__name__].__file__).parent.parent
    compile_package(pkg)
    nat = importlib.import_module(f"{mod.__name__}.native")
    py = mod.python

    def outcome(m, call, *args):
        try:
            return ("ok", call(m)(*args))
        except kfmt.CodecError as e:
            return (type(e), str(e), e.offset, e.path)

    frames = [_frame(mod, version=2, extra=77), _frame(mod, version=1), _frame(mod, version=0, legacy_note=3)]
    odd = _frame(mod, flags=1)
    for r in odd.records:
        r.key, r.control = None, (0, 1)
    frames.append(odd)
    big = _frame(mod)
    big.label = b"x" * 17
    frames.append(big)
    for f in frames[:3]:  # the C code itself decodes and encodes these (no hand-over to the python backend)
        data = py.encode(f)
        assert nat._c.encode(f) == data and nat._c.decode_from(data, 0, len(data), kfmt.DecodeOptions()) is not None
    rng = random.Random(3)
    for f in frames:
        data = py.encode(f)
        assert outcome(nat, lambda m: m.encode, f) == ("ok", data)
        cases = [data] + [data[:n] for n in range(0, len(data), 3)]
        for _ in range(200):
            b = bytearray(data)
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            cases.append(bytes(b))
        for opts in (kfmt.DecodeOptions(), kfmt.DecodeOptions(verify_crc=False)):
            for buf in cases:
                want = outcome(py, lambda m: m.decode_from, buf, 0, len(buf), opts)
                got = outcome(nat, lambda m: m.decode_from, buf, 0, len(buf), opts)
                if want[0] == "ok":
                    assert got[0] == "ok" and got[1][0].as_dict() == want[1][0].as_dict() and got[1][1] == want[1][1]
                else:
                    assert got == want, buf.hex()
