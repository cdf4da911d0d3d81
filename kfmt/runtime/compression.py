"""Kafka's compression framings, written and read exactly as Kafka does.

* gzip (codec 1): RFC 1952, level 6 like Java's default; concatenated members read.  Written with
  the standard library's zlib (stable bytes), read with zlib-ng when installed (same output, faster).
* snappy (codec 2): xerial snappy-java stream framing written (16-byte header,
  32 KiB input blocks, each prefixed by its int32 compressed length); on read the
  version fields are ignored, concatenated streams are followed, and a payload
  without the xerial magic is read as one raw snappy block.
* lz4 (codec 3): Kafka's LZ4 frame: FLG 0x60, BD 0x40 (independent 64 KiB
  blocks, no checksums), end mark, no content checksum.  The header checksum
  byte is Kafka's broken one (computed over the magic number too) for magic 0,
  the correct one for magic 1 and 2; on read it is skipped for magic 0 and
  verified otherwise.  Bytes after the first frame are ignored, as in Kafka.
* zstd (codec 4): one frame written without content size (like zstd-jni's
  streaming writer); on read every frame is decompressed.

Every decompressor stops at the configured limit before allocating more.
"""

from __future__ import annotations

import io
import struct
import threading
import zlib
from types import ModuleType

from kfmt.runtime.errors import CodecError, InvalidValueError, LimitExceededError, UnsupportedCodecError

_inflate_lib: ModuleType
try:
    from zlib_ng import zlib_ng as _inflate_lib
except ImportError:  # pragma: no cover - zlib-ng is a dependency; this keeps a bare install working
    _inflate_lib = zlib

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
_XERIAL_BLOCK = 32 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK = 64 * 1024
_LZ4_FLG = 0x60
_LZ4_BD = 0x40
_U32LE = struct.Struct("<I")
_I32BE = struct.Struct(">i")


# ---------------------------------------------------------------- xxh32 (LZ4 header / block checksums)
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, as the LZ4 frame format uses it (pure Python; inputs here are short)."""
    n = len(data)
    p = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while p + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, p)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        (k,) = _U32LE.unpack_from(data, p)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def lz4_header_checksum(descriptor: bytes, *, broken: bool) -> int:
    """HC byte of an LZ4 frame; ``broken`` reproduces KAFKA-1493 (hash includes the magic number)."""
    data = _LZ4_MAGIC + descriptor if broken else descriptor
    return (xxh32(data) >> 8) & 0xFF


# ---------------------------------------------------------------- public entry points
def compress(codec: str, data: bytes, magic: int = 2) -> bytes:
    """Compress ``data`` with Kafka's framing for ``codec`` and ``magic``."""
    if codec == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == "snappy":
        return _snappy_compress(data)
    if codec == "lz4":
        return _lz4_compress(data, broken_checksum=(magic == 0))
    if codec == "zstd":
        if magic < 2:
            raise UnsupportedCodecError(f"zstd is not allowed with magic {magic}")
        c = _zstd_compressor().compressobj()
        return c.compress(data) + c.flush()
    raise UnsupportedCodecError(f"unknown compression codec {codec!r}")


_local = threading.local()


def _zstd_compressor():
    """This thread's zstd compressor (level 3, no content size).  Setting one up costs as much as
    compressing a 13 KB batch, and a compressor may not serve two threads at once: one per thread."""
    c = getattr(_local, "zstd", None)
    if c is None:
        import zstandard

        c = _local.zstd = zstandard.ZstdCompressor(level=3, write_content_size=False)
    return c


