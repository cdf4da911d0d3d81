package kfmt.jvm;

/** A format's encoder (generated: kfmt.jvm.gen.*Encoder, indexed by kfmt.jvm.gen.Encoders): records as one batch of
 * the format, byte for byte what kfmt.encode_batch writes for them with keep_offsets (a v2 batch, a legacy message
 * per record, or one compressed wrapper holding them). */
public interface Encoder {
    String id();

    int magic();

    /** Records [from, to) of {@code r} as one batch with the batch values {@code f} (base_offset, codec, ...),
     * appended to {@code x.out}. */
    void encode(Enc x, Recs r, int from, int to, Fields f);
}
