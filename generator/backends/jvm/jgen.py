"""Lowering of the typed IR to Java: one decoding method per struct, straight-line code over a ``byte[]``.

Every value is a Java ``long`` (integers, bit views, flags as 0/1), every blob three locals (array, position,
length; -1 for null). A struct that is not clean raises :class:`kfmt.jvm.Bad` with its field path, as the
python backend raises a CodecError. Records go to ``cx.rows`` (the sink), batch-level values to ``cx.batch``.
"""

from __future__ import annotations

from generator.backends.jvm.base import JavaExpr, Unsupported, class_name, doc, jstr
from generator.backends.jvm.entries import MessageEntry, msg_class
from generator.backends.jvm.structs import StructGen
from generator.ir import nodes as n


class JavaGen(JavaExpr):
    """The Java source of one format's decoder."""

    def __init__(self, f: n.FormatIR, package: str):
        self.f = f
        self.package = package
        self.by_name = {s.name: s for s in f.structs}
        self.root = self.by_name[f.root]
        self.enums = {e.name: e for e in f.enums}
        if self.root.role not in ("batch", "message") or f.magic is None:
            raise Unsupported(f"a root of role {self.root.role} (log entries are batches or messages)")
        self.roles = self._roles()

    def _roles(self) -> dict[str, str]:
        """The struct of each row-making role: ``message`` at a message root or ``record`` under a batch, and
        ``header`` for the elements of the row struct's ``headers`` array. Other arrays' elements are checked
        and give no row."""
        if self.root.role == "message":
            if len(self.root.wrappers) > 1:
                raise Unsupported("more than one wrapper")
            roles, row = {self.root.name: "message"}, self.root
        else:
            arr = [f.wire for f in self.root.fields if isinstance(f.wire, n.ArrayType)]
            if len(arr) != 1:
                raise Unsupported("a batch without exactly one array of records")
            roles, row = {arr[0].elem: "record"}, self.by_name[arr[0].elem]
        for f in row.fields:
            if isinstance(f.wire, n.ArrayType) and f.name == "headers":
                roles[f.wire.elem] = "header"
        return roles

    def _used(self) -> list[n.Struct]:
        """The structs a log entry decodes through (arrays' elements, views), in schema order."""
        seen, todo = set(), [self.root.name]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            st = self.by_name[name]
            for f in st.fields:
                if isinstance(f.wire, n.ArrayType):
                    todo.append(f.wire.elem)
                elif not isinstance(f.wire, (n.Int, n.Varint, n.Blob)):
                    raise Unsupported(f"a {type(f.wire).__name__} field")
            todo += [v.struct for v in st.views]
        return [st for st in self.f.structs if st.name in seen]

    def emit(self) -> str:
        cls = class_name(self.f.id)
        methods = [StructGen(self, st).emit() for st in self._used()]
        msg = msg_class(self) if self.root.role == "message" else ""
        entry = MessageEntry(self).emit() if self.root.role == "message" else self._batch_entry()
        return "\n".join([
            f"package {self.package};",
            "",
            "import kfmt.jvm.Bad;",
            "import kfmt.jvm.Ctx;",
            "",
            f"/** {doc(self.f.doc)} */",
            f"public final class {cls} implements kfmt.jvm.Decoder {{",
            f"    public String id() {{ return {jstr(self.f.id)}; }}",
            f"    public int magic() {{ return {self.f.magic}; }}",
            f"    public boolean autoDetect() {{ return {'true' if self.f.auto_detect else 'false'}; }}",
            "",
            msg,
            entry,
            *methods,
            "}",
            "",
        ])  # fmt: skip

    def _batch_entry(self) -> str:
        return (
            "    public int entry(Ctx cx, byte[] b, int pos, int end) throws Bad {\n"
            "        cx.batch.reset();\n"
            f"        return d_{self.root.name}(cx, b, pos, end);\n"
            "    }\n"
        )
