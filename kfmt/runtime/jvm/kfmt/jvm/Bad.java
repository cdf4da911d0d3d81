package kfmt.jvm;

/** An entry that does not decode cleanly: what (the reason) and where (the field path, the byte within the
 * entry's buffer). No stack trace: it is a result. (Whether bytes end in a batch being written is the reader's
 * call, from the entry's framing: SliceReader.) */
public final class Bad extends Exception {
    public final String path;
    public final long at;

    public Bad(String path, long at, String why) {
        super(why);
        this.path = path;
        this.at = at;
    }

    /** No byte named (kfmt's CodecError without an offset). */
    public static final long NOWHERE = Long.MIN_VALUE;

    /** The error raised inside element {@code index} of array {@code path} (of structs {@code elem}), located there
     * (kfmt.runtime.errors.CodecError.within). */
    public Bad within(String path, long index, String elem) {
        String inner = this.path == null ? elem : this.path;
        String rest = inner.startsWith(elem) ? inner.substring(elem.length()) : "." + inner;
        return new Bad(path + "[" + index + "]" + rest, at, getMessage());
    }

    /** An error raised reading a decompressed stream, located at {@code where} (the compressed bytes' start, or
     * nowhere) and saying where in the stream it was (kfmt.runtime.errors.CodecError.in_stream). */
    public Bad inStream(String codec, long where) {
        String said = at == NOWHERE ? "" : " (at byte " + at + " of the decompressed " + codec + " stream)";
        return new Bad(path, where, getMessage() + said);
    }

    /** Its byte counted from {@code base} (a payload's or a message's first byte). */
    public Bad from(long base) {
        return at == NOWHERE ? this : new Bad(path, at - base, getMessage());
    }

    /** As kfmt's CodecError says it: "<path> at byte <n>: <why>", under {@code prefix} (key, value) if given. */
    public String text(String prefix) {
        String p = prefix == null ? path : path == null ? prefix : prefix + "." + path;
        String where = (p == null ? "" : p) + (at == NOWHERE ? "" : (p == null ? "" : " ") + "at byte " + at);
        return where.isEmpty() ? getMessage() : where + ": " + getMessage();
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
