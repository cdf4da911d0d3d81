"""Hexdump rows of bytes annotated field by field: one writer for `kfmt explain --bytes` on batches and on
protocol frames."""

from __future__ import annotations


def write_rows(data: bytes, cells, base: int, out, name=lambda label: label or "?", width: int = 32) -> None:
    """Hexdump rows of ``data`` (at ``base``): up to 16 bytes of one field a row, the field (``name`` of its label)
    beside them, and its value beside its first row (``cells``: (label, value) per byte, as byte_values gives)."""
    i = 0
    while i < len(data):
        j = i
        while j < len(data) and cells[j] == cells[i] and j - i < 16:
            j += 1
        label, value = cells[i]
        first = i == 0 or cells[i - 1] != cells[i]  # a field's value beside its first line of bytes
        said = f"{name(label):<{width}} {value}" if value and first else name(label)
        out.write(f"{base + i:08x}  {data[i:j].hex(' '):<47}  {said}".rstrip() + "\n")
        i = j
