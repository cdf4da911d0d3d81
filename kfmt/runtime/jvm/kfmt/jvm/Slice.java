package kfmt.jvm;

import java.io.Serializable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/** kfmt.table.read.SegmentSlice: a segment file's byte range, its offset bounds and the read_committed view of
 * its partition's transactions, as planned by kfmt on the driver. */
public final class Slice implements Serializable {
    public String path, topic;
    public int partition;
    public long start, end;
    public Long first, stop;
    /** read_committed: the log's transactions (null: read_uncommitted) */
    public Txns txns;
    public boolean liveEnd;
    /** a record set on the wire (kfmt.protocol.records): a last batch cut at its end is what a broker sends when a
     * partition's byte limit ends inside it (left out, as Kafka's consumer leaves it), not damage */
    public boolean wire;
    /** the kfmt table the slice is part of, re-checked once its task has read (null: none to check) */
    public TableCheck table;

    /** This slice covering bytes [0, end) instead (an object stored compressed whole, read decompressed). */
    Slice whole(long size) {
        Slice s = new Slice();
        s.path = path;
        s.topic = topic;
        s.partition = partition;
        s.start = 0;
        s.end = size;
        s.first = first;
        s.stop = stop;
        s.txns = txns;
        s.liveEnd = liveEnd;
        s.table = table;
        return s;
    }

    /** A log's transactions: aborted by producer id (last offsets ascending, first offsets; Long.MIN_VALUE:
     * unknown), and still open by producer id (their first offset). */
    public record Txns(Map<Long, long[][]> aborted, Map<Long, Long> open) implements Serializable {}

    /** Whether a read_committed consumer leaves this batch out (kfmt.log.txn.Transactions.is_dropped). */
    boolean dropped(Batch b) {
        if (txns == null || !b.isTransactional || b.isControl) return false;
        Long from = txns.open().get(b.producerId);
        if (from != null && b.baseOffset >= from) return true;
        long[][] r = txns.aborted().get(b.producerId);
        if (r == null) return false;
        int i = Arrays.binarySearch(r[0], b.baseOffset);
        if (i < 0) i = -i - 1;
        else while (i > 0 && r[0][i - 1] == b.baseOffset) i--;
        return i < r[0].length && (r[1][i] == Long.MIN_VALUE || r[1][i] <= b.baseOffset);
    }

    static Map<Long, long[][]> index(long[][] triples) {
        Map<Long, java.util.List<long[]>> by = new HashMap<>();
        for (long[] t : triples) by.computeIfAbsent(t[0], k -> new java.util.ArrayList<>()).add(t);
        Map<Long, long[][]> out = new HashMap<>();
        for (var e : by.entrySet()) {
            var l = e.getValue();
            l.sort((x, y) -> Long.compare(x[2], y[2]));
            long[][] r = new long[2][l.size()];
            for (int i = 0; i < l.size(); i++) {
                r[0][i] = l.get(i)[2];
                r[1][i] = l.get(i)[1];
            }
            out.put(e.getKey(), r);
        }
        return out;
    }
}
