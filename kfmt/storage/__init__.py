"""Where logs live: local paths, and URIs read through ``pyarrow.fs`` (a dependency already, and a maintained
filesystem layer with S3, GCS, Azure and HDFS behind one interface of ranged reads).

Schemes: ``file://``, ``s3://`` (and Hadoop's ``s3a://``), ``gs://``/``gcs://``, ``abfs://``/``abfss://``,
``hdfs://``/``viewfs://``. Credentials come the usual way of each store (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, profiles, instance roles); an S3 endpoint other than AWS
(MinIO, Ceph, a test server) is ``s3.endpoint`` in the options or ``AWS_ENDPOINT_URL``, its region
``s3.region`` or ``AWS_REGION``. Files are opened for ranged reads: a split of a segment reads its range,
never the whole object. Outputs appear there complete or not at all (:mod:`.publish`).

May import: kfmt.runtime only (the library's other rooms read and write through it).
"""

from __future__ import annotations

import functools
import io
import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlparse

SCHEMES = ("file", "s3", "s3a", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
#: options of the readers that configure storage (the Spark source passes its options through)
OPTIONS = {
    "s3.endpoint": "an S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL, else AWS)",
    "s3.region": "the S3 region (default: AWS_REGION)",
    "s3.access_key": "an access key (default: the usual AWS credential chain; prefer that: options show in plans)",
    "s3.secret_key": "its secret key (default: the usual AWS credential chain)",
    "s3.connect_timeout": "seconds to wait for a connection (default: the AWS SDK's)",
    "s3.request_timeout": "seconds to wait for a request's answer (default: the AWS SDK's)",
}


#: how objects stored compressed whole begin (a remote storage plugin with compression on), by name
COMPRESSED_OBJECTS = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x1f\x8b", "gzip"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"\xff\x06\x00\x00sNaPpY", "snappy (framed)"),
)


def compressed_object(head: bytes) -> str | None:
    """The compression a file starting with ``head`` is stored with as a whole, if it is one of those."""
    return next((name for magic, name in COMPRESSED_OBJECTS if bytes(head[: len(magic)]) == magic), None)


def is_uri(path) -> bool:
    """Whether ``path`` names a store by URI (``scheme://...``) rather than a local path: a scheme pyarrow.fs
    knows, or one a filesystem was provided for (:func:`provided`)."""
    s = str(path)
    if "://" not in s:
        return False
    scheme = s.split("://", 1)[0].lower()
    return scheme in SCHEMES or scheme in (_PROVIDED.get() or {})


#: filesystems provided for this context by scheme, each a function of a URI to ``(pyarrow FileSystem, path)``:
#: the Spark source's planner provides the driver's Hadoop FileSystems (kfmt.spark.hadoop)
_PROVIDED: ContextVar[dict | None] = ContextVar("kfmt_storage_provided", default=None)


@contextmanager
def provided(filesystems: dict):
    """Within: a URI of one of these schemes is a store by URI, listed and read through the filesystem given
    for it where ``pyarrow.fs`` cannot reach it (a scheme it does not know, or one it cannot open here, such as
    ``hdfs://`` without libhdfs). ``filesystems``: scheme -> function of a URI to ``(FileSystem, path)``."""
    token = _PROVIDED.set({k.lower(): v for k, v in filesystems.items()})
    try:
        yield
    finally:
        _PROVIDED.reset(token)


