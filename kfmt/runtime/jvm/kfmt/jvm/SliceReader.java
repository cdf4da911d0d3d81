package kfmt.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Reads the entries of slices as kfmt.log.arrow.rows does (its damage from kfmt.log.scanner, the one definition;
 * this follows it and fuzz/jvm_differential holds it there): each entry by the decoder of its magic (or the forced
 * format), control and aborted batches left out, an incomplete entry ending a partition's last segment left out as
 * a batch being written. What does not decode is, by on_corrupt, a one-line error naming the file, the byte and the
 * field (fail), or a damaged region (skip: left out and logged; quarantine: a row with its position, error and raw
 * bytes) after which reading resynchronises at the next valid entry (kfmt.log.resync.find_entry). */
public final class SliceReader {
    static final int ROWS = 8192;
    static final long BYTES = 64L << 20;
    /** kfmt.log.resync.RESYNC_MAX_ENTRY */
    static final long RESYNC_MAX_ENTRY = 64L << 20;
    /** kfmt.log.arrow.QUARANTINE_RAW_BYTES */
    static final int QUARANTINE_RAW_BYTES = 1 << 20;
    private static final int[] MIN_SIZE = {14, 22, 49};
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("kfmt");

    private final Plan plan;
    private final Sink sink;
    private final Ctx cx;
    private final kfmt.jvm.Decoder[] byMagic = new kfmt.jvm.Decoder[256];
    private final boolean skipping, quarantining;
    private final org.apache.spark.sql.types.StructType schema;
    private kfmt.jvm.Decoder forced;
    private Slice slice;
    private Source source;
    /** the Hadoop configuration a URI's store is read with (null: Hadoop's defaults) */
    private final org.apache.hadoop.conf.Configuration conf;
    /** a window of the slice: file bytes [winStart, winStart + len) in buf; the next entry at buf[pos] */
    private byte[] buf = new byte[0];
    private long winStart;
    private int len, pos;
    private boolean done;
    /** a quarantine row waiting for the rows before it to be handed over */
    private ColumnarBatch pending;

    SliceReader(Plan plan, org.apache.spark.sql.types.StructType schema) {
        this(plan, schema, null);
    }

    SliceReader(Plan plan, org.apache.spark.sql.types.StructType schema, org.apache.hadoop.conf.Configuration conf) {
        this.plan = plan;
        this.conf = conf;
        this.schema = schema;
        this.sink = new Sink(schema, plan.limits);
        this.cx = new Ctx(sink, plan.limits);
        this.skipping = !"fail".equals(plan.onCorrupt);
        this.quarantining = "quarantine".equals(plan.onCorrupt);
        for (kfmt.jvm.Decoder d : kfmt.jvm.gen.Formats.all()) {
            if (d.autoDetect()) byMagic[d.magic()] = d;
            if (d.id().equals(plan.format)) forced = d;
        }
        if (plan.format != null && forced == null)
            throw new IllegalArgumentException("kafka-log: no Java decoder for format " + plan.format);
    }

    /** The damaged regions of the slices read (skipped or quarantined), one line each: where, and what. */
    final java.util.List<String> damaged = new java.util.ArrayList<>();
    /** a record set on the wire: the bytes of its cut last batch (0: none) */
    long partial;

    void open(Slice s) throws IOException {
        open(s, null);
    }

    /** The slice opened; its bytes read from {@code src} when given (bytes in memory), else from its file. */
    void open(Slice s, Source src) throws IOException {
        close();
        partial = 0;
        slice = s;
        len = pos = 0;
        done = false;
        pending = null;
        try {
            source = src != null ? src : Source.open(s.path, conf, plan.readTimeoutMs);
            String packed = plan.decompress && !s.wire ? source.packed() : null;
            if (packed != null && s.start > 0) done = true; // the object's bytes are not entries: its first slice reads it
            else if (packed != null) {
                LOG.info("kafka-log: {} is stored {}-compressed whole: read decompressed", s.path, packed);
                source = source.decompressed(packed);
                slice = s.whole(source.size());
            }
        } catch (IOException e) {
            throw failedRead(0, e);
        }
        winStart = slice.start;
        sink.topic = s.topic;
        sink.lo = s.first == null ? Long.MIN_VALUE : s.first;
        sink.last = s.stop == null ? Long.MAX_VALUE : s.stop - 1; // stop is exclusive and never Long.MIN_VALUE
    }

    void close() throws IOException {
        if (source != null) source.close();
        source = null;
    }

