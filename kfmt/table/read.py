"""The one reading function: a Kafka log (files, partition folders, log directories, globs, lists, store URIs)
planned into slices and read into Arrow record batches, with the options and defaults of the Spark source
(``spark.read.format("kafka-log")``) and of :func:`kfmt.read_arrow`, which are both built on it.

:class:`LogReader` plans from an options dict (the names Spark's Kafka source uses where it has them:
``subscribe``, ``assign``, ``startingOffsets``, ``endingTimestamp``, ``includeHeaders``...); its slices are plain,
picklable data, read anywhere by :func:`read_slice`."""

from __future__ import annotations

import os

from kfmt.log.arrow import (
    _Range,
    add_decoded,
    arrow_schema,
    decoding_reads,
    projected_schema,
)
from kfmt.table.options import _bool, _option_text
from kfmt.table.plan import LogReader


def read_arrow(
    source,
    *,
    columns=None,
    topic: str | None = None,
    partition: int | None = None,
    verify_crc: bool = True,
    format: str | None = None,
    backend: str | None = None,
    on_corrupt: str = "fail",
    storage_options: dict | None = None,
    compressed_objects: str = "read",
    include_control: bool = False,
    isolation: str = "read_uncommitted",
    include_suffixed=None,
    **options,
):
    """A Kafka log as a ``pyarrow.Table`` with the Spark source's columns, read by the Spark source's own reader
    (:class:`kfmt.table.read.LogReader`), with its options and defaults.

    ``source``: a segment file, a partition folder, a log directory, a glob, a list of them, or a store's URI
    (``storage_options``: see :mod:`kfmt.storage`); or bytes-like data or a binary file (one log). Rows come in
    topic, partition, folder and offset order. ``columns`` projects (only those are built). ``topic`` and
    ``partition`` name the rows instead of what the folders say. Control records are left out unless
    ``include_control``; ``isolation="read_committed"`` leaves out aborted transactions; folders Kafka marked
    ``-delete``/``-future``/``-stray`` are left out unless named in ``include_suffixed``. ``on_corrupt``: ``fail``
    raises, ``skip`` leaves damaged regions out (logged), ``quarantine`` gives each a row with its position, error
    and raw bytes (at most ``QUARANTINE_RAW_BYTES``). ``compressed_objects="fail"`` refuses a segment object
    stored compressed whole by a remote storage plugin (by default it is read). Further ``options`` are the
    Spark source's, by the same names: ``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets``,
    ``endingOffsets``, ``startingTimestamp``, ``endingTimestamp``, ``startingOffsetsByTimestamp``,
    ``endingOffsetsByTimestamp``, ``includeHeaders`` (dicts are given as dicts, numbers as numbers)."""
    import pyarrow as pa

    schema, batches = _arrow_stream(source, columns=columns, topic=topic, partition=partition, verify_crc=verify_crc,
                                    format=format, backend=backend, on_corrupt=on_corrupt,
                                    storage_options=storage_options, compressed_objects=compressed_objects,
                                    include_control=include_control, isolation=isolation,
                                    include_suffixed=include_suffixed, **options)  # fmt: skip
    return pa.Table.from_batches(list(batches), schema)


def read_arrow_batches(source, **kwargs):
    """:func:`read_arrow`'s rows as a stream, a ``pyarrow.RecordBatchReader``: Arrow batches (at most 8,192 rows
    each) come as the log is read, so memory stays flat whatever its size, where ``read_arrow``'s table holds
    every row. The same arguments; they are checked at once, damage is raised as the batch holding it is read.
    Feed it to ``pyarrow.dataset.write_dataset``, DuckDB or Polars, or iterate it."""
    import pyarrow as pa

    schema, batches = _arrow_stream(source, **kwargs)
    return pa.RecordBatchReader.from_batches(schema, batches)


