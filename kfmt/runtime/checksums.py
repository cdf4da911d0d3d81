"""The two checksums of Kafka's formats: CRC-32 (IEEE; v0/v1 messages) and CRC-32C (Castagnoli; v2 batches).

CRC-32 comes from zlib-ng when it is installed (a dependency of kfmt): the same function as the
standard library's ``zlib.crc32``, computed with SIMD, about twice as fast on a 100-byte message and
four times on a 13 KB one.  Without it the standard library's answers.  CRC-32C comes from the
``crc32c`` package (hardware instructions where the CPU has them).
"""

from __future__ import annotations

try:
    from zlib_ng.zlib_ng import crc32
except ImportError:  # pragma: no cover - zlib-ng is a dependency; this keeps a bare install working
    from zlib import crc32

__all__ = ["crc32", "crc32c"]


def crc32c(data, value: int = 0) -> int:
    """CRC-32C of ``data`` (continuing from ``value``), by the ``crc32c`` package, imported on first use (its import
    costs 20-30 ms, more than `kfmt dump --summary` of a small capture takes, which computes none in Python). The
    first call puts the package's function in this one's place: call it as ``checksums.crc32c`` (a module
    attribute), not by a name imported early, and every later call is the package's own."""
    from crc32c import crc32c as package

    globals()["crc32c"] = package  # (those that import the name later get the package's function itself)
    return package(data, value)
