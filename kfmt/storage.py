"""Where logs live: local paths, and URIs read through ``pyarrow.fs`` (a dependency already, and a maintained
filesystem layer with S3, GCS, Azure and HDFS behind one interface of ranged reads).

Schemes: ``file://``, ``s3://`` (and Hadoop's ``s3a://``), ``gs://``/``gcs://``, ``abfs://``/``abfss://``,
``hdfs://``/``viewfs://``. Credentials come the usual way of each store (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, profiles, instance roles); an S3 endpoint other than AWS
(MinIO, Ceph, a test server) is ``s3.endpoint`` in the options or ``AWS_ENDPOINT_URL``, its region
``s3.region`` or ``AWS_REGION``. Files are opened for ranged reads: a split of a segment reads its range,
never the whole object.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

SCHEMES = ("file", "s3", "s3a", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
#: options of the readers that configure storage (the Spark source passes its options through)
OPTIONS = {
    "s3.endpoint": "an S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL, else AWS)",
    "s3.region": "the S3 region (default: AWS_REGION)",
    "s3.access_key": "an access key (default: the usual AWS credential chain; prefer that: options show in plans)",
    "s3.secret_key": "its secret key (default: the usual AWS credential chain)",
}


def is_uri(path) -> bool:
    """Whether ``path`` names a store by URI (``scheme://...``) rather than a local path."""
    s = str(path)
    return "://" in s and s.split("://", 1)[0].lower() in SCHEMES


def filesystem(uri: str, options: dict | None = None):
    """``(pyarrow FileSystem, path inside it)`` for a URI."""
    import pyarrow.fs as pafs

    options = options or {}
    u = urlparse(uri)
    scheme = u.scheme.lower()
    if scheme in ("s3", "s3a"):
        endpoint = (
            options.get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        )
        kw: dict = {}
        if endpoint:
            e = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
            kw.update(endpoint_override=e.netloc, scheme=e.scheme)
        region = options.get("s3.region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kw["region"] = region
        if options.get("s3.access_key"):
            kw.update(access_key=options["s3.access_key"], secret_key=options.get("s3.secret_key", ""))
        return pafs.S3FileSystem(**kw), f"{u.netloc}{u.path}".rstrip("/")
    if scheme == "file":
        return pafs.LocalFileSystem(), u.path
    fs, path = pafs.FileSystem.from_uri(uri.replace("gcs://", "gs://", 1))
    return fs, path


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


class _LocalFile:
    """A local file with ``read_at`` (pread), as pyarrow's files have."""

    def __init__(self, path: str):
        self.f = open(path, "rb")  # noqa: SIM115 - closed by close() / the context manager

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.f.seek(pos, whence)

    def tell(self) -> int:
        return self.f.tell()

    def read_at(self, n: int, offset: int) -> bytes:
        return os.pread(self.f.fileno(), n, offset)

    def fileno(self) -> int:
        return self.f.fileno()

    def close(self) -> None:
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
