package kfmt.jvm;

import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/** A topic-partition's rows (in offset order) as batches: kfmt.spark.writer.encode_rows' rules, followed here for
 * the JVM's writer and held to them by the differential test. Rows of one input batch stay one batch (with
 * keep_batches and a batch_base_offset), else up to batch_records consecutive rows make one; a v2 batch keeps the
 * batch values its first row carries; an older magic refuses what it cannot carry, with the Python writer's words. */
final class Batches {
    private Batches() {}

    static void encode(Enc x, Encoder e, List<LogWriter.Row> rows, int magic, int codec, int batchRecords, boolean keep) {
        Recs r = new Recs();
        for (LogWriter.Row w : rows) r.add(w.offset, w.ts, w.key, w.value, w.hk, w.hv);
        int start = 0;
        for (int i = 1; i <= rows.size(); i++) {
            if (i < rows.size() && joins(rows.get(start), rows.get(i), i - start, keep, batchRecords)) continue;
            one(x, e, r, rows, start, i, magic, codec);
            start = i;
        }
    }

    private static boolean joins(LogWriter.Row first, LogWriter.Row w, int size, boolean keep, int batchRecords) {
        if (keep && w.batch != null) return Objects.equals(first.batch, w.batch);
        return size < batchRecords;
    }

    private static void one(Enc x, Encoder e, Recs r, List<LogWriter.Row> rows, int from, int to, int magic, int codec) {
        LogWriter.Row first = rows.get(from);
        Fields f = new Fields().put("base_offset", first.offset);
        if (magic >= 2) {
            v2(first, f);
        } else {
            refuse(rows, from, to, magic);
            if (magic == 1 && Objects.equals(first.timestampType, 1)) f.put("timestamp_type", 1);
        }
        f.put("codec", f.get("is_control", 0) != 0 ? 0 : codec);
        e.encode(x, r, from, to, f);
    }

    /** The batch values of a v2 batch that its first row carries (kfmt.spark.writer._v2_fields). */
    private static void v2(LogWriter.Row w, Fields f) {
        if (w.producerId != null) f.put("producer_id", w.producerId);
        if (w.producerEpoch != null) f.put("producer_epoch", w.producerEpoch);
        if (w.baseSequence != null) f.put("base_sequence", w.baseSequence);
        if (w.transactional != null) f.put("is_transactional", w.transactional ? 1 : 0);
        if (w.control != null) f.put("is_control", w.control ? 1 : 0);
        if (w.leaderEpoch != null) f.put("partition_leader_epoch", w.leaderEpoch);
        if (w.timestampType != null && (w.timestampType == 0 || w.timestampType == 1)) f.put("timestamp_type", w.timestampType);
        if (w.deleteHorizon != null) f.put("has_delete_horizon", 1).put("base_timestamp", w.deleteHorizon);
    }

    /** What a row carries that magic 0 and 1 cannot (kfmt.spark.writer._NOT_BELOW_V2): what, and whether it is there. */
    private record Uncarried(String what, Predicate<LogWriter.Row> there) {}

    private static final List<Uncarried> NOT_BELOW_V2 = List.of(
            new Uncarried("headers", w -> w.hk != null && w.hk.length > 0),
            new Uncarried("control records", w -> Boolean.TRUE.equals(w.control)),
            new Uncarried("transactional records", w -> Boolean.TRUE.equals(w.transactional)),
            new Uncarried("producer state", w -> w.producerId != null && w.producerId != -1),
            new Uncarried("partition leader epochs", w -> w.leaderEpoch != null && w.leaderEpoch != -1),
            new Uncarried("delete horizons", w -> w.deleteHorizon != null));

    /** What magic 0 and 1 cannot carry, refused with the count of rows. */
    private static void refuse(List<LogWriter.Row> rows, int from, int to, int magic) {
        for (Uncarried u : NOT_BELOW_V2) {
            long n = rows.subList(from, to).stream().filter(u.there()).count();
            if (n > 0) {
                throw new IllegalArgumentException("kafka-log writer: magic " + magic + " cannot carry " + u.what() + " (" + n
                        + " row(s) from offset " + rows.get(from).offset + "); drop or filter them, or write magic 2");
            }
        }
    }
}