def s3_settings(options: dict) -> dict:
    """The S3 settings the options and the environment give, set ones only: ``endpoint`` (a URL),
    ``region``, ``access_key`` and ``secret_key``, ``connect_timeout`` and ``request_timeout`` (seconds)."""
    out: dict = {}
    endpoint = options.get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        out["endpoint"] = endpoint if "://" in endpoint else f"https://{endpoint}"
    region = options.get("s3.region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        out["region"] = region
    if options.get("s3.access_key"):
        out.update(access_key=options["s3.access_key"], secret_key=options.get("s3.secret_key", ""))
    for name in ("connect_timeout", "request_timeout"):
        if options.get(f"s3.{name}"):
            out[name] = float(options[f"s3.{name}"])
    return out


def filesystem(uri: str, options: dict | None = None):
    """``(pyarrow FileSystem, path inside it)`` for a URI."""
    import pyarrow.fs as pafs

    options = options or {}
    u = urlparse(uri)
    scheme = u.scheme.lower()
    if scheme in ("s3", "s3a"):
        kw = s3_settings(options)
        if "endpoint" in kw:
            e = urlparse(kw.pop("endpoint"))
            kw.update(endpoint_override=e.netloc, scheme=e.scheme)
        return _s3(tuple(sorted(kw.items()))), f"{u.netloc}{u.path}".rstrip("/")
    if scheme == "file":
        return pafs.LocalFileSystem(), u.path
    given = (_PROVIDED.get() or {}).get(scheme)
    if given is not None and scheme not in SCHEMES:
        return given(uri)
    try:
        fs, path = pafs.FileSystem.from_uri(uri.replace("gcs://", "gs://", 1))
    except (OSError, ValueError):  # (pyarrow: ArrowInvalid is a ValueError)
        if given is None:
            raise
        return given(uri)  # pyarrow cannot open it here (hdfs:// without libhdfs): the filesystem given for it
    return fs, path


@functools.lru_cache(maxsize=16)
def _s3(settings: tuple):
    """One S3 filesystem per set of settings, made once (a stream plans each micro-batch, a table re-check each
    read: each would set up a client of its own)."""
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(**dict(settings))


def list_logs(uri: str, options: dict | None = None) -> list[tuple[str, int]]:
    """Every ``.log`` object under ``uri`` (a prefix or one object), as ``(uri, size)``."""
    import pyarrow.fs as pafs

    fs, path = filesystem(uri, options)
    scheme = urlparse(uri).scheme.lower()
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File:
        return [(uri, info.size)]
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no such file or directory: {uri}")
    out = []
    for i in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        if i.type == pafs.FileType.File and i.path.endswith(".log"):
            out.append((f"{scheme}://{i.path}", i.size))
    return sorted(out)


def open_input(path: str, options: dict | None = None):
    """A file for ranged reads: ``read``, ``seek``, ``tell``, and ``read_at(n, offset)`` (pread)."""
    if not is_uri(path):
        return _LocalFile(path)
    fs, p = filesystem(path, options)
    return fs.open_input_file(p)


def open_segment(path: str, options: dict | None = None):
    """:func:`open_input`, but an object stored compressed whole (a remote storage plugin with compression
    on: zstd frames, gzip members, LZ4 frames, framed snappy; nothing keyed) is decompressed first,
    streamed into a temporary file that stays in memory up to 64 MiB and spills to disk beyond.
    Returns ``(file, size, compression or None)``."""
    f = open_input(path, options)
    head = f.read_at(16, 0)
    packed = compressed_object(head)
    if packed is None:
        f.seek(0)
        return f, file_size(f), None
    with f:
        f.seek(0)
        out = _Spooled()
        _decompress_stream(f, out.f, packed)
    return out, out.f.tell(), packed


class Blocks(io.RawIOBase):
    """A file read by blocks of ``block`` bytes through ``fetch(position, n) -> bytes`` (one block kept at a time):
    a reader that steps through a store's object a few bytes at a time (batch headers) makes one request a
    block, not one a step. ``size``: the object's size; a fetch that gives less than asked before it is an
    OSError (the object changed under the reader)."""

    def __init__(self, fetch, size: int, block: int = 8 << 20, name: str = "the object"):
        super().__init__()
        self.fetch, self.size, self.block_size, self.name = fetch, size, block, name
        self.pos, self.block_at, self.block = 0, -1, b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = max(0, {0: pos, 1: self.pos + pos, 2: self.size + pos}[whence])
        return self.pos

    def read(self, n: int | None = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            at = self.pos - self.pos % self.block_size
            if at != self.block_at:
                want = min(self.block_size, self.size - at)
                self.block, self.block_at = bytes(self.fetch(at, want)), at
                if len(self.block) < want:
                    raise OSError(f"kafka-log: {self.name} is shorter than its listing says ({at + len(self.block)} "
                                  f"of {self.size} bytes)")  # fmt: skip
            take = self.block[self.pos - at : end - at]
            out += take
            self.pos += len(take)
        return bytes(out)

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def file_size(f) -> int:
    """The size of a file opened by :func:`open_input`."""
    return f.size() if hasattr(f, "size") else os.fstat(f.fileno()).st_size


def _decompress_stream(src, dst, packed: str) -> None:
    import shutil

    if packed == "zstd":
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(src, read_across_frames=True, closefd=False) as r:
            shutil.copyfileobj(r, dst, 1 << 20)
    elif packed == "gzip":
        import gzip

        with gzip.GzipFile(fileobj=src) as r:
            shutil.copyfileobj(r, dst, 1 << 20)
    elif packed == "lz4":
        import lz4.frame

        with lz4.frame.LZ4FrameFile(src) as r:
            shutil.copyfileobj(r, dst, 1 << 20)
    else:
        import snappy

        snappy.stream_decompress(src, dst)


class _Wrapped:
    """A Python file ``self.f`` with the interface of pyarrow's input files that readers use."""

    f: Any

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.f.seek(pos, whence)

    def tell(self) -> int:
        return self.f.tell()

    def close(self) -> None:
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Spooled(_Wrapped):
    """A temporary file (memory up to 64 MiB, then disk) with ``read_at``."""

    def __init__(self):
        import tempfile

        self.f = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 - closed by close()

    def read_at(self, n: int, offset: int) -> bytes:
        self.f.seek(offset)
        return self.f.read(n)


class _LocalFile(_Wrapped):
    """A local file with ``read_at`` (pread), as pyarrow's files have."""

    def __init__(self, path: str):
        self.f = open(path, "rb")  # noqa: SIM115 - closed by close() / the context manager

    def read_at(self, n: int, offset: int) -> bytes:
        return os.pread(self.f.fileno(), n, offset)

    def fileno(self) -> int:
        return self.f.fileno()


class Tree:
    """A folder tree for writing, on local disk or in a store, with string paths (``/``-separated).

    Locally, ``write_all`` writes every file to a temporary name and renames them all (all appear or none);
    in a store each object appears whole when its upload completes (S3 and the others have no rename), so
    writers put the objects that say "complete" (indexes, the completion marker) after the data."""

    def __init__(self, root: str, options: dict | None = None):
        import pyarrow.fs as pafs

        self.remote = is_uri(root)
        self.options = dict(options or {})
        if self.remote:
            self.fs, self.root = filesystem(str(root), options)
            self.scheme = urlparse(str(root)).scheme.lower()
        else:
            self.fs, self.root = pafs.LocalFileSystem(), os.path.abspath(root)

    def join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def _info(self, path: str):
        return self.fs.get_file_info(path)

    def is_file(self, path: str) -> bool:
        import pyarrow.fs as pafs

        return self._info(path).type == pafs.FileType.File

    def is_dir(self, path: str) -> bool:
        import pyarrow.fs as pafs

        return self._info(path).type == pafs.FileType.Directory

    def listdir(self, path: str) -> list[tuple[str, bool]]:
        """``(name, is a folder)`` of what is directly under ``path`` (nothing when it does not exist)."""
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        return sorted((i.base_name, i.type == pafs.FileType.Directory) for i in infos)

    def read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def open(self, path: str):
        """For ranged reads, as :func:`open_input`."""
        return self.fs.open_input_file(path) if self.remote else _LocalFile(path)

    def write(self, path: str, data: bytes) -> None:
        self.write_all([(path, data)])

    def write_all(self, staged: list[tuple[str, bytes]]) -> None:
        """Every ``(path, data)``: locally all at once (renames); in a store one object after another, in order."""
        if self.remote:
            for p, d in staged:
                with self.fs.open_output_stream(p) as f:
                    f.write(d)
            return
        from pathlib import Path

        from kfmt.storage.publish import write_all

        for p, _ in staged:
            os.makedirs(os.path.dirname(p), exist_ok=True)
        write_all([(Path(p), d) for p, d in staged])

    def size(self, path: str) -> int | None:
        """The size of the file at ``path`` (None when there is none)."""
        info = self._info(path)
        return info.size if info.is_file else None

    def move(self, src: str, dst: str) -> None:
        """Put ``src`` at ``dst`` (replacing it): a rename locally; in a store a server-side copy, then the
        source is deleted (a copy appears whole or not at all)."""
        if self.remote:
            self.fs.copy_file(src, dst)
            self.fs.delete_file(src)
            return
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(src, dst)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data`` unless something is there already: False if it is. Locally a
        hard link of a complete temporary file (link fails on an existing name, and never shows a partial
        file); on S3 a conditional write (``If-None-Match: *``). Other stores offer no such write through
        this layer: refused (:class:`NotImplementedError`), rather than a check that two writers could pass."""
        if self.remote:
            if self.scheme not in ("s3", "s3a"):
                raise NotImplementedError(f"{self.scheme}:// has no conditional write here: kfmt cannot make a "
                                          "commit there exclusive, and refuses to write (write to s3:// or a local path)")  # fmt: skip
            return _s3_put_if_absent(path, data, self.options)
        from pathlib import Path

        from kfmt.storage.publish import written_beside

        tmp = written_beside(Path(path), data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def remove(self, path: str) -> None:
        import pyarrow.fs as pafs

        info = self._info(path)
        if info.type == pafs.FileType.File:
            self.fs.delete_file(path)
        elif info.type == pafs.FileType.Directory:
            self.fs.delete_dir(path)

    def remove_empty(self, path: str) -> None:
        """Remove the folder ``path`` if nothing is left in it."""
        if self.is_dir(path) and not self.listdir(path):
            self.fs.delete_dir(path)

    def uri(self, path: str) -> str:
        """How readers name ``path``: a local path, or the store's URI."""
        return f"{self.scheme}://{path}" if self.remote else path


def _s3_put_if_absent(path: str, data: bytes, options: dict) -> bool:
    """``PUT`` with ``If-None-Match: *`` (S3 and most S3-compatible stores, since 2024): False when the
    object exists (412 Precondition Failed, or 409 while another conditional write of it is in flight)."""
    try:
        import boto3
        from botocore.exceptions import ClientError
    except ImportError as e:  # pragma: no cover - boto3 is a dependency of the spark extra
        raise NotImplementedError("writing to s3:// exclusively needs boto3 (pip install boto3)") from e
    s = s3_settings(options)
    kw: dict = {"endpoint_url": s.get("endpoint"), "region_name": s.get("region")}
    if "access_key" in s:
        kw.update(aws_access_key_id=s["access_key"], aws_secret_access_key=s["secret_key"])
    timeouts = {
        k: s[n] for k, n in (("connect_timeout", "connect_timeout"), ("read_timeout", "request_timeout")) if n in s
    }
    if timeouts:
        from botocore.config import Config

        kw["config"] = Config(**timeouts)
    bucket, key = path.split("/", 1)
    try:
        boto3.client("s3", **kw).put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict") or \
                e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):  # fmt: skip
            return False
        raise
    return True
