package kfmt.jvm;

import java.io.Serializable;

/** kfmt.runtime.options.DecodeOptions, as the plan carries it to the executors. */
public final class Limits implements Serializable {
    public boolean verifyCrc = true;
    public long maxDecompressed = 256L << 20;
    public long maxRatio = 1024;
    public long maxRecords = 10_000_000;
    public long maxHeaders = 100_000;
    public long maxBytes = 256L << 20;
    public int maxDepth = 1;

    /** Decompressed bytes allowed for n compressed bytes (kfmt.runtime.compression.allowance). */
    public long allowance(long n) {
        return Math.min(maxDecompressed, Math.max(n * maxRatio, 1L << 20));
    }
}