    /** Done with every slice: the open one is closed and the decompressors' native memory freed. */
    void release() throws IOException {
        try {
            close();
        } finally {
            cx.codecs.close();
            sink.release();
        }
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
        if (want > Integer.MAX_VALUE - 8) throw new IOException("kafka-log: an entry of " + want + " bytes in " + slice.path);
        if (want > buf.length) buf = java.util.Arrays.copyOf(buf, (int) want);
        ByteBuffer bb = ByteBuffer.wrap(buf, len, (int) want - len);
        while (bb.hasRemaining()) {
            if (readAt(bb, winStart + bb.position()) < 0) {
                throw new IOException("kafka-log: " + slice.path + " is shorter than planned (" + (winStart + bb.position())
                        + " of " + slice.end + " bytes): it changed under the reader");
            }
        }
        len = (int) want;
    }

    /** The window moved to file position p with {@code need} bytes from it where the slice has them; returns p's
     * index (also pos). Reading moves forward; a damaged region's tail is read again from where it began. */
    private int window(long p, long need) throws IOException {
        if (p < winStart || p - winStart > len) { // outside what is read: start the window there
            winStart = p;
            len = pos = 0;
        } else {
            pos = (int) (p - winStart);
        }
        fill(need);
        return pos;
    }

    /** The next rows of the open slice (null: the slice is done). */
    ColumnarBatch next() throws IOException {
        if (pending != null) return takePending();
        sink.clear();
        while (!done && pending == null && sink.n < ROWS && sink.bytes() < BYTES) {
            fill(17);
            if (pos >= len) break;
            done = !step();
        }
        if (sink.n == 0) {
            if (pending != null) return takePending();
            close();
            return null;
        }
        return sink.take(slice.topic, slice.partition, slice.path, plan.nullEmptyHeaders);
    }

    private ColumnarBatch takePending() {
        ColumnarBatch q = pending;
        pending = null;
        return q;
    }

    /** One entry, or one damaged region, from pos; false when nothing is left of the slice
     * (kfmt.log.scanner._scan's loop). */
    private boolean step() throws IOException {
        long left = slice.end - (winStart + pos);
        if (left >= 17) {
            long size = Ctx.i32(buf, pos + 8);
            if (size < 14) {
                brokenFraming(size);
                return true;
            }
            if (12 + size <= left) { // all there: read it whole (a size running past the end is never read for)
                entry((int) size);
                return true;
            }
        }
        return incomplete(left);
    }