def decompress(codec: str, data, magic: int, opts, *, offset: int | None = None, path: str = "") -> bytes:
    """Decompress one Kafka compressed payload, within ``opts`` limits.

    Raises only :class:`CodecError` subclasses, located at ``offset``/``path``.
    """
    data = bytes(data)
    if not data and codec in CODECS:
        # an empty payload holds no records whatever the codec (Kafka reads a compressed batch of zero
        # records without decompressing, as compaction leaves them), in both backends alike
        if codec == "zstd" and magic < 2:
            raise UnsupportedCodecError(f"zstd is not allowed with magic {magic}", offset=offset, path=path)
        return b""
    limit = allowance(len(data), opts.max_decompressed, opts.max_ratio)
    try:
        if codec == "gzip":
            return _gzip_decompress(data, opts.max_decompressed, opts.max_ratio)
        if codec == "snappy":
            return _snappy_decompress(data, limit)
        if codec == "lz4":
            return _lz4_decompress(data, opts.max_decompressed, opts.max_ratio, verify_hc=(magic != 0))
        if codec == "zstd":
            if magic < 2:
                raise UnsupportedCodecError(f"zstd is not allowed with magic {magic}")
            return _zstd_decompress(data, limit)
        raise UnsupportedCodecError(f"unknown compression codec {codec!r}")
    except CodecError as e:
        located = type(e)(e.reason, offset=offset, path=path)
        located.final = isinstance(e, LimitExceededError)  # exact as it stands: no decoder need retry it
        raise located from None
    except MemoryError:
        raise  # out of memory is not corrupt data
    except Exception as e:  # the codec libraries' own errors: corrupt streams
        raise InvalidValueError(f"corrupt {codec} stream: {e}", offset=offset, path=path) from None


def allowance(compressed: int, max_decompressed: int, max_ratio: int) -> int:
    """Decompressed bytes allowed for ``compressed`` input bytes: ``max_ratio`` times as many (at least
    1 MiB), never more than ``max_decompressed``."""
    return min(max_decompressed, max(compressed * max_ratio, 1 << 20))


def _too_big(limit: int) -> LimitExceededError:
    return LimitExceededError(f"decompressed size exceeds the limit of {limit} bytes (max_decompressed / max_ratio)")


# ---------------------------------------------------------------- gzip
STEP = 1 << 20  # decompressed bytes per step: a refused stream costs at most its limit plus one step


class _Out:
    """A decompressor's output, grown chunk by chunk and handed over without a final copy (a bytearray
    turned into bytes is copied whole, doubling the peak; ``BytesIO.getvalue`` gives up its buffer)."""

    __slots__ = ("buf", "size")

    def __init__(self):
        self.buf = io.BytesIO()
        self.size = 0

    def add(self, chunk) -> None:
        self.buf.write(chunk)
        self.size += len(chunk)

    def value(self) -> bytes:
        v = self.buf.getvalue()
        self.buf = io.BytesIO()
        return v


def _gzip_decompress(data: bytes, max_decompressed: int, max_ratio: int) -> bytes:
    """Inflate every gzip member, a step at a time. The size is checked against ``max_decompressed`` and
    against ``max_ratio`` times the compressed bytes actually consumed so far (padding after the last
    member, which gzip readers ignore, does not raise the allowance)."""
    out = _Out()
    rest = data
    consumed = 0
    while rest:
        d = _inflate_lib.decompressobj(31)
        pending = rest
        while True:
            out.add(d.decompress(pending, STEP))
            pending = d.unconsumed_tail
            used = consumed + len(rest) - len(pending) - len(d.unused_data)
            limit = allowance(used, max_decompressed, max_ratio)
            if out.size > limit:
                raise _too_big(limit)
            if d.eof:
                break
            if not pending:  # all input consumed: drain what zlib still holds, or the stream ended early
                more = d.decompress(b"", STEP)
                if not more:
                    raise InvalidValueError("gzip stream ends early")
                out.add(more)
        consumed += len(rest) - len(d.unused_data)
        rest = d.unused_data
        if rest and rest[:2] != b"\x1f\x8b":  # trailing garbage after the last member is ignored, as Java does
            break
    return out.value()


# ---------------------------------------------------------------- snappy
def _snappy():
    import snappy

    return snappy


def _snappy_compress(data: bytes) -> bytes:
    s = _snappy()
    out = bytearray(_XERIAL_HEADER)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = s.compress(data[i : i + _XERIAL_BLOCK])
        out += _I32BE.pack(len(block))
        out += block
    return bytes(out)


def _raw_snappy_length(block: bytes) -> int:
    result = shift = 0
    for b in block[:5]:
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
        shift += 7
    raise InvalidValueError("corrupt snappy block: bad length preamble")


def _snappy_block(block: bytes, room: int, limit: int) -> bytes:
    if _raw_snappy_length(block) > room:
        raise _too_big(limit)
    try:
        return _snappy().uncompress(block)
    except Exception:  # the library's words (empty, with cramjam) differ from snappy-java's: kfmt's, in both engines
        raise InvalidValueError("corrupt snappy stream: a block does not decompress") from None


