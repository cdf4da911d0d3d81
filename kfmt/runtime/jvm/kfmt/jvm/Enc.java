package kfmt.jvm;

import com.github.luben.zstd.ZstdOutputStreamNoFinalizer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Deflater;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.xxhash.XXHashFactory;
import org.xerial.snappy.Snappy;

/** What the generated encoders share while writing: the output ({@link #out}), scratch buffers for what is written
 * before its length or compressed, the CRCs, and Kafka's compression framings written as
 * kfmt.runtime.compression writes them (gzip level 6 with zlib's header, xerial snappy in 32 KiB blocks, Kafka's LZ4
 * frame with its broken header checksum for magic 0, zstd level 3 as zstd-jni's stream writes it, Kafka's producer
 * included). One per task. */
public final class Enc {
    private static final byte[] XERIAL = {(byte) 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
    private static final byte[] GZIP_HEADER = {0x1f, (byte) 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    private static final LZ4Compressor LZ4 = LZ4Factory.fastestInstance().fastCompressor();

    public final Out out = new Out(1 << 16);
    private final ArrayDeque<Out> spare = new ArrayDeque<>();
    private final CRC32 crc32 = new CRC32();
    private final CRC32C crc32c = new CRC32C();
    private final Deflater deflater = new Deflater(6, true);
    private byte[] tmp = new byte[1 << 16];

    /** An empty scratch buffer; give it back with {@link #release}. */
    public Out scratch() {
        Out o = spare.poll();
        if (o == null) return new Out(1 << 12);
        o.clear();
        return o;
    }

    public void release(Out o) {
        spare.push(o);
    }

    public long crc32(byte[] b, int from, int to) {
        crc32.reset();
        crc32.update(b, from, to - from);
        return crc32.getValue();
    }

    public long crc32c(byte[] b, int from, int to) {
        crc32c.reset();
        crc32c.update(b, from, to - from);
        return crc32c.getValue();
    }

    /** {@code src}'s bytes compressed with codec {@code codec} (1 gzip, 2 snappy, 3 lz4, 4 zstd) in Kafka's framing for
     * {@code magic}, appended to {@code o}. */
    public void compress(int codec, int magic, Out src, Out o) {
        try {
            switch (codec) {
                case 1 -> gzip(src, o);
                case 2 -> snappy(src, o);
                case 3 -> lz4(src, o, magic == 0);
                case 4 -> {
                    if (magic < 2) throw new IllegalArgumentException("kafka-log writer: zstd is not allowed with magic " + magic);
                    zstd(src, o);
                }
                default -> throw new IllegalArgumentException("kafka-log writer: unknown compression codec " + codec);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code src} compressed as a new array (a legacy wrapper's value). */
    public byte[] compressed(int codec, int magic, Out src) {
        Out o = scratch();
        compress(codec, magic, src, o);
        byte[] v = java.util.Arrays.copyOf(o.b, o.n);
        release(o);
        return v;
    }

    private void gzip(Out src, Out o) {
        o.bytes(GZIP_HEADER);
        deflater.reset();
        deflater.setInput(src.b, 0, src.n);
        deflater.finish();
        while (!deflater.finished()) {
            int k = deflater.deflate(tmp);
            o.bytes(tmp, 0, k);
        }
        long crc = crc32(src.b, 0, src.n);
        le32(o, crc);
        le32(o, src.n & 0xFFFFFFFFL);
    }

    private static void le32(Out o, long v) {
        o.i32(Integer.reverseBytes((int) v));
    }

    private void snappy(Out src, Out o) throws IOException {
        o.bytes(XERIAL);
        for (int i = 0; i < src.n; i += 32 * 1024) {
            int len = Math.min(32 * 1024, src.n - i);
            int room = Snappy.maxCompressedLength(len);
            if (tmp.length < room) tmp = new byte[room];
            int k = Snappy.compress(src.b, i, len, tmp, 0);
            o.i32(k);
            o.bytes(tmp, 0, k);
        }
    }

    /** Kafka's LZ4 frame header (FLG 0x60, BD 0x40) and its checksum byte: over the descriptor, or (KAFKA-1493, magic
     * 0) over the magic number too. */
    private static final byte[] LZ4_FRAME = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40};
    private static final int LZ4_HC = headerChecksum(4), LZ4_HC_BROKEN = headerChecksum(0);

    private static int headerChecksum(int from) {
        return (XXHashFactory.fastestInstance().hash32().hash(LZ4_FRAME, from, LZ4_FRAME.length - from, 0) >>> 8) & 0xFF;
    }

    private void lz4(Out src, Out o, boolean brokenChecksum) {
        o.bytes(LZ4_FRAME);
        o.i8(brokenChecksum ? LZ4_HC_BROKEN : LZ4_HC);
        for (int i = 0; i < src.n; i += 64 * 1024) {
            int len = Math.min(64 * 1024, src.n - i);
            int room = LZ4.maxCompressedLength(len);
            if (tmp.length < room) tmp = new byte[room];
            int k = LZ4.compress(src.b, i, len, tmp, 0, room);
            if (k >= len) {
                le32(o, len | 0x80000000L);
                o.bytes(src.b, i, len);
            } else {
                le32(o, k);
                o.bytes(tmp, 0, k);
            }
        }
        o.i32(0);
    }

    private static void zstd(Out src, Out o) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(Math.max(64, src.n / 2));
        try (ZstdOutputStreamNoFinalizer z = new ZstdOutputStreamNoFinalizer(bytes, 3)) {
            z.write(src.b, 0, src.n);
        }
        o.bytes(bytes.toByteArray());
    }

    /** The deflater's native memory (the task's end). */
    public void close() {
        deflater.end();
    }
}