    private void entry(int size) throws IOException {
        fill(12L + size);
        int at = pos, stop = pos + 12 + size;
        kfmt.jvm.Decoder d = forced != null ? forced : byMagic[buf[at + 16] & 0xFF];
        if (d == null) {
            corrupt(at, stop, "log.entry.magic", at + 16, "invalid magic " + (buf[at + 16] & 0xFF) + " found in record");
            return;
        }
        long mark = sink.mark();
        try {
            int got = d.entry(cx, buf, at, stop);
            if (got != stop) throw new Bad("entry", got, (stop - got) + " bytes after the entry's fields");
        } catch (Bad e) {
            sink.rollback(mark);
            corrupt(at, stop, e.path, e.at, e.getMessage());
            return;
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

    // ------------------------------------------------------------------ damage (kfmt.log.scanner._Damage)

    /** A size below the smallest entry: the next valid entry is searched for. */
    private void brokenFraming(long size) throws IOException {
        long a = winStart + pos;
        String why = "log.entry.size at byte " + (a + 8) + ": entry size " + size + " is less than the minimum record overhead (14)";
        if (!skipping) throw fail(a, why);
        cross(a, why, false);
    }

    /** An entry whose framing holds but which does not decode: alone when a valid entry follows it (or nothing
     * does), else its size may be damaged too and the region is crossed. Written whole, it is never a batch being
     * written, whatever its fields say (CodecError.cut_entry). */
    private void corrupt(int at, int stop, String field, long where, String why) throws IOException {
        long a = winStart + at, e = winStart + stop;
        String what = new Bad(field, where == Bad.NOWHERE ? where : winStart + where, why).text(null);
        if (!skipping) throw fail(a, what);
        if (e >= slice.end || checkedEntryAt(e)) {
            region(a, e, what, false);
            window(e, 17);
            return;
        }
        cross(a, what, false);
    }

    /** The entry at pos is not complete in the slice: good entries may follow a size running past the end;
     * else it is the slice's tail. */
    private boolean incomplete(long left) throws IOException {
        long a = winStart + pos;
        if (skipping && left >= 12) {
            String why = tailWhy(a);
            long q = findEntry(a + 1);
            if (q < slice.end) {
                region(a, q, why + "; " + describe(a, q), true);
                window(q, 17);
                return true;
            }
        }
        tail(a);
        return false;
    }

    /** What is left at the end of the slice: a batch being written (kfmt.log.scanner.batch_being_written: a live
     * end, not the slice's first byte, no longer than an entry a resynchronising reader looks for; read without
     * resynchronising, only the start of one entry), or damage. */
    private void tail(long a) throws IOException {
        long unread = slice.end - a;
        if (unread <= 0) return;
        if (slice.wire) { // a record set on the wire: its cut last batch is the partition's byte limit, not damage
            partial = unread;
            return;
        }
        if (slice.liveEnd && a > slice.start && unread <= 12 + RESYNC_MAX_ENTRY && (skipping || onlyACutEntry(a))) {
            LOG.warn("kfmt: {} ends with {} byte(s) of a batch not yet written completely (at byte {}): left out, as Kafka "
                    + "leaves it out of a fetch", slice.path, unread, a);
            return;
        }
        String why = tailWhy(a);
        if (allZero(a, slice.end)) why += "; " + describe(a, slice.end);
        if (!skipping) throw fail(a, why);
        region(a, slice.end, why, false); // (a batch being written was left out above)
    }

    private String tailWhy(long a) throws IOException {
        long unread = slice.end - a;
        int i = window(a, 17);
        String why = len - i < 17 ? "too short for an entry header (17 bytes up to the magic)"
                : "the entry there declares size " + Ctx.i32(buf, i + 8) + ", which runs " + (12 + Ctx.i32(buf, i + 8) - unread) + " bytes past the end";
        return "log.entry at byte " + a + ": " + unread + " byte(s) not read: " + why;
    }

    /** The damaged region from a, crossed: reported up to the next valid entry (or the slice's end); {@code cut}:
     * it began with an entry whose framing runs past the slice's end (CodecError.cut_entry). */
    private void cross(long a, String what, boolean cut) throws IOException {
        long q = findEntry(a + 1);
        region(a, q, what + "; " + describe(a, q), cut);
        window(q, 17);
    }

    private String describe(long a, long q) throws IOException {
        long n = q - a;
        return (allZero(a, q) ? n + " zero byte(s) (a zero-filled region, as a preallocated segment or an unclean shutdown leaves)"
                : n + " byte(s) hold no valid entry") + " up to byte " + q;
    }

    /** A damaged region [a, q): a batch being written (a region that began with an entry whose framing runs past
     * the end and ends the live slice: kfmt.log.scanner.batch_being_written), skipped (logged) or a quarantine row
     * (kfmt.log.arrow._damage). */
    private void region(long a, long q, String what, boolean cut) throws IOException {
        if (cut && q == slice.end && slice.wire) {
            partial = q - a;
            return;
        }
        if (cut && q == slice.end && slice.liveEnd && a > slice.start && q - a <= 12 + RESYNC_MAX_ENTRY) {
            LOG.warn("kfmt: {} ends with {} byte(s) of a batch not yet written completely (at byte {}): left out, as Kafka "
                    + "leaves it out of a fetch", slice.path, q - a, a);
            return;
        }
        damaged.add("at byte " + a + ": " + what);
        if (!quarantining) {
            LOG.warn("kfmt: skipped a damaged region of {} at byte {}: {}", slice.path, a, what);
            return;
        }
        byte[] raw = read(a, (int) Math.min(q - a, QUARANTINE_RAW_BYTES));
        String said = q - a > raw.length ? " (raw: the first " + raw.length + " of " + (q - a) + " bytes)" : "";
        pending = Quarantine.row(schema, slice, a, what + said, raw, plan.nullEmptyHeaders);
    }

    private RuntimeException fail(long a, String what) {
        return Damage.of("kafka-log: corrupt batch in " + slice.path + " at byte " + a + ": " + what
                + " (option on_corrupt=skip or quarantine to go on)"); // as kfmt.table.slices says it
    }

    // ------------------------------------------------------------------ resynchronising (kfmt.log.resync)

    /** kfmt.log.resync.find_entry over the slice: the first position from p where a valid entry of at most
     * RESYNC_MAX_ENTRY bytes starts, or the slice's end. Zero runs are skipped, and only positions whose magic
     * byte is a log's are tried (with a forced format, every position). */
    private long findEntry(long p) throws IOException {
        long end = slice.end;
        while (p < end) {
            long z = zeroRunEnd(p);
            if (z - p > 16) p = z - 16;
            int i = window(p, 17);
            if (len - i < 17) return end;
            if (forced == null) {
                int m = i + 16;
                while (m < len && (buf[m] < 0 || buf[m] > 2)) m++;
                if (m >= len) {
                    if (winStart + len >= end) return end;
                    p = winStart + len - 16;
                    continue;
                }
                p = winStart + m - 16;
                i = m - 16;
            }
            long size = Ctx.i32(buf, i + 8);
            if (size >= 14 && size <= RESYNC_MAX_ENTRY && p + 12 + size <= end && checkedEntryAt(p)) return p;
            p++;
        }
        return end;
    }

    /** kfmt.log.resync.valid_entry_at: a complete entry whose checksum matches starts at file position p (a forced
     * format's entry: one that decodes). Moves the window to p. */
    private boolean checkedEntryAt(long p) throws IOException {
        int i = window(p, 17);
        if (len - i < 17) return false;
        long size = Ctx.i32(buf, i + 8);
        if (size < 14 || p + 12 + size > slice.end) return false;
        i = window(p, 12 + size);
        int end = i + 12 + (int) size;
        return forced != null ? decodes(forced, i, end) : crcMatches(i, end);
    }

    /** The complete entry [i, end) of the window has a log's magic, at least that magic's smallest size, and a
     * matching CRC (CRC-32C after a v2 batch's CRC field, CRC-32 from a v0/v1 message's magic). */
    private boolean crcMatches(int i, int end) {
        int magic = buf[i + 16];
        if (magic < 0 || magic > 2 || end - i - 12 < MIN_SIZE[magic]) return false;
        return magic == 2 ? cx.crc32c(buf, i + 21, end) == Ctx.u32(buf, i + 17) : cx.crc32(buf, i + 16, end) == Ctx.u32(buf, i + 12);
    }

    private boolean decodes(kfmt.jvm.Decoder d, int at, int end) {
        long mark = sink.mark();
        try {
            return d.entry(cx, buf, at, end) == end;
        } catch (Bad e) {
            return false;
        } finally {
            sink.rollback(mark);
        }
    }

    /** End of the run of zero bytes from file position p. */
    private long zeroRunEnd(long p) throws IOException {
        while (true) {
            int i = window(p, 1);
            int j = i;
            while (j < len && buf[j] == 0) j++;
            p += j - i;
            if (j < len || winStart + len >= slice.end) return p;
        }
    }

    /** A read of the slice's file at byte {@code at}; a store's failure is the one-line error naming the file. */
    private int readAt(ByteBuffer bb, long at) throws IOException {
        try {
            return source.read(bb, at);
        } catch (IOException e) {
            throw failedRead(at, e);
        }
    }

    private IOException failedRead(long at, IOException e) {
        String why = String.valueOf(e.getMessage()).replace('\n', ' ');
        return new IOException("kafka-log: reading " + slice.path + " failed at byte " + at + ": "
                + e.getClass().getSimpleName() + ": " + why, e);
    }

    /** Whether the file's bytes [a, q) are all zero (read again by position: the window may have moved on). */
    private boolean allZero(long a, long q) throws IOException {
        ByteBuffer bb = ByteBuffer.allocate((int) Math.min(q - a, 1 << 16));
        for (long p = a; p < q; ) {
            bb.clear().limit((int) Math.min(bb.capacity(), q - p));
            int got = readAt(bb, p);
            if (got <= 0) return false;
            for (int k = 0; k < got; k++) if (bb.get(k) != 0) return false;
            p += got;
        }
        return true;
    }

    private byte[] read(long a, int n) throws IOException {
        ByteBuffer bb = ByteBuffer.allocate(n);
        while (bb.hasRemaining() && readAt(bb, a + bb.position()) > 0) { /* to the end */ }
        return java.util.Arrays.copyOf(bb.array(), bb.position());
    }

    /** kfmt.log.scanner._only_a_cut_entry: a log's magic where the header has one, and no entry that decodes
     * when the tail from a is read resynchronising (a damaged size field hides the batches after it). */
    private boolean onlyACutEntry(long a) throws IOException {
        int at = window(a, slice.end - a);
        if (len - at > 16 && (buf[at + 16] < 0 || buf[at + 16] > 2)) return false;
        for (int p = at; p < len - 16; p++) if (validEntryAt(p)) return false;
        return true;
    }

    /** A complete entry with a matching CRC that decodes starts at index p (a forced format's: one that decodes
     * with its CRCs checked, whatever the read's verify_crc, as kfmt.log.scanner._only_a_cut_entry reads the tail);
     * nothing of it stays in the sink. */
    private boolean validEntryAt(int p) {
        long size = Ctx.i32(buf, p + 8);
        long end = p + 12 + size;
        if (size < 14 || end > len) return false;
        if (forced != null) {
            boolean verify = cx.verifyCrc;
            cx.verifyCrc = true;
            try {
                return decodes(forced, p, (int) end);
            } finally {
                cx.verifyCrc = verify;
            }
        }
        if (!crcMatches(p, (int) end)) return false; // (a log's magic, 0 to 2)
        kfmt.jvm.Decoder d = byMagic[buf[p + 16]];
        return d != null && decodes(d, p, (int) end);
    }
}