def _xerial_blocks(data: bytes) -> list[tuple[int, int]]:
    """``(position, length)`` of each block of a xerial snappy stream (concatenated streams included)."""
    blocks = []
    pos = 16
    n = len(data)
    while pos < n:
        if pos + 4 > n:
            raise InvalidValueError("xerial snappy stream ends inside a block length")
        if data[pos : pos + 8] == _XERIAL_MAGIC:  # a concatenated stream's header
            pos += 16
            continue
        (length,) = _I32BE.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise InvalidValueError(f"xerial snappy block length {length} is out of range")
        blocks.append((pos, length))
        pos += length
    return blocks


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    """Each snappy block states its decompressed length first: the total is checked against ``limit``
    before anything is decompressed."""
    if not data:
        raise InvalidValueError("cannot decompress an empty snappy stream")
    if len(data) < 16 or data[:8] != _XERIAL_MAGIC:
        return _snappy_block(data, limit, limit)
    blocks = _xerial_blocks(data)
    total = 0
    for pos, _ in blocks:
        total += _raw_snappy_length(data[pos : pos + 5])
        if total > limit:
            raise _too_big(limit)
    out = _Out()
    for pos, length in blocks:
        out.add(_snappy_block(data[pos : pos + length], limit - out.size, limit))
    return out.value()


# ---------------------------------------------------------------- lz4
def _lz4_compress(data: bytes, *, broken_checksum: bool) -> bytes:
    import lz4.block

    desc = bytes((_LZ4_FLG, _LZ4_BD))
    out = bytearray(_LZ4_MAGIC + desc)
    out.append(lz4_header_checksum(desc, broken=broken_checksum))
    for i in range(0, len(data), _LZ4_BLOCK):
        chunk = data[i : i + _LZ4_BLOCK]
        block = lz4.block.compress(chunk, store_size=False)
        if len(block) >= len(chunk):
            out += _U32LE.pack(len(chunk) | 0x80000000)
            out += chunk
        else:
            out += _U32LE.pack(len(block))
            out += block
    out += b"\x00\x00\x00\x00"
    return bytes(out)


def _lz4_decompress(data: bytes, max_decompressed: int, max_ratio: int, *, verify_hc: bool) -> bytes:
    """Kafka's LZ4 frame, block by block; the size allowance grows with the compressed bytes consumed so far
    (bytes after the end mark, which readers ignore, do not raise it)."""
    pos, max_block, block_checksum = _lz4_frame_header(data, verify_hc)
    n = len(data)
    out = _Out()
    while True:
        if pos + 4 > n:
            raise InvalidValueError("LZ4 frame: missing end mark")
        (size,) = _U32LE.unpack_from(data, pos)
        pos += 4
        if size == 0:
            return out.value()
        raw = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        if size > max_block or pos + size > n:
            raise InvalidValueError(f"LZ4 frame: block of {size} bytes is out of range")
        block = data[pos : pos + size]
        pos += size
        if block_checksum:
            pos = _lz4_block_checksum(data, pos, block)
        limit = allowance(pos, max_decompressed, max_ratio)
        _lz4_block(out, block, raw, min(max_block, limit - out.size), max_block, limit)


def _lz4_frame_header(data: bytes, verify_hc: bool) -> tuple[int, int, bool]:
    """The frame's header checked (Kafka's flags only: independent blocks, no dictionary): where the first
    block starts, the largest block, and whether blocks carry checksums."""
    n = len(data)
    if n < 7 or data[:4] != _LZ4_MAGIC:
        raise InvalidValueError("LZ4 frame: invalid magic bytes")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise InvalidValueError(f"LZ4 frame: unsupported version {flg >> 6}")
    if not flg & 0x20:
        raise InvalidValueError("LZ4 frame: dependent block stream is unsupported")
    if flg & 0x03:
        raise InvalidValueError("LZ4 frame: reserved FLG bits / DictID are unsupported")
    if bd & 0x8F:
        raise InvalidValueError("LZ4 frame: reserved BD bits set")
    code = (bd >> 4) & 0x07
    if code < 4:
        raise InvalidValueError(f"LZ4 frame: invalid block size code {code}")
    pos = 6 + (8 if flg & 0x08 else 0)
    if pos >= n:
        raise InvalidValueError("LZ4 frame: header ends early")
    if verify_hc:
        hc = lz4_header_checksum(data[4:pos], broken=False)
        if data[pos] != hc:
            raise InvalidValueError(f"LZ4 frame: header checksum {data[pos]:#04x} != {hc:#04x}")
    return pos + 1, 1 << (8 + 2 * code), bool(flg & 0x10)


