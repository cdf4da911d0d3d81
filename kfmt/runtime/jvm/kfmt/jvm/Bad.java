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

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
