package kfmt.jvm;

/** Where generated decoders put what they decode: a record's headers first, then the record itself. Blobs are
 * (array, position, length), a length of -1 meaning null; the sink copies what it keeps. */
public interface Rows {
    void header(byte[] kb, int kp, int kl, byte[] vb, int vp, int vl);

    /** A header whose key is an integer (KIP-82's proposal): its key column holds the decimal text. */
    void header(long key, byte[] vb, int vp, int vl);

    void record(long offset, long timestamp, byte[] kb, int kp, int kl, byte[] vb, int vp, int vl);
}