def _lz4_block_checksum(data: bytes, pos: int, block: bytes) -> int:
    """The block's xxHash32 after it, checked; returns where the next block starts."""
    if pos + 4 > len(data):
        raise InvalidValueError("LZ4 frame: missing block checksum")
    (want,) = _U32LE.unpack_from(data, pos)
    if xxh32(block) != want:
        raise InvalidValueError("LZ4 frame: block checksum mismatch")
    return pos + 4


def _lz4_block(out: _Out, block: bytes, raw: bool, room: int, max_block: int, limit: int) -> None:
    """One block added to ``out`` (stored raw, or decompressed into at most ``room`` bytes), within ``limit``."""
    import lz4.block

    if raw:
        if len(block) > room:
            raise _too_big(limit)
        out.add(block)
    else:
        try:
            out.add(lz4.block.decompress(block, uncompressed_size=max(room, 1)))
        except Exception:
            if room < max_block:
                raise _too_big(limit) from None
            # the libraries' words differ (python-lz4's, lz4-java's): kfmt's, in both engines
            raise InvalidValueError("corrupt lz4 stream: a block does not decompress") from None
    if out.size > limit:
        raise _too_big(limit)


# ---------------------------------------------------------------- zstd
_ZSTD_MAGIC, _ZSTD_SKIPPABLE = 0xFD2FB528, 0x184D2A50


def _zstd_frames_end(data: bytes) -> None:
    """Refuse a zstd stream whose last frame is cut short (no last block, a block or the checksum missing): the
    library's stream reader gives back what such a frame decodes to without a word, while Kafka's reader (which
    reads on after the last record) fails on it. Block headers are walked as the zstd format lays them out;
    what is not a frame at all is left to the library, which reports it."""
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < 8:
            raise InvalidValueError(f"zstd stream ends inside a frame header ({n - pos} bytes left)")
        magic, size = struct.unpack_from("<II", data, pos)
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE:
            pos += 8 + size
            if pos > n:
                raise InvalidValueError("zstd stream ends inside a skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            return
        fhd = data[pos + 4]
        single, fcs = (fhd >> 5) & 1, fhd >> 6
        pos += 5 + (not single) + (0, 1, 2, 4)[fhd & 3] + (single if fcs == 0 else (0, 2, 4, 8)[fcs])
        end = _zstd_blocks_end(data, pos)
        if end < 0:
            return  # a reserved block type: the library reports it
        pos = end + (4 if fhd & 0x04 else 0)
        if pos > n:
            raise InvalidValueError("zstd frame ends early: its checksum is missing")


def _zstd_blocks_end(data: bytes, pos: int) -> int:
    """The end of the blocks of the frame whose first block header is at ``pos`` (-1: a reserved block type)."""
    n = len(data)
    while True:
        if pos + 3 > n:
            raise InvalidValueError("zstd frame ends early: no last block")
        h = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        kind = (h >> 1) & 3
        pos += 3 + (1 if kind == 1 else h >> 3)
        if kind == 3:
            return -1
        if pos > n:
            raise InvalidValueError("zstd frame ends early: inside a block")
        if h & 1:
            return pos


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    _zstd_frames_end(data)
    d = getattr(_local, "unzstd", None)
    if d is None:  # one per thread, as for compressing
        import zstandard

        d = _local.unzstd = zstandard.ZstdDecompressor()
    reader = d.stream_reader(io.BytesIO(data), read_across_frames=True)
    out = _Out()
    while True:
        chunk = reader.read(min(1 << 20, limit - out.size + 1))
        if not chunk:
            break
        out.add(chunk)
        if out.size > limit:
            raise _too_big(limit)
    return out.value()
