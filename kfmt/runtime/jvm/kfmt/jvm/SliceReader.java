package kfmt.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Reads the entries of slices, as kfmt.logread._read_range does with on_corrupt=fail: each entry by the
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
    private byte[] buf = new byte[0];
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
        slice = s;
        long n = s.end - s.start;
        if (n > Integer.MAX_VALUE - 8) throw new IOException("kafka-log-jvm: slice of " + n + " bytes is too large");
        if (buf.length < n) buf = new byte[(int) n];
        try (FileChannel ch = FileChannel.open(Path.of(s.path), StandardOpenOption.READ)) {
            ByteBuffer bb = ByteBuffer.wrap(buf, 0, (int) n);
            while (bb.hasRemaining()) {
                if (ch.read(bb, s.start + bb.position()) < 0) break;
            }
            len = bb.position();
        }
        if (len < n) throw new IOException("kafka-log-jvm: " + s.path + " is shorter than planned (" + (s.start + len) + " of " + s.end + " bytes): it changed under the reader");
        pos = 0;
        sink.lo = s.first == null ? Long.MIN_VALUE : s.first;
        sink.hi = s.stop == null ? Long.MAX_VALUE : s.stop;
    }

    /** The next rows of the open slice (null: the slice is done). */
    ColumnarBatch next() {
        sink.clear();
        while (pos < len && sink.n < ROWS && sink.bytes() < BYTES) {
            int at = pos;
            int stop = frame(at);
            if (stop < 0) { // a batch being written ends the slice
                pos = len;
                break;
            }
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
                sink.batch(b, (int) (mark >>> 32), slice.start + at);
            }
            pos = stop;
        }
        if (sink.n == 0 && pos >= len) return null;
        return sink.take(slice.topic, slice.partition, slice.path, plan.nullEmptyHeaders);
    }

    /** The end of the entry at {@code at}; -1 for a batch being written at the end of a live slice. */
    private int frame(int at) {
        int left = len - at;
        if (left >= 17) {
            long size = Ctx.i32(buf, at + 8);
            if (size < 14) throw fail(at, "entry.size", "size " + size + " is below the smallest entry (14 bytes)");
            if (size <= left - 12) return at + 12 + (int) size;
        }
        if (slice.liveEnd && at > 0 && onlyACutEntry(at)) {
            org.slf4j.LoggerFactory.getLogger("kfmt").warn("kfmt: {} ends with {} byte(s) of a batch not yet written completely (at byte {}): left out, as Kafka leaves it out of a fetch", slice.path, left, slice.start + at);
            return -1;
        }
        throw fail(at, "entry", "the entry runs past the end of the data (" + left + " bytes left)");
    }

    /** kfmt.arrow._only_a_cut_entry: a log's magic where the header has one, and no valid entry after it. */
    private boolean onlyACutEntry(int at) {
        if (len - at > 16 && (buf[at + 16] < 0 || buf[at + 16] > 2)) return false;
        for (int p = at; p < len - 16; p++) if (validEntryAt(p)) return false;
        return true;
    }

    /** kfmt.resync.valid_entry_at: a complete entry with a matching CRC starts at p. */
    private boolean validEntryAt(int p) {
        long size = Ctx.i32(buf, p + 8);
        long end = p + 12 + size;
        int magic = buf[p + 16];
        if (size < 14 || end > len || magic < 0 || magic > 2 || size < new int[] {14, 22, 49}[magic]) return false;
        if (magic == 2) return cx.crc32c(buf, p + 21, (int) end) == Ctx.u32(buf, p + 17);
        return cx.crc32(buf, p + 16, (int) end) == Ctx.u32(buf, p + 12);
    }

    private RuntimeException fail(int at, String field, String why) {
        return new IllegalStateException("kafka-log (jvm engine): corrupt batch in " + slice.path + " at byte " + (slice.start + at)
                + ": " + field + ": " + why + " (read with engine=\"python\" and option on_corrupt=skip or quarantine to go on)");
    }
}
