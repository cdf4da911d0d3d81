package kfmt.jvm;

/** An entry that does not decode cleanly: what (the reason), where (the field path, the byte within the entry's
 * buffer) and, for an entry cut short, how many bytes of it the buffer holds. No stack trace: it is a result. */
public final class Bad extends Exception {
    public final String path;
    public final long at;
    /** the entry runs past the end of what was read (a batch being written, or a cut file) */
    public final boolean truncated;

    public Bad(String path, long at, String why, boolean truncated) {
        super(why);
        this.path = path;
        this.at = at;
        this.truncated = truncated;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
