package kfmt.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;

/** What generated decoders share: the sink, the batch values, the limits of kfmt's DecodeOptions, and the wire
 * helpers (big-endian integers, Kafka's varints, CRCs). One per task; not thread-safe. */
public final class Ctx {
    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle I16 = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.BIG_ENDIAN);

    public final Rows rows;
    public final Batch batch = new Batch();
    public final Codecs codecs;
    /** whether CRCs are checked (the plan's option; a reader judging a damaged tail checks them whatever it says) */
    public boolean verifyCrc;
    public final long maxBytes, maxRecords, maxHeaders;
    public final int maxDepth;
    /** the position after the last varint read */
    public int p;
    private final CRC32C crc32c = new CRC32C();
    private final CRC32 crc32 = new CRC32();

    public Ctx(Rows rows, Limits limits) {
        this.rows = rows;
        this.verifyCrc = limits.verifyCrc;
        this.maxBytes = limits.maxBytes;
        this.maxRecords = limits.maxRecords;
        this.maxHeaders = limits.maxHeaders;
        this.maxDepth = limits.maxDepth;
        this.codecs = new Codecs(limits);
    }

    public static long i64(byte[] b, int p) {
        return (long) I64.get(b, p);
    }

    public static long i32(byte[] b, int p) {
        return (int) I32.get(b, p);
    }

    public static long u32(byte[] b, int p) {
        return ((int) I32.get(b, p)) & 0xFFFFFFFFL;
    }

    public static long i16(byte[] b, int p) {
        return (short) I16.get(b, p);
    }

    public static long u16(byte[] b, int p) {
        return ((short) I16.get(b, p)) & 0xFFFFL;
    }

    public static long i8(byte[] b, int p) {
        return b[p];
    }

    public static long u8(byte[] b, int p) {
        return b[p] & 0xFFL;
    }

    /** An unsigned varint of at most maxBytes bytes at pos (the next position in p), masked to 32 bits when it has
     * at most 5 (kfmt.runtime.varint, and Kafka's readUnsignedVarint, keep an int: a fifth byte's high bits go). */
    public long uvarint(byte[] b, int pos, int end, int maxBytes, String path) throws Bad {
        long v = 0;
        int shift = 0, start = pos;
        for (int i = 0; i < maxBytes; i++) {
            if (pos >= end) throw new Bad(path, start, i == 0 ? "input ends before a varint" : "input ends inside a varint"); // (the python backend's words)
            int x = b[pos++];
            v |= (long) (x & 0x7F) << shift;
            if (x >= 0) {
                p = pos;
                return maxBytes == 5 ? v & 0xFFFFFFFFL : v;
            }
            shift += 7;
        }
        throw new Bad(path, start, (maxBytes == 5 ? "varint" : "varlong") + " is too long: continuation bit set on byte " + maxBytes);
    }

    public static long zigzag32(long u) {
        int x = (int) u;
        return (x >>> 1) ^ -(x & 1);
    }

    public static long zigzag64(long u) {
        return (u >>> 1) ^ -(u & 1);
    }

    public long crc32c(byte[] b, int from, int to) {
        crc32c.reset();
        crc32c.update(b, from, to - from);
        return crc32c.getValue();
    }

    public long crc32(byte[] b, int from, int to) {
        crc32.reset();
        crc32.update(b, from, to - from);
        return crc32.getValue();
    }

    public Bad bad(String path, long at, String why) {
        return new Bad(path, at, why);
    }

    /** A CRC as Python's {@code :#010x} writes it. */
    public static String hex32(long v) {
        return String.format("0x%08x", v);
    }

    /** A length running past the end of its region. */
    public Bad past(String path, int at, long n, int end) {
        return new Bad(path, at, "length " + n + " runs past the end (" + (end - at) + " bytes left)");
    }

}
