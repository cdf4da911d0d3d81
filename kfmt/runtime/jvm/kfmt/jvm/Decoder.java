package kfmt.jvm;

/** One format's generated decoder: the log entry in [pos, end) of b, its records put into cx.rows and its
 * batch-level values into cx.batch. Returns the position after the entry. */
public interface Decoder {
    String id();

    int magic();

    boolean autoDetect();

    int entry(Ctx cx, byte[] b, int pos, int end) throws Bad;
}
