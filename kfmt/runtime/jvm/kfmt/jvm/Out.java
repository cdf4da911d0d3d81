package kfmt.jvm;

import java.util.Arrays;

/** Bytes being written, big-endian as Kafka's wire is: a buffer that grows, reused from batch to batch. The
 * generated encoders (kfmt.jvm.gen.*Encoder) append to one; a length or a CRC known only at the end is written as
 * a placeholder and {@link #patch32 patched}. */
public final class Out {
    public byte[] b;
    public int n;

    public Out(int size) {
        b = new byte[size];
    }

    public void clear() {
        n = 0;
    }

    public void room(int k) {
        if (n + k > b.length) {
            long want = Math.max((long) n + k, 2L * b.length);
            if (want > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("kafka-log writer: a batch over 2 GiB");
            b = Arrays.copyOf(b, (int) want);
        }
    }

    public void i8(long v) {
        room(1);
        b[n++] = (byte) v;
    }

    public void i16(long v) {
        room(2);
        b[n++] = (byte) (v >>> 8);
        b[n++] = (byte) v;
    }

    public void i32(long v) {
        room(4);
        put32(b, n, v);
        n += 4;
    }

    public void i64(long v) {
        room(8);
        put32(b, n, v >>> 32);
        put32(b, n + 4, v);
        n += 8;
    }

    private static void put32(byte[] b, int at, long v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    /** A 4-byte value written earlier as a placeholder at {@code at}. */
    public void patch32(int at, long v) {
        put32(b, at, v);
    }

    /** Kafka's unsigned varint (7 bits a byte, low first) of the low 64 bits of v. */
    public void uvarint(long v) {
        room(10);
        while ((v & ~0x7FL) != 0) {
            b[n++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        b[n++] = (byte) v;
    }

    /** A signed 32-bit varint (zigzag), as Kafka's ByteUtils.writeVarint: the value taken as an int. */
    public void varint(long v) {
        int x = (int) v;
        uvarint(((x << 1) ^ (x >> 31)) & 0xFFFFFFFFL);
    }

    /** A signed 64-bit varint (zigzag), as ByteUtils.writeVarlong. */
    public void varlong(long v) {
        uvarint((v << 1) ^ (v >> 63));
    }

    public void bytes(byte[] v, int from, int len) {
        room(len);
        System.arraycopy(v, from, b, n, len);
        n += len;
    }

    public void bytes(byte[] v) {
        bytes(v, 0, v.length);
    }
}
