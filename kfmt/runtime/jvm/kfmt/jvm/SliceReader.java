package kfmt.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Reads the entries of slices, as kfmt.table.read._read_range does with on_corrupt=fail: each entry by the
 * decoder of its magic (or the forced format), control and aborted batches left out, and an incomplete entry
 * ending a partition's last segment left out as a batch being written. Anything else that does not decode is a
 * one-line error naming the file, the byte and the field. */
public final class SliceReader {
    static final int ROWS = 8192;
    static final long BYTES = 64L << 20;

    private final Plan plan;
    private final Sink sink;
    private final Ctx cx;
    private final kfmt.jvm.Decoder[] byMagic = new kfmt.jvm.Decoder[256];
    private kfmt.jvm.Decoder forced;
    private Slice slice;
    private FileChannel channel;
    /** a window of the slice: file bytes [winStart, winStart + len) in buf; the next entry at buf[pos] */
    private byte[] buf = new byte[0];
    private long winStart;
    private int len, pos;

    SliceReader(Plan plan, org.apache.spark.sql.types.StructType schema) {
        this.plan = plan;
        this.sink = new Sink(schema);
        this.cx = new Ctx(sink, plan.limits);
        for (kfmt.jvm.Decoder d : kfmt.jvm.gen.Formats.all()) {
            if (d.autoDetect()) byMagic[d.magic()] = d;
            if (d.id().equals(plan.format)) forced = d;
        }
        if (plan.format != null && forced == null)
            throw new IllegalArgumentException("kafka-log-jvm: no Java decoder for format " + plan.format);
    }

    void open(Slice s) throws IOException {
        close();
        slice = s;
        channel = FileChannel.open(Path.of(s.path), StandardOpenOption.READ);
        winStart = s.start;
        len = pos = 0;
        sink.lo = s.first == null ? Long.MIN_VALUE : s.first;
        sink.last = s.stop == null ? Long.MAX_VALUE : s.stop - 1; // stop is exclusive and never Long.MIN_VALUE
    }

    void close() throws IOException {
        if (channel != null) channel.close();
        channel = null;
    }

    /** At least {@code need} bytes from pos in the window, or every byte left of the slice. The slice is read in
     * chunks (an entry larger than a chunk whole), so memory stays flat whatever the segment's size. */
    private void fill(long need) throws IOException {
        if (len - pos >= need || winStart + len >= slice.end) return;
        System.arraycopy(buf, pos, buf, 0, len - pos);
        winStart += pos;
        len -= pos;
        pos = 0;
        long want = Math.min(Math.max(need, plan.chunkBytes), slice.end - winStart);
        if (want > Integer.MAX_VALUE - 8) throw new IOException("kafka-log-jvm: an entry of " + want + " bytes");
        if (want > buf.length) buf = java.util.Arrays.copyOf(buf, (int) want);
        ByteBuffer bb = ByteBuffer.wrap(buf, len, (int) want - len);
        while (bb.hasRemaining()) {
            if (channel.read(bb, winStart + bb.position()) < 0) {
                throw new IOException("kafka-log-jvm: " + slice.path + " is shorter than planned (" + (winStart + bb.position())
                        + " of " + slice.end + " bytes): it changed under the reader");
            }
        }
        len = (int) want;
    }

