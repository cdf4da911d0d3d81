package kfmt.jvm;

import java.util.Arrays;

/** Records to encode, a column each (what a kfmt.Record holds): offset, timestamp (-1: none), key and value (null:
 * null), headers (keys as UTF-8 text, values null or bytes). Filled by {@link #add}, read by the generated encoders
 * by index. */
public final class Recs {
    private static final byte[][] NONE = new byte[0][];
    public int n;
    public long[] offset = new long[64];
    public long[] timestamp = new long[64];
    public byte[][] key = new byte[64][];
    public byte[][] value = new byte[64][];
    public byte[][][] hkeys = new byte[64][][];
    public byte[][][] hvals = new byte[64][][];

    public void clear() {
        Arrays.fill(key, 0, n, null);
        Arrays.fill(value, 0, n, null);
        Arrays.fill(hkeys, 0, n, null);
        Arrays.fill(hvals, 0, n, null);
        n = 0;
    }

    /** One record; {@code hk}/{@code hv} null for none. */
    public void add(long off, long ts, byte[] k, byte[] v, byte[][] hk, byte[][] hv) {
        if (n == offset.length) {
            int m = 2 * n;
            offset = Arrays.copyOf(offset, m);
            timestamp = Arrays.copyOf(timestamp, m);
            key = Arrays.copyOf(key, m);
            value = Arrays.copyOf(value, m);
            hkeys = Arrays.copyOf(hkeys, m);
            hvals = Arrays.copyOf(hvals, m);
        }
        offset[n] = off;
        timestamp[n] = ts;
        key[n] = k;
        value[n] = v;
        hkeys[n] = hk == null ? NONE : hk;
        hvals[n] = hv == null ? NONE : hv;
        n++;
    }

    /** The largest value of column {@code c} over records [from, to), {@code none} for no record. */
    public long max(long[] c, int from, int to, long none) {
        if (to <= from) return none;
        long m = Long.MIN_VALUE;
        for (int i = from; i < to; i++) m = Math.max(m, c[i]);
        return m;
    }
}
