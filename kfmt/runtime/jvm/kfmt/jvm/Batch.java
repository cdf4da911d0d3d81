package kfmt.jvm;

/** The batch-level values of the entry just decoded (a v2 batch, or a legacy message / wrapper), with the
 * defaults kfmt.runtime.model.Batch gives a format that lacks the field. Reused from entry to entry. */
public final class Batch {
    public int magic;
    public int codec;
    public long baseOffset;
    public long lastOffset;
    public long producerId;
    public int producerEpoch;
    public int baseSequence;
    public boolean isTransactional;
    public boolean isControl;
    public boolean hasDeleteHorizon;
    public int partitionLeaderEpoch;
    public int timestampType; // -1: none (magic 0)
    public long baseTimestamp;
    public long maxTimestamp;

    public void reset() {
        magic = -1;
        codec = 0;
        baseOffset = 0;
        lastOffset = 0;
        producerId = -1;
        producerEpoch = -1;
        baseSequence = -1;
        isTransactional = false;
        isControl = false;
        hasDeleteHorizon = false;
        partitionLeaderEpoch = -1;
        timestampType = -1;
        baseTimestamp = -1;
        maxTimestamp = -1;
    }
}
