package kfmt.jvm;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;
import java.io.IOException;
import java.util.Arrays;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;
import net.jpountz.xxhash.XXHash32;
import net.jpountz.xxhash.XXHashFactory;
import org.xerial.snappy.Snappy;

/** Kafka's compression framings, read as kfmt.runtime.compression reads them, with the libraries Spark ships
 * (java.util.zip, snappy-java, lz4-java, zstd-jni). The output goes into one buffer reused from payload to
 * payload: {@link #out}, {@link #size} bytes. Every failure is a {@link Bad} naming the codec. The inflater and the
 * zstd context are made once and reused from payload to payload (setting one up costs more than a small batch's
 * decompression); {@link #close} frees them. */
public final class Codecs implements AutoCloseable {
    private static final byte[] XERIAL = {(byte) 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
    private static final LZ4SafeDecompressor LZ4 = LZ4Factory.fastestInstance().safeDecompressor();
    private static final XXHash32 XXH = XXHashFactory.fastestInstance().hash32();
    private static final String[] NAMES = {"none", "gzip", "snappy", "lz4", "zstd"};
    private static final String Z = "corrupt gzip stream: Error -3 while decompressing data: "; // zlib's Z_DATA_ERROR

    private final Limits limits;
    public byte[] out = new byte[1 << 16];
    public int size;
    private Inflater inflater;
    private final CRC32 crc = new CRC32();
    private ZstdDecompressCtx zstd;

    Codecs(Limits limits) {
        this.limits = limits;
    }

    /** The id of the codec named {@code name} (-1: none such). */
    public static int id(String name) {
        return Arrays.asList(NAMES).indexOf(name);
    }

    public static String name(int codec) {
        return codec >= 0 && codec < NAMES.length ? NAMES[codec] : "codec " + codec;
    }

    /** Decompress b[pos, pos + n) into {@link #out}. */
    public void decompress(int codec, int magic, byte[] b, int pos, int n, String path) throws Bad {
        size = 0;
        if (codec == 4 && magic < 2) throw new Bad(path, pos, "zstd is not allowed with magic " + magic);
        if (n == 0) return; // an empty payload holds no records, whatever the codec
        long limit = limits.allowance(n);
        try {
            switch (codec) {
                case 1 -> gzip(b, pos, n, path);
                case 2 -> snappy(b, pos, n, limit, path);
                case 3 -> lz4(b, pos, n, magic != 0, path);
                case 4 -> zstd(b, pos, n, limit, path);
                default -> throw new Bad(path, pos, "unknown compression codec " + codec);
            }
        } catch (Bad e) {
            throw e.at == pos ? e : new Bad(e.path, pos, e.getMessage()); // located at the payload, as Python's
        } catch (DataFormatException e) {
            throw new Bad(path, pos, Z + e.getMessage());
        } catch (RuntimeException e) {
            throw new Bad(path, pos, "corrupt " + name(codec) + " stream: " + e.getMessage());
        }
    }

    private void room(long need) {
        if (need > out.length) out = Arrays.copyOf(out, (int) Math.min(Integer.MAX_VALUE - 8, Math.max(need, 2L * out.length)));
    }

    private Bad tooBig(long limit, String path, int at) {
        return new Bad(path, at, "decompressed size exceeds the limit of " + limit + " bytes (max_decompressed / max_ratio)");
    }

    /** Every zstd frame of b[pos, pos + n), decompressed at once into {@link #out}: a frame states its size (the
     * buffer is made that large) or, written by a stream as Kafka's producer writes it, does not (the buffer grows
     * until it holds the output, never past the limit; a stated size is trusted only as far as 16 times the
     * input, so a damaged one cannot make a large buffer). A frame cut short, bytes after the last frame that are not
     * one and a wrong checksum are errors, as in zstd's streaming reader. */
    private void zstd(byte[] b, int pos, int n, long limit, String path) throws Bad {
        zstdFramesEnd(b, pos, n, path);
        zstdWindows(b, pos, n, path);
        if (zstd == null) zstd = new ZstdDecompressCtx();
        long stated = Zstd.getFrameContentSize(b, pos, n); // trusted up to 16 times the input: memory follows output
        if (stated > limit) {
            zstdStreamed(b, pos, n, limit, path);
            throw tooBig(limit, path, pos);
        }
        room(Math.min(limit, Math.max(stated <= 16L * n ? stated : 0, 4L * n)));
        while (true) {
            int cap = (int) Math.min(limit, out.length);
            try {
                size = zstd.decompressByteArray(out, 0, cap, b, pos, n);
                return;
            } catch (ZstdException e) {
                zstd.reset();
                if (e.getErrorCode() != Zstd.errDstSizeTooSmall()) throw new Bad(path, pos, "corrupt zstd stream: zstd decompress error: " + e.getMessage());
                if (cap >= limit) {
                    zstdStreamed(b, pos, n, limit, path); // a damaged frame may say so before the limit
                    throw tooBig(limit, path, pos);
                }
                room(Math.min(limit, 2L * out.length));
            }
        }
    }

    /** The verdict of zstd's streaming reader (kfmt.runtime.compression's, Kafka's) on a stream the one-shot call
     * could not fit in the limit: damage it finds before giving that much is the error, as that reader says it. */
    private static void zstdStreamed(byte[] b, int pos, int n, long limit, String path) throws Bad {
        byte[] sink = new byte[1 << 16];
        long got = 0;
        try (var in = new com.github.luben.zstd.ZstdInputStreamNoFinalizer(new java.io.ByteArrayInputStream(b, pos, n))) {
            in.setContinuous(false);
            for (int k; got <= limit && (k = in.read(sink)) >= 0; ) got += k;
        } catch (IOException e) {
            throw new Bad(path, pos, "corrupt zstd stream: zstd decompress error: " + e.getMessage());
        }
    }

    /** zstd's streaming reader (Kafka's, and kfmt.runtime.compression's) refuses a frame whose window is over
     * 2^27 + 1 bytes (ZSTD_d_windowLogMax's default); the one-shot call does not look, so the frames' headers are
     * walked first, each frame stepped over by its block headers. What is not a frame is left to the library. */
    private static void zstdWindows(byte[] b, int pos, int n, String path) throws Bad {
        int end = pos + n;
        long p = pos;
        while (end - p >= 6) {
            int at = (int) p, magic = Integer.reverseBytes((int) Ctx.i32(b, at));
            if ((magic & 0xFFFFFFF0) == 0x184D2A50) { // a skippable frame: its size, then its bytes
                if (end - p < 8) return;
                p += 8 + (Integer.reverseBytes((int) Ctx.i32(b, at + 4)) & 0xFFFFFFFFL);
                continue;
            }
            if (magic != 0xFD2FB528) { // what zstd's streaming reader says of bytes that are no frame
                throw new Bad(path, pos, "corrupt zstd stream: zstd decompress error: Unknown frame descriptor");
            }
            int fhd = b[at + 4] & 0xFF, q = at + 5;
            if ((fhd & 0x08) != 0) throw new Bad(path, pos, "corrupt zstd stream: zstd decompress error: Unsupported frame parameter");
            boolean single = (fhd & 0x20) != 0;
            long window = 0;
            if (!single) {
                int wd = b[q++] & 0xFF;
                long base = 1L << (10 + (wd >>> 3));
                window = base + (base >> 3) * (wd & 7);
            }
            q += (fhd & 3) == 3 ? 4 : fhd & 3; // dictionary id: 0, 1, 2 or 4 bytes
            int fcs = (fhd >>> 6) == 0 ? (single ? 1 : 0) : 1 << (fhd >>> 6);
            if (q + fcs > end) return;
            if (single) window = frameContentSize(b, q, fcs);
            if (window < 0 || window > (1L << 27) + 1) throw new Bad(path, pos, "corrupt zstd stream: zstd decompress error: Frame requires too much memory for decoding");
            long stop = blocksEnd(b, headerEnd(b, at), end);
            if (stop < 0) return;
            p = stop + ((fhd & 0x04) != 0 ? 4 : 0);
        }
    }

    /** A zstd stream whose last frame is cut short is refused, as kfmt.runtime.compression._zstd_frames_end refuses it
     * (its walk and its words): the library would give back what such a frame decodes to without a word. */
    private static void zstdFramesEnd(byte[] b, int pos, int n, String path) throws Bad {
        long p = pos, end = pos + (long) n;
        while (p < end) {
            if (end - p < 8) throw new Bad(path, pos, "zstd stream ends inside a frame header (" + (end - p) + " bytes left)");
            int at = (int) p, magic = Integer.reverseBytes((int) Ctx.i32(b, at));
            if ((magic & 0xFFFFFFF0) == 0x184D2A50) {
                p += 8 + (Integer.reverseBytes((int) Ctx.i32(b, at + 4)) & 0xFFFFFFFFL);
                if (p > end) throw new Bad(path, pos, "zstd stream ends inside a skippable frame");
                continue;
            }
            if (magic != 0xFD2FB528) return;
            p = blocksEnd(b, headerEnd(b, at), (int) end);
            if (p == RESERVED) return; // a reserved block type: the library reports it
            if (p == NO_LAST_BLOCK) throw new Bad(path, pos, "zstd frame ends early: no last block");
            if (p == PAST_END) throw new Bad(path, pos, "zstd frame ends early: inside a block");
            p += (b[at + 4] & 0x04) != 0 ? 4 : 0;
            if (p > end) throw new Bad(path, pos, "zstd frame ends early: its checksum is missing");
        }
    }

    /** A frame header's content size field of {@code len} bytes at q (little-endian; 2 bytes count from 256). */
    private static long frameContentSize(byte[] b, int q, int len) {
        long v = 0;
        for (int i = len - 1; i >= 0; i--) v = v << 8 | (b[q + i] & 0xFF);
        return len == 2 ? v + 256 : v;
    }

    private static final long RESERVED = -1, NO_LAST_BLOCK = -2, PAST_END = -3;

    /** Where the block headers of the zstd frame whose header starts at {@code at} begin: past its magic, descriptor,
     * window descriptor, dictionary id and content size (as they are laid out; not checked against the end). */
    private static int headerEnd(byte[] b, int at) {
        int fhd = b[at + 4] & 0xFF, single = (fhd >> 5) & 1, fcs = fhd >> 6;
        return at + 5 + (1 - single) + new int[] {0, 1, 2, 4}[fhd & 3] + (fcs == 0 ? single : new int[] {0, 2, 4, 8}[fcs]);
    }

    /** The end of the blocks of a zstd frame whose first block header is at q (kfmt.runtime.compression._zstd_blocks_end,
     * in its order), or where they cannot be walked: {@link #RESERVED} (a reserved block type), {@link #NO_LAST_BLOCK}
     * (the data ends before a block header), {@link #PAST_END} (a block runs past the end). */
    private static long blocksEnd(byte[] b, long q, int end) {
        while (true) {
            if (q + 3 > end) return NO_LAST_BLOCK;
            int at = (int) q, h = (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8 | (b[at + 2] & 0xFF) << 16;
            int kind = (h >>> 1) & 3;
            q += 3 + (kind == 1 ? 1 : h >>> 3);
            if (kind == 3) return RESERVED;
            if (q > end) return PAST_END;
            if ((h & 1) != 0) return q;
        }
    }

    @Override
    public void close() {
        if (inflater != null) inflater.end();
        if (zstd != null) zstd.close();
        inflater = null;
        zstd = null;
    }

    /** Every gzip member, its header checked as zlib checks it (RFC 1952: reserved flag bits are an error) and its
     * trailer's CRC-32 and size; bytes after the last member that do not start another are ignored, as Java's
     * GZIPInputStream and kfmt.runtime.compression ignore them. The allowance grows with the input consumed. */
    private void gzip(byte[] b, int pos, int n, String path) throws Bad, DataFormatException {
        int end = pos + n, p = pos;
        if (inflater == null) inflater = new Inflater(true);
        Inflater inf = inflater;
        {
            do {
                p = gzipHeader(b, p, end, path);
                inf.reset();
                inf.setInput(b, p, end - p);
                int from = size;
                while (!inf.finished()) {
                    room(size + (1 << 16));
                    int got = inf.inflate(out, size, out.length - size);
                    size += got;
                    long limit = limits.allowance((p - pos) + inf.getBytesRead());
                    if (size > limit) throw tooBig(limit, path, pos);
                    if (got == 0 && (inf.needsInput() || inf.needsDictionary())) throw new Bad(path, pos, "gzip stream ends early");
                }
                p += (int) inf.getBytesRead();
                if (end - p < 4) throw new Bad(path, pos, "gzip stream ends early");
                crc.reset();
                crc.update(out, from, size - from); // (zlib judges the CRC as soon as it has it, the length after)
                if ((int) crc.getValue() != Integer.reverseBytes((int) Ctx.i32(b, p))) throw new Bad(path, pos, Z + "incorrect data check");
                if (end - p < 8) throw new Bad(path, pos, "gzip stream ends early");
                if ((size - from) != Integer.reverseBytes((int) Ctx.i32(b, p + 4))) throw new Bad(path, pos, Z + "incorrect length check");
                p += 8;
            } while (end - p >= 2 && (b[p] & 0xFF) == 0x1f && (b[p + 1] & 0xFF) == 0x8b);
        }
    }

    /** The position after a gzip member's header at p. */
    private static int gzipHeader(byte[] b, int p, int end, String path) throws Bad {
        // (zlib's words, as Python's zlib reports them: a header byte is judged when it arrives)
        if ((end - p >= 1 && (b[p] & 0xFF) != 0x1f) || (end - p >= 2 && (b[p + 1] & 0xFF) != 0x8b)) throw new Bad(path, p, Z + "incorrect header check");
        if (end - p >= 3 && b[p + 2] != 8) throw new Bad(path, p, Z + "unknown compression method");
        if (end - p >= 4 && (b[p + 3] & 0xE0) != 0) throw new Bad(path, p, Z + "unknown header flags set");
        if (end - p < 10) throw new Bad(path, p, "gzip stream ends early");
        int flg = b[p + 3] & 0xFF;
        int q = p + 10;
        if ((flg & 0x04) != 0) { // FEXTRA
            if (end - q < 2) throw new Bad(path, p, "gzip stream ends early");
            q += 2 + ((b[q] & 0xFF) | (b[q + 1] & 0xFF) << 8);
        }
        for (int bit : new int[] {0x08, 0x10}) { // FNAME, FCOMMENT: zero-terminated
            if ((flg & bit) == 0) continue;
            while (q < end && b[q] != 0) q++;
            q++;
        }
        if (q > end || ((flg & 0x02) != 0 && q + 2 > end)) throw new Bad(path, p, "gzip stream ends early");
        if ((flg & 0x02) != 0) { // FHCRC: the low 16 bits of the header's CRC-32
            CRC32 h = new CRC32();
            h.update(b, p, q - p);
            if ((h.getValue() & 0xFFFF) != ((b[q] & 0xFF) | (b[q + 1] & 0xFF) << 8)) throw new Bad(path, p, Z + "header crc mismatch");
            q += 2;
        }
        return q;
    }

    private static int rawLength(byte[] b, int pos, int end, String path) throws Bad {
        int result = 0, shift = 0;
        for (int i = 0; i < 5 && pos + i < end; i++) {
            int x = b[pos + i];
            result |= (x & 0x7F) << shift;
            if (x >= 0) return result;
            shift += 7;
        }
        throw new Bad(path, pos, "corrupt snappy block: bad length preamble");
    }

    /** A xerial snappy stream as kfmt.runtime.compression reads it, in its order: the blocks walked first (the
     * stream's framing), then their stated sizes summed against the limit (nothing is inflated past it), then
     * inflated; a payload without the xerial magic is one raw block. */
    private void snappy(byte[] b, int pos, int n, long limit, String path) throws Bad {
        int end = pos + n;
        if (n < 16 || !Arrays.equals(b, pos, pos + 8, XERIAL, 0, 8)) {
            block(b, pos, n, limit, path);
            return;
        }
        java.util.List<int[]> blocks = new java.util.ArrayList<>();
        for (int p = pos + 16; p < end; ) {
            if (p + 4 > end) throw new Bad(path, p, "xerial snappy stream ends inside a block length");
            if (p + 8 <= end && Arrays.equals(b, p, p + 8, XERIAL, 0, 8)) {
                p += 16;
                continue;
            }
            int len = (int) Ctx.i32(b, p);
            p += 4;
            if (len < 0 || p + len > end) throw new Bad(path, p, "xerial snappy block length " + len + " is out of range");
            blocks.add(new int[] {p, len});
            p += len;
        }
        long total = 0;
        for (int[] k : blocks) {
            total += rawLength(b, k[0], end, path);
            if (total > limit) throw tooBig(limit, path, k[0]);
        }
        for (int[] k : blocks) block(b, k[0], k[1], limit, path);
    }

    private void block(byte[] b, int pos, int n, long limit, String path) throws Bad {
        int len = rawLength(b, pos, pos + n, path);
        if (size + (long) len > limit) throw tooBig(limit, path, pos);
        room(size + (long) len);
        try {
            size += Snappy.uncompress(b, pos, n, out, size);
        } catch (IOException e) { // (the libraries' own words differ: kfmt's, in both engines)
            throw new Bad(path, pos, "corrupt snappy stream: a block does not decompress");
        }
    }

    private void lz4(byte[] b, int pos, int n, boolean verifyHc, String path) throws Bad {
        int end = pos + n;
        if (n < 7 || Ctx.i32(b, pos) != 0x04224D18) throw new Bad(path, pos, "LZ4 frame: invalid magic bytes");
        int flg = b[pos + 4] & 0xFF, bd = b[pos + 5] & 0xFF;
        if (flg >> 6 != 1) throw new Bad(path, pos, "LZ4 frame: unsupported version " + (flg >> 6));
        if ((flg & 0x20) == 0) throw new Bad(path, pos, "LZ4 frame: dependent block stream is unsupported");
        if ((flg & 0x03) != 0) throw new Bad(path, pos, "LZ4 frame: reserved FLG bits / DictID are unsupported");
        boolean checksums = (flg & 0x10) != 0;
        if ((bd & 0x8F) != 0) throw new Bad(path, pos, "LZ4 frame: reserved BD bits set");
        int code = (bd >> 4) & 7;
        if (code < 4) throw new Bad(path, pos, "LZ4 frame: invalid block size code " + code);
        int maxBlock = 1 << (8 + 2 * code);
        int p = pos + 6 + ((flg & 0x08) != 0 ? 8 : 0);
        if (p >= end) throw new Bad(path, pos, "LZ4 frame: header ends early");
        if (verifyHc) {
            int hc = (XXH.hash(b, pos + 4, p - pos - 4, 0) >> 8) & 0xFF;
            if ((b[p] & 0xFF) != hc) throw new Bad(path, p, String.format("LZ4 frame: header checksum %#04x != %#04x", b[p] & 0xFF, hc));
        }
        p++;
        while (true) {
            if (p + 4 > end) throw new Bad(path, p, "LZ4 frame: missing end mark");
            int word = Integer.reverseBytes((int) Ctx.i32(b, p));
            p += 4;
            if (word == 0) return;
            boolean raw = word < 0;
            int len = word & 0x7FFFFFFF;
            if (len > maxBlock || p + len > end) throw new Bad(path, p, "LZ4 frame: block of " + len + " bytes is out of range");
            int at = p;
            p += len;
            if (checksums) {
                if (p + 4 > end) throw new Bad(path, p, "LZ4 frame: missing block checksum");
                if (XXH.hash(b, at, len, 0) != Integer.reverseBytes((int) Ctx.i32(b, p))) throw new Bad(path, p, "LZ4 frame: block checksum mismatch");
                p += 4;
            }
            long limit = limits.allowance(p - pos);
            long roomLeft = Math.min(maxBlock, limit - size);
            if (raw) {
                if (len > roomLeft) throw tooBig(limit, path, at);
                room(size + (long) len);
                System.arraycopy(b, at, out, size, len);
                size += len;
            } else {
                room(size + Math.max(roomLeft, 1));
                try {
                    size += LZ4.decompress(b, at, len, out, size, (int) Math.max(roomLeft, 1));
                } catch (LZ4Exception e) {
                    if (roomLeft < maxBlock) throw tooBig(limit, path, at);
                    throw new Bad(path, at, "corrupt lz4 stream: a block does not decompress"); // (kfmt's words, both engines)
                }
            }
            if (size > limit) throw tooBig(limit, path, at);
        }
    }
}