    /** The next rows of the open slice (null: the slice is done). */
    ColumnarBatch next() throws IOException {
        sink.clear();
        while (sink.n < ROWS && sink.bytes() < BYTES) {
            fill(17);
            if (pos >= len) break;
            int at = pos;
            int stop = frame(at);
            if (stop < 0) { // a batch being written ends the slice
                pos = len;
                break;
            }
            at = pos; // (the window may have moved)
            long mark = sink.mark();
            kfmt.jvm.Decoder d = forced != null ? forced : byMagic[buf[at + 16] & 0xFF];
            if (d == null) throw fail(at, "entry", "unknown magic " + buf[at + 16] + " (a format that is not auto-detected needs option format)");
            try {
                int got = d.entry(cx, buf, at, stop);
                if (got != stop) throw new Bad("entry", got, (stop - got) + " bytes after the entry's fields", false);
            } catch (Bad e) {
                throw fail(at, e.path, e.getMessage());
            }
            Batch b = cx.batch;
            if ((b.isControl && !plan.includeControl) || slice.dropped(b)
                    || (slice.first != null && b.lastOffset < slice.first) || (slice.stop != null && b.baseOffset >= slice.stop)) {
                sink.rollback(mark);
            } else {
                sink.batch(b, (int) (mark >>> 32), winStart + at);
            }
            pos = stop;
        }
        if (sink.n == 0) {
            close();
            return null;
        }
        return sink.take(slice.topic, slice.partition, slice.path, plan.nullEmptyHeaders);
    }

    /** kfmt.log.resync.RESYNC_MAX_ENTRY */
    static final long RESYNC_MAX_ENTRY = 64L << 20;

    /** The end (in the window) of the entry at pos, read whole into the window; -1 for a batch being written at
     * the end of a live slice. */
    private int frame(int at) throws IOException {
        long tail = slice.end - (winStart + at); // bytes left of the slice from the entry
        if (len - at >= 17) {
            long size = Ctx.i32(buf, at + 8);
            if (size < 14) throw fail(at, "entry.size", "size " + size + " is below the smallest entry (14 bytes)");
            if (12 + size <= tail) { // all there: read it whole (a size running past the end is never read for)
                fill(12 + size);
                return pos + 12 + (int) size;
            }
        }
        // kfmt.log.arrow.being_written: no longer than any entry a reader looks for after damage (kfmt.log.resync)
        if (slice.liveEnd && winStart + at > slice.start && tail <= 12 + RESYNC_MAX_ENTRY) {
            fill(tail);
            at = pos;
            if (onlyACutEntry(at)) {
                org.slf4j.LoggerFactory.getLogger("kfmt").warn("kfmt: {} ends with {} byte(s) of a batch not yet written completely (at byte {}): left out, as Kafka leaves it out of a fetch", slice.path, tail, winStart + at);
                return -1;
            }
        }
        throw fail(at, "entry", "the entry runs past the end of the data (" + tail + " bytes left)");
    }

    /** kfmt.log.arrow._only_a_cut_entry: a log's magic where the header has one, and no valid entry after it. */
    private boolean onlyACutEntry(int at) {
        if (len - at > 16 && (buf[at + 16] < 0 || buf[at + 16] > 2)) return false;
        for (int p = at; p < len - 16; p++) if (validEntryAt(p)) return false;
        return true;
    }

    /** kfmt.log.resync.valid_entry_at, then decoded as the resynchronising reader decodes it: a complete entry with
     * a matching CRC that decodes starts at p (nothing of it stays in the sink). */
    private boolean validEntryAt(int p) {
        long size = Ctx.i32(buf, p + 8);
        long end = p + 12 + size;
        int magic = buf[p + 16];
        if (size < 14 || end > len || magic < 0 || magic > 2 || size < new int[] {14, 22, 49}[magic]) return false;
        boolean crc = magic == 2 ? cx.crc32c(buf, p + 21, (int) end) == Ctx.u32(buf, p + 17)
                : cx.crc32(buf, p + 16, (int) end) == Ctx.u32(buf, p + 12);
        kfmt.jvm.Decoder d = forced != null ? forced : byMagic[magic];
        if (!crc || d == null) return false;
        long mark = sink.mark();
        try {
            return d.entry(cx, buf, p, (int) end) == end;
        } catch (Bad e) {
            return false;
        } finally {
            sink.rollback(mark);
        }
    }

    private RuntimeException fail(int at, String field, String why) {
        return new Damage("kafka-log: corrupt batch in " + slice.path + " at byte " + (winStart + at)
                + ": " + field + ": " + why + " (option on_corrupt=skip or quarantine to go on)"); // as kfmt.table.slices says it
    }
}
