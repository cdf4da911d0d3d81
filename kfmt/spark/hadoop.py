"""A store only a Hadoop connector reaches, listed and read by kfmt's planner on the driver through the session's
own Hadoop FileSystem (``kfmt.jvm.Stores``, over PySpark's Py4J gateway): ``hdfs://`` where pyarrow has no libhdfs,
or a scheme the cluster registers (``fs.<scheme>.impl``). The executors read those stores through the same API, so
the planner and the readers see one store.

:class:`HadoopHandler` is a ``pyarrow.fs`` filesystem (read-only), so kfmt.storage's readers use it unchanged;
:func:`provided` gives one per scheme for :func:`kfmt.storage.provided`. Reads go by blocks of 1 MiB, kept while a
file is open (the planner reads index files whole and batch headers one after another).
"""

from __future__ import annotations

import pyarrow.fs as pafs

from kfmt.storage import Blocks

BLOCK = 1 << 20


def provided(stores, schemes, read_timeout_ms: int = 120_000) -> dict:
    """``{scheme: function of a URI to (pyarrow FileSystem, path)}`` for kfmt.storage.provided, over ``stores``
    (a ``kfmt.jvm.Stores`` of the session)."""

    def make(scheme):
        def fs_of(uri: str):
            return pafs.PyFileSystem(HadoopHandler(stores, scheme, read_timeout_ms)), uri.split("://", 1)[1]

        return fs_of

    return {s: make(s) for s in schemes}


class HadoopHandler(pafs.FileSystemHandler):
    """pyarrow.fs.FileSystemHandler over a ``kfmt.jvm.Stores``; paths are URIs without their ``scheme://``."""

    def __init__(self, stores, scheme: str, read_timeout_ms: int):
        self.stores, self.scheme, self.timeout = stores, scheme, read_timeout_ms

    def __eq__(self, other):
        return isinstance(other, HadoopHandler) and (other.stores, other.scheme) == (self.stores, self.scheme)

    def __ne__(self, other):
        return not self == other

    def get_type_name(self) -> str:
        return f"hadoop-{self.scheme}"

    def normalize_path(self, path: str) -> str:
        return path

    def _uri(self, path: str) -> str:
        return f"{self.scheme}://{path}"

    def _path(self, uri: str) -> str:
        return uri.split("://", 1)[1] if "://" in uri else uri

    def get_file_info(self, paths):
        out = []
        for p in paths:
            kind, *size = str(self.stores.info(self._uri(p))).split("\t")
            if kind == "F":
                out.append(pafs.FileInfo(p, pafs.FileType.File, size=int(size[0])))
            else:
                out.append(pafs.FileInfo(p, pafs.FileType.Directory if kind == "D" else pafs.FileType.NotFound))
        return out

    def get_file_info_selector(self, selector):
        listing = self.stores.list(self._uri(selector.base_dir), bool(selector.recursive))
        if listing is None:
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"no such file or directory: {self._uri(selector.base_dir)}")
        out = []
        for line in str(listing).splitlines():
            kind, size, uri = line.split("\t", 2)
            if kind == "F":
                out.append(pafs.FileInfo(self._path(uri), pafs.FileType.File, size=int(size)))
            else:
                out.append(pafs.FileInfo(self._path(uri), pafs.FileType.Directory))
        return out

    def open_input_file(self, path: str):
        import pyarrow as pa

        (info,) = self.get_file_info([path])
        if info.size is None:
            raise FileNotFoundError(f"no such file: {self._uri(path)}")
        uri = self._uri(path)

        def fetch(at: int, n: int) -> bytes:
            return bytes(self.stores.read(uri, at, n, self.timeout))

        return pa.PythonFile(Blocks(fetch, info.size, BLOCK, uri), mode="r")

    def open_input_stream(self, path: str):
        return self.open_input_file(path)

    def _read_only(self, *_args, **_kw):
        raise NotImplementedError(f"{self.scheme}://: kfmt's planner reads this store through Hadoop, and writes "
                                  "nothing there")  # fmt: skip

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only
