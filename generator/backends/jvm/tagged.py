"""The payload decoders' tagged-field sections (:mod:`generator.backends.jvm.payloads`): Kafka's tagged fields read
in any order (the last of a tag counting), each known one's JSON kept aside and written after the section in
declared order unless it is the field's value when absent, unknown tags under ``_unknownTaggedFields``."""

from __future__ import annotations

from typing import Any

from generator.backends.jvm.base import jstr
from generator.ir import nodes as n

NONE = "Long.MIN_VALUE"  # the JSON's version when it has none (a message read from bytes, without a version)


class TaggedJson:
    """The tagged-field part of a payload struct's lowering (mixed into ``StructJson``, whose helpers it uses)."""

    g: Any  # the schema's PayloadGen (constants: names, values, empty structs' JSON)
    st: n.Struct

    # what the struct's lowering provides
    def say(self, line: str) -> None:
        raise NotImplementedError

    def path(self, field: str | None = None) -> str:
        raise NotImplementedError

    def _json_of(self, name: str):
        raise NotImplementedError

    def _args(self, struct: str) -> str:
        raise NotImplementedError

    def bool_expr(self, e: n.Expr) -> str:
        raise NotImplementedError

    def _tagged(self, f: n.Field, w: n.Tagged) -> None:
        """Kafka's tagged section: known tags' JSON kept per tag (the last one counts), unknown ones listed; then
        ``_unknownTaggedFields`` and the known ones in declared order, each left out at its default."""
        p = self.path(f.name)
        for t in w.fields:
            self.say(f"byte[] t_{t.name} = null;")
        self.say("java.util.ArrayList<int[]> unknown_ = new java.util.ArrayList<>();")
        self.say(f"long ntags_ = cx.uvarint(b, pos, end, 5, {p}); pos = cx.p;")
        self.say(
            f'if (ntags_ > (end - pos) / 2) throw cx.bad({p}, pos, ntags_ + " tagged fields cannot fit in " + (end - pos) + " bytes");'
        )
        self.say("for (long k_ = 0; k_ < ntags_; k_++) {")
        self.say(f"    long tag_ = cx.uvarint(b, pos, end, 5, {p}); pos = cx.p;")
        self.say(f"    long size_ = cx.uvarint(b, pos, end, 5, {p}); pos = cx.p;")
        self.say(
            f'    if (size_ > end - pos) throw cx.bad({p}, pos, "tag " + tag_ + " declares " + size_ + " bytes, " + (end - pos) + " left");'
        )
        self.say("    int stop_ = pos + (int) size_;")
        first = True
        for t in w.fields:
            cond = self.bool_expr(t.condition) if t.condition is not None else "true"
            kw = "if" if first else "else if"
            first = False
            tp = jstr(f"{self.st.name}.{f.name}.{t.name}")
            self.say(f"    {kw} (tag_ == {t.tag} && {cond}) {{")
            self.say("        int m_ = j.mark();")
            self.say(f"        int q_ = d_{t.struct}(cx, j, b, pos, stop_, jv{self._args(t.struct)});")
            self.say(f"        t_{t.name} = j.cut(m_);")
            self.say(
                f'        if (q_ != stop_) throw cx.bad({tp}, q_, "tag {t.tag} ({t.name}) holds " + size_ + " bytes, its value " + (q_ - pos));'
            )
            self.say("    }")
            if t.condition is not None:
                self.say(
                    f'    else if (tag_ == {t.tag}) throw cx.bad({tp}, pos, "tag {t.tag} ({t.name}) is not valid at this version");'
                )
        self.say(f"    {'else ' if w.fields else ''}unknown_.add(new int[] {{(int) tag_, pos, (int) size_}});")
        self.say("    pos = stop_;")
        self.say("}")
        entry = self._json_of(f.name)
        if entry is not None:
            close = self._key_if(entry, "!unknown_.isEmpty()")
            self.say("    j.openArray();")
            self.say("    for (int[] u_ : unknown_) {")
            self.say(
                "        j.item(); j.open(); j.key(Js.TAG); j.unum(u_[0] & 0xFFFFFFFFL); j.key(Js.DATA); "
                "j.hex(b, u_[1], u_[2]); j.close();"
            )
            self.say("    }")
            self.say("    j.closeArray();")
            self.say(close)
        defaults = dict(self.g.tagged.get(self.st.name, ()))
        for t in w.fields:
            entry = self._json_of(t.name)
            if entry is None:
                continue
            at_default = self._absent_json(t, defaults.get(t.name))
            close = self._key_if(entry, f"t_{t.name} != null && !java.util.Arrays.equals(t_{t.name}, {at_default})")
            self.say(f"    j.raw(t_{t.name});")
            self.say(close)

    def _key_if(self, entry, cond: str) -> str:
        kafka, _, versions = entry
        if versions is not None:
            lo, hi = versions
            cond = f"({cond}) && (jv == {NONE} || (jv >= {lo} && jv <= {hi}))"
        self.say(f"if ({cond}) {{")
        self.say(f"    j.key({self.g.name(kafka)});")
        return "}"

    def _absent_json(self, t: n.TaggedField, default) -> str:
        """The JSON text of a tagged field's value when absent (what it is left out at)."""
        if isinstance(t.absent, n.EmptyStruct) or (type(default) is tuple and default[:1] == ("empty",)):
            const = f"EMPTY_{t.struct.upper()}"
            if const not in {c for c, _, _ in self.g.absent}:
                raw = default[2] if type(default) is tuple else b""
                lit = "new byte[] {" + ", ".join(str(x if x < 128 else x - 256) for x in raw) + "}"
                self.g.absent.append((const, t.struct, lit))
            return f"{const}(cx)"
        import json

        absent = t.absent.hex() if isinstance(t.absent, bytes) else t.absent  # bytes: Kafka's JSON (hex in kfmt's)
        return self.g.value(json.dumps(absent))