def _arrow_stream(
    source,
    *,
    columns=None,
    topic: str | None = None,
    partition: int | None = None,
    verify_crc: bool = True,
    format: str | None = None,
    backend: str | None = None,
    on_corrupt: str = "fail",
    storage_options: dict | None = None,
    compressed_objects: str = "read",
    include_control: bool = False,
    isolation: str = "read_uncommitted",
    include_suffixed=None,
    **options,
):
    """read_arrow's schema and its Arrow batches (a generator: the log is read as they are taken); the
    arguments are checked now."""
    import pyarrow as pa

    from kfmt.log.arrow import Reading, _Where, rows

    if on_corrupt not in ("fail", "skip", "quarantine"):
        raise ValueError(f"on_corrupt must be 'fail', 'skip' or 'quarantine', not {on_corrupt!r}")
    decode = _bool(options.get("decode_payloads"), False)
    names = arrow_schema(pa, True).names
    if isinstance(columns, str):
        raise ValueError(
            f"columns must be a list of column names, not the string {columns!r}: use columns=[{columns!r}]"
        )
    columns = tuple(columns or arrow_schema(pa, decode).names)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; the columns are {', '.join(names)}")
    if compressed_objects not in ("fail", "read"):
        raise ValueError(f"compressed_objects must be 'fail' or 'read', not {compressed_objects!r}")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    paths = _paths_of(source)
    if paths is None:
        if options or include_suffixed:
            raise ValueError(f"option(s) {', '.join(sorted(options)) or 'include_suffixed'} need a path, not data")
        where = _Where(topic, partition, None)
        data, committed = _data_of(source, isolation == "read_committed")
        read = decoding_reads(columns)
        dropped = committed.is_dropped if committed is not None else None
        batches = rows(data, where, Reading(read or columns, verify_crc, format, backend, on_corrupt, include_control,
                                            dropped))  # fmt: skip
        if read is not None:
            batches = (add_decoded(pa, b, columns) for b in batches)
        return projected_schema(pa, columns), batches
    opts = {"path": paths, "verify_crc": verify_crc, "on_corrupt": on_corrupt, "include_control": include_control,
            "isolation": isolation, "compressed_objects": compressed_objects, "format": format, "backend": backend,
            "include_suffixed": include_suffixed, **(storage_options or {}),
            **{k: _option_text(v) for k, v in options.items()}}  # fmt: skip
    return _read_planned({k: v for k, v in opts.items() if v is not None}, columns, topic, partition)


def _paths_of(source):
    """The paths a source names (a path, a URI, a glob, a list of them), or None for data and files."""
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, (list, tuple)) and source and all(isinstance(x, (str, os.PathLike)) for x in source):
        return [os.fspath(x) for x in source]
    return None


def _read_planned(opts: dict, columns, topic, partition):
    """Rows of the paths in ``opts`` through :class:`kfmt.table.read.LogReader`: every slice, in log order."""
    import dataclasses

    import pyarrow as pa

    try:
        reader = LogReader(opts, columns, {"min_partitions": 1, "split_bytes": 1 << 62}, raw_errors=True)
    except ValueError as e:
        raise ValueError(str(e).removeprefix("kafka-log: ")) from None
    slices = sorted((s for g in reader.plan() for s in g), key=lambda s: (s.topic, s.partition, s.path, s.start))
    if topic is not None or partition is not None:
        named = {"topic": topic} if topic is not None else {}
        slices = [dataclasses.replace(s, **named, **({"partition": partition} if partition is not None else {}))
                  for s in slices]  # fmt: skip
    return projected_schema(pa, columns), (b for s in slices for b in reader.read((s,)))


def _data_of(source, committed: bool):
    """Bytes-like data or a binary file as what :func:`kfmt.log.arrow.rows` reads (a :class:`_Range` of a file with a
    descriptor), and the transactions to resolve for read_committed (which needs the bytes first)."""
    if hasattr(source, "read") and not isinstance(source, (bytes, bytearray, memoryview)):
        try:
            fd, start = source.fileno(), source.tell()
        except (OSError, ValueError):  # io.UnsupportedOperation: a file object with no descriptor
            source = source.read()
        else:
            if not committed:
                return _Range(source, start, os.fstat(fd).st_size), None
            source = source.read()
    if not committed:
        return source, None
    from kfmt.log.txn import transactions

    data = bytes(memoryview(source))
    return data, transactions(data)
