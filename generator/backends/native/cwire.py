"""How the native decoders read Kafka's variable-length wire values in C: varints, length and count\nprefixes, blobs and strings, arrays (counted, sized, to the end of a region, compressed streams) and\ntheir elements."""

from __future__ import annotations

import generator.ir.nodes as n
from generator.backends.native.clower import (
    _LOAD,
    Unsupported,
    c_str,
)


class _WireReads:
    """How the native decoders read Kafka's variable-length wire values in C: varints, length and count\nprefixes, blobs and strings, arrays (counted, sized, to the end of a region, compressed streams) and\ntheir elements (a mixin: the state is the class using it)."""

    def varint(self, var: str, wire: n.Varint, depth: int, end: str | None = None) -> None:
        end = end or self.end
        self.w("{", depth)
        self.w("uint64_t u_;", depth + 1)
        self.w(f"if (kf_uvarint(b, &pos, {end}, {wire.max_bytes}, &u_)) FALLBACK;", depth + 1)
        if wire.zigzag:
            self.w(f"{var} = kf_zigzag{wire.bits}(u_);", depth + 1)
        elif wire.compact:  # Kafka's compact length or count: N + 1 on the wire, 0 for null (-1)
            self.w(f"{var} = (int64_t)u_ - 1;", depth + 1)
        else:
            self.w(f"{var} = (int64_t)u_;", depth + 1)
        self.w("}", depth)

    def prefix(self, var: str, wire: n.Int | n.Varint, depth: int) -> None:
        if isinstance(wire, n.Varint):
            self.varint(var, wire, depth)
        else:
            self.w(f"if ({self.end} - pos < {wire.width}) FALLBACK;", depth)
            self.w(f"{var} = {_LOAD[(wire.width, wire.signed)]}(b + pos);", depth)
            self.w(f"pos += {wire.width};", depth)

    def blob(self, f: n.Field, wire: n.Blob, depth: int) -> None:
        if self.role in ("record", "header"):  # a column: where its bytes are, no object
            self.blob_ptr(f, wire, depth)
            return
        o = self.obj(f"o_{f.name}")
        nv = self.blob_length(f, wire, depth)
        if wire.nullable and not isinstance(wire.length, n.Rest):
            self.w(f"if ({nv} < 0) {{", depth)
            self.w(f"{o} = Py_NewRef(Py_None);", depth + 1)
            self.w("} else {", depth)
            depth += 1
        else:
            self.w(f"if ({nv} < 0) FALLBACK;", depth)
        limit = f" || {nv} > {wire.max}" if wire.max is not None else ""
        self.w(f"if ({nv} > cx->max_bytes || {nv} > {self.end} - pos{limit}) FALLBACK;", depth)
        if wire.text:
            self.w(f"{o} = kf_text(b + pos, {nv});", depth)
        elif wire.view:
            self.w(f"{o} = kf_view(cx, b, pos, {nv});", depth)
        else:
            self.w(f"{o} = PyBytes_FromStringAndSize((const char *)b + pos, {nv});", depth)
        self.w(f"if ({o} == NULL) ERROR;", depth)
        self.w(f"pos += {nv};", depth)
        if wire.nullable and not isinstance(wire.length, n.Rest):
            self.w("}", depth - 1)

    def blob_length(self, f: n.Field, wire: n.Blob, depth: int) -> str:
        """Read a blob's length into ``n_<field>`` (the rest of the region, or its prefix)."""
        nv = self.scalar(f"n_{f.name}")
        if isinstance(wire.length, n.Rest):
            self.w(f"{nv} = {self.end} - pos - {wire.length.trailer};", depth)
        elif isinstance(wire.length, (n.Int, n.Varint)):
            self.prefix(nv, wire.length, depth)
        else:
            raise Unsupported(f"{self.st.name}.{f.name}: a blob counted by another field")
        return nv

    def blob_ptr(self, f: n.Field, wire: n.Blob, depth: int) -> None:
        self.ptrs.append(f.name)
        nv = self.blob_length(f, wire, depth)
        nullable = wire.nullable and not isinstance(wire.length, n.Rest)
        self.w(f"if ({nv} < 0) {{", depth)
        self.w(f"{nv} = -1;" if nullable else "FALLBACK;", depth + 1)
        self.w("} else {", depth)
        limit = f" || {nv} > {wire.max}" if wire.max is not None else ""
        self.w(f"if ({nv} > cx->max_bytes || {nv} > {self.end} - pos{limit}) FALLBACK;", depth + 1)
        self.w(f"bp_{f.name} = b + pos;", depth + 1)
        self.w(f"pos += {nv};", depth + 1)
        self.w("}", depth)

    def call(self, elem: str, target: str, buf: str, pos: str, end: str, npos: str, depth: int) -> None:
        self.obj(target)
        args = self.low.args(elem, self.st)
        self.w(f"if ((rc_ = d_{elem}(cx, {buf}, {pos}, {end}{args}, &{target}, {npos})) != KF_OK) goto done;", depth)

    def array(self, f: n.Field, wire: n.ArrayType) -> None:
        """An array: its size prefix (optional), its count, its (perhaps compressed) elements."""
        st = self.st
        rest = isinstance(wire.count, n.Rest)
        nv = self.scalar(f"n_{f.name}")
        sized_end = self.array_size(f, wire) if wire.size is not None else None
        if isinstance(wire.count, n.CountFrom):
            self.w(f"{nv} = {self.low.ref(wire.count.field, st)};")
        elif isinstance(wire.count, (n.Int, n.Varint)):
            self.prefix(nv, wire.count, 1)
        elif not rest:
            raise Unsupported(f"{st.name}.{f.name}: count {wire.count}")
        null_count = wire.nullable and wire.size is None and not rest
        if null_count:  # a negative count (compact: 0) is a null array
            self.w(f"if ({nv} < 0) {{ {self.obj('o_' + f.name)} = Py_NewRef(Py_None); }} else {{")
        if not rest:
            self.w(f"if ({nv} < 0 || {nv} > cx->{wire.limit}) FALLBACK;")
        end = self.end
        self.w("{")
        self.w("const uint8_t *db_ = b;", 2)
        self.w(f"Py_ssize_t dp_ = pos, de_ = {end};", 2)
        self.w("PyObject *data_ = NULL;", 2)
        if wire.compressed_by is not None:
            self.array_stream(f, wire, nv, rest)
        self.w("int ok_ = 0, bad_ = 0;", 2)
        self.w("do {", 2)
        if rest:
            self.elements_to_end(f, wire)
        else:
            self.counted_elements(f, wire, nv)
        self.w("ok_ = 1;", 3)
        self.w("} while (0);", 2)
        self.w("if (data_ != NULL) {", 2)
        self.w("Py_DECREF(data_);", 3)
        self.w("if (!ok_ || dp_ != de_) FALLBACK;", 3)
        self.w(f"pos = {end};", 3)
        self.w("} else {", 2)
        self.w("if (!ok_) FALLBACK;", 3)
        self.w("pos = dp_;", 3)
        self.w("}", 2)
        self.w("}")
        if null_count:
            self.w("}")
        if isinstance(wire.count, n.CountFrom) and st.fields[-1].name == f.name:
            self.w(f"if (!{nv}) pos = {end};  /* as Kafka: an empty batch's payload is not read */")
        if sized_end is not None:
            self.w(f"if (pos != {sized_end}) FALLBACK;")
            self.ends.pop()
            self.w("}")

    def array_size(self, f: n.Field, wire: n.ArrayType) -> str:
        """An array's byte-size prefix (null when negative, if nullable): the end its elements must reach."""
        o = self.obj(f"o_{f.name}")
        if not isinstance(wire.size, n.Int):
            raise Unsupported(f"{self.st.name}.{f.name}: an array sized by a varint")
        sz = self.scalar(f"s_{f.name}")
        self.prefix(sz, wire.size, 1)
        if wire.nullable:
            self.w(f"if ({sz} < 0) {{ {o} = Py_NewRef(Py_None); }} else {{")
        else:
            self.w(f"if ({sz} < 0) FALLBACK;")
            self.w("{")
        sized_end = f"se_{f.name}"
        self.w(f"Py_ssize_t {sized_end} = pos + {sz};")
        self.w(f"if ({sized_end} > {self.end}) FALLBACK;")
        self.ends.append(sized_end)
        return sized_end

    def array_stream(self, f: n.Field, wire: n.ArrayType, nv: str, rest: bool) -> None:
        """A compressed array: its elements are read from the decompressed stream."""
        st, end = self.st, self.end
        assert wire.compressed_by is not None
        codec = self.low.ref(wire.compressed_by, st)
        when = f"{codec} != {self.low.none_id(wire.compressed_by)}" + ("" if rest else f" && {nv}")
        self.w(f"if ({when}) {{", 2)
        self.w(
            f"data_ = kf_decompress_call(cx, E_{self.low.enum_of(wire.compressed_by)}[{codec}], b + pos, {end} - pos, "
            f"pos, {c_str(st.name + '.' + f.name)});",
            3,
        )
        self.w("if (data_ == NULL) { rc_ = kf_error_or_fallback(); goto done; }", 3)
        self.w("db_ = (const uint8_t *)PyBytes_AS_STRING(data_);", 3)
        self.w("dp_ = 0;", 3)
        self.w("de_ = PyBytes_GET_SIZE(data_);", 3)
        self.w("}", 2)

    def elements_to_end(self, f: n.Field, wire: n.ArrayType) -> None:
        o, d, bud = self.obj(f"o_{f.name}"), 3, f"bud_{f.name}"
        budget = wire.budget or n.Budget(0)
        if not budget.accounted:
            self.w(f"int64_t {bud} = cx->max_memory - (de_ - dp_);", d)
        if not (self.mode == "columns" and wire.elem in self.low.column_roles and self.role):
            self.w(f"{o} = PyList_New(0);", d)
            self.w(f"if ({o} == NULL) {{ Py_XDECREF(data_); ERROR; }}", d)
        self.w("Py_ssize_t i_ = 0;", d)
        self.w("while (dp_ < de_) {", d)
        self.w(f"if (i_ >= cx->{wire.limit}) {{ bad_ = 1; break; }}", d + 1)
        if not budget.accounted:
            self.w(f"{bud} -= {budget.cost};", d + 1)
            self.w(f"if ({bud} < 0) {{ bad_ = 1; break; }}", d + 1)
        self.element(wire, bud, budget, "PyList_Append", d + 1)
        self.w("i_++;", d + 1)
        self.w("}", d)
        self.w("if (bad_) break;", d)
        if budget.accounted:
            self.w(f"cx->spent += (int64_t)i_ * {budget.cost};", d)

    def counted_elements(self, f: n.Field, wire: n.ArrayType, nv: str) -> None:
        o, d, bud = self.obj(f"o_{f.name}"), 3, f"bud_{f.name}"
        budget = wire.budget or n.Budget(0)
        self.w(f"if ({nv} * {wire.min_elem_size} > de_ - dp_) break;", d)
        if not budget.accounted:
            self.w(f"int64_t {bud} = cx->max_memory - (de_ - dp_) - {nv} * {budget.cost};", d)
            self.w(f"if ({bud} < 0) break;", d)
        else:
            self.w(f"cx->spent += {nv} * {budget.cost};", d)
        rows = self.mode == "columns" and wire.elem in self.low.column_roles
        if not (rows and self.role):  # a row keeps no list of its headers; a batch an empty records list
            self.w(f"{o} = PyList_New({0 if rows else nv});", d)
            self.w(f"if ({o} == NULL) {{ Py_XDECREF(data_); ERROR; }}", d)
        self.w("Py_ssize_t i_ = 0;", d)
        self.w(f"for (; i_ < {nv}; i_++) {{", d)
        self.element(wire, bud, budget, "SET", d + 1)
        self.w("}", d)
        self.w("if (bad_) break;", d)

    def element(self, wire: n.ArrayType, bud: str, budget: n.Budget, store: str, d: int) -> None:
        args = self.low.args(wire.elem, self.st)
        self.w("PyObject *item_ = NULL;", d)
        if budget.nested and not budget.accounted:
            self.w("cx->spent = 0;", d)
        rows = self.mode == "columns" and wire.elem in self.low.column_roles
        self.w(f"int r_ = {'c' if rows else 'd'}_{wire.elem}(cx, db_, dp_, de_{args}, &item_, &dp_);", d)
        self.w("if (r_ == KF_ERROR) { Py_XDECREF(data_); rc_ = KF_ERROR; goto done; }", d)
        self.w("if (r_ != KF_OK) { bad_ = 1; break; }", d)
        if rows:  # appended to the columns: nothing to keep
            pass
        elif store == "SET":
            self.w(f"PyList_SET_ITEM(o_{wire_name(self, wire)}, i_, item_);", d)
        else:
            self.w(f"int a_ = PyList_Append(o_{wire_name(self, wire)}, item_);", d)
            self.w("(void)a_;", d)
            self.w("Py_DECREF(item_);", d)
            self.w("if (a_ < 0) { Py_XDECREF(data_); ERROR; }", d)
        if budget.nested and not budget.accounted:
            self.w(f"{bud} -= cx->spent;", d)
            self.w(f"if ({bud} < 0) {{ bad_ = 1; break; }}", d)


def wire_name(g, wire: n.ArrayType) -> str:
    return next(f.name for f in g.st.fields if f.wire is wire)
