package kfmt.jvm;

import java.util.Arrays;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** The rows of one Spark batch, column by column, only for the columns the query reads. Records within the
 * slice's offset bounds are kept; a batch can be taken out again (rollback to a mark) when it is filtered. */
final class Sink implements Rows {
    private final StructType schema;
    private final boolean want_key, want_value, want_headers, want_ts, want_offset;
    /** the batch-level columns the query reads: only those are filled, batch by batch */
    private final boolean wMagic, wCodec, wBase, wPid, wEpoch, wSequence, wTxn, wControl, wLeaderEpoch, wTsType, wHorizon,
            wPosition;
    /** the slice's offset bounds, both inclusive (an exclusive bound could not keep offset 2^63-1) */
    long lo = Long.MIN_VALUE, last = Long.MAX_VALUE;
    int n;
    private int cap = 1024;
    long[] offset = new long[cap], ts = new long[cap];
    byte[] tsNull = new byte[cap];
    final Blobs key = new Blobs(cap), value = new Blobs(cap), hkey = new Blobs(64), hvalue = new Blobs(64);
    int[] hoff = new int[cap + 1];
    private int recordHeaders; // headers count when the current record began
    // batch-level values, per row
    int[] magic = new int[cap], epoch = new int[cap], sequence = new int[cap], leaderEpoch = new int[cap], tsType = new int[cap];
    long[] base = new long[cap], pid = new long[cap], horizon = new long[cap], position = new long[cap];
    byte[] horizonNull = new byte[cap], codec = new byte[cap];
    boolean[] txn = new boolean[cap], control = new boolean[cap];

    /** decode_payloads: the records of Kafka's own topics decoded (key_decoded, value_decoded, payload_error) */
    private final Internal internal;
    final Blobs keyDecoded = new Blobs(cap), valueDecoded = new Blobs(cap), payloadError = new Blobs(cap);
    /** the topic of the slice being read (what decode_payloads decodes by) */
    String topic;

    Sink(StructType schema, Limits limits) {
        this.schema = schema;
        java.util.Set<String> names = new java.util.HashSet<>(Arrays.asList(schema.fieldNames()));
        boolean decoded = names.contains("key_decoded") || names.contains("value_decoded") || names.contains("payload_error");
        internal = decoded ? new Internal(limits) : null;
        wMagic = names.contains("magic");
        wCodec = names.contains("codec");
        wBase = names.contains("batch_base_offset");
        wPid = names.contains("producer_id");
        wEpoch = names.contains("producer_epoch");
        wSequence = names.contains("base_sequence");
        wTxn = names.contains("is_transactional");
        wControl = names.contains("is_control");
        wLeaderEpoch = names.contains("partition_leader_epoch");
        wTsType = names.contains("timestampType");
        wHorizon = names.contains("delete_horizon");
        wPosition = names.contains("position");
        want_key = names.contains("key") || decoded; // (decoding reads them)
        want_value = names.contains("value") || decoded;
        want_headers = names.contains("headers");
        want_ts = names.contains("timestamp") || names.contains("timestamp_ms");
        want_offset = true; // the offset bounds read it
    }

    /** The arrays of a task's sink, kept for the next task on the same executor thread (its sink grows them no
     * more: a task's values and decoded payloads can be tens of megabytes a batch). */
    private static final ThreadLocal<java.util.ArrayDeque<byte[]>> SPARE = ThreadLocal.withInitial(java.util.ArrayDeque::new);
    private static final long SPARE_BYTES = 96L << 20;

    /** The sink's arrays handed back for the next task of this thread (the batches taken are no longer read). */
    void release() {
        java.util.ArrayDeque<byte[]> spare = SPARE.get();
        long kept = 0;
        for (byte[] x : spare) kept += x.length;
        for (Blobs b : new Blobs[] {key, value, hkey, hvalue, keyDecoded, valueDecoded, payloadError}) {
            if (b.data.length > (1 << 16) && kept + b.data.length <= SPARE_BYTES) { // (bounded: memory stays flat)
                spare.push(b.data);
                kept += b.data.length;
            }
            b.data = new byte[0];
        }
    }

    /** Variable-length values in one array, with offsets and null marks. */
    static final class Blobs {
        byte[] data = spare();

        private static byte[] spare() {
            byte[] b = SPARE.get().poll();
            return b != null ? b : new byte[1 << 16];
        }

        int size;
        int[] off;
        byte[] nulls;
        int count;

        Blobs(int cap) {
            off = new int[cap + 1];
            nulls = new byte[cap];
        }

        void add(byte[] b, int p, int len) {
            if (count + 1 >= nulls.length) {
                nulls = Arrays.copyOf(nulls, nulls.length * 2);
                off = Arrays.copyOf(off, nulls.length + 1);
            }
            if (len < 0) {
                nulls[count] = 1;
            } else {
                nulls[count] = 0;
                if (size + len > data.length) data = Arrays.copyOf(data, Math.max(size + len, data.length * 2));
                System.arraycopy(b, p, data, size, len);
                size += len;
            }
            off[++count] = size;
        }

        void cut(int toCount) {
            count = toCount;
            size = off[toCount];
        }
    }

    public void header(byte[] kb, int kp, int kl, byte[] vb, int vp, int vl) {
        if (!want_headers) return;
        byte[] fixed = Cols.kafkaUtf8(kb, kp, kl);
        if (fixed == null) hkey.add(kb, kp, kl);
        else hkey.add(fixed, 0, fixed.length);
        hvalue.add(vb, vp, vl);
    }

    public void header(long key, byte[] vb, int vp, int vl) {
        if (!want_headers) return;
        byte[] text = Long.toString(key).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        hkey.add(text, 0, text.length);
        hvalue.add(vb, vp, vl);
    }

    public void record(long off, long t, byte[] kb, int kp, int kl, byte[] vb, int vp, int vl) {
        if (off < lo || off > last) { // outside the slice's offset bounds: its headers go too
            hkey.cut(recordHeaders);
            hvalue.cut(recordHeaders);
            return;
        }
        if (n + 1 >= cap) grow();
        offset[n] = off;
        ts[n] = t;
        tsNull[n] = (byte) (t == -1 || t < -9223372036854775L || t > 9223372036854775L ? 1 : 0);
        if (want_key) key.add(kb, kp, kl);
        if (want_value) value.add(vb, vp, vl);
        n++;
        hoff[n] = recordHeaders = hkey.count;
    }

    private void grow() {
        cap *= 2;
        offset = Arrays.copyOf(offset, cap);
        ts = Arrays.copyOf(ts, cap);
        tsNull = Arrays.copyOf(tsNull, cap);
        hoff = Arrays.copyOf(hoff, cap + 1);
        magic = Arrays.copyOf(magic, cap);
        epoch = Arrays.copyOf(epoch, cap);
        sequence = Arrays.copyOf(sequence, cap);
        leaderEpoch = Arrays.copyOf(leaderEpoch, cap);
        tsType = Arrays.copyOf(tsType, cap);
        base = Arrays.copyOf(base, cap);
        pid = Arrays.copyOf(pid, cap);
        horizon = Arrays.copyOf(horizon, cap);
        position = Arrays.copyOf(position, cap);
        horizonNull = Arrays.copyOf(horizonNull, cap);
        codec = Arrays.copyOf(codec, cap);
        txn = Arrays.copyOf(txn, cap);
        control = Arrays.copyOf(control, cap);
    }

    /** The state before a batch: rows, and the headers, keys and values they hold. */
    long mark() {
        return ((long) n << 32) | hkey.count;
    }

    void rollback(long mark) {
        n = (int) (mark >>> 32);
        recordHeaders = (int) mark;
        hkey.cut(recordHeaders);
        hvalue.cut(recordHeaders);
        key.cut(Math.min(key.count, n));
        value.cut(Math.min(value.count, n));
        keyDecoded.cut(Math.min(keyDecoded.count, n));
        valueDecoded.cut(Math.min(valueDecoded.count, n));
        payloadError.cut(Math.min(payloadError.count, n));
    }

    /** The batch-level values of the rows from {@code from}: the batch just decoded, at byte {@code at}. */
    void batch(Batch bt, int from, long at) {
        if (from == n) return;
        if (internal != null) decode(bt, from);
        if (wMagic) Arrays.fill(magic, from, n, bt.magic);
        if (wCodec) Arrays.fill(codec, from, n, (byte) bt.codec);
        if (wBase) Arrays.fill(base, from, n, bt.baseOffset);
        if (wPid) Arrays.fill(pid, from, n, bt.producerId);
        if (wEpoch) Arrays.fill(epoch, from, n, bt.producerEpoch);
        if (wSequence) Arrays.fill(sequence, from, n, bt.baseSequence);
        if (wTxn) Arrays.fill(txn, from, n, bt.isTransactional);
        if (wControl) Arrays.fill(control, from, n, bt.isControl);
        if (wLeaderEpoch) Arrays.fill(leaderEpoch, from, n, bt.partitionLeaderEpoch);
        if (wTsType) Arrays.fill(tsType, from, n, bt.timestampType);
        if (wHorizon) {
            Arrays.fill(horizon, from, n, bt.baseTimestamp);
            Arrays.fill(horizonNull, from, n, (byte) (bt.hasDeleteHorizon ? 0 : 1));
        }
        if (wPosition) Arrays.fill(position, from, n, at);
    }

    /** decode_payloads for the batch's rows from {@code from}, as kfmt.log.arrow.add_decoded: a control record, a
     * topic that is not Kafka's own and a record without key and value get nulls. */
    private void decode(Batch bt, int from) {
        boolean bound = !bt.isControl && Internal.bound(topic);
        for (int r = from; r < n; r++) {
            int kn = key.nulls[r] != 0 ? -1 : key.off[r + 1] - key.off[r];
            int vn = value.nulls[r] != 0 ? -1 : value.off[r + 1] - value.off[r];
            if (!bound || (kn < 0 && vn < 0)) {
                keyDecoded.add(null, 0, -1);
                valueDecoded.add(null, 0, -1);
                payloadError.add(null, 0, -1);
                continue;
            }
            internal.decode(topic, kn < 0 ? null : key.data, key.off[r], kn, vn < 0 ? null : value.data, value.off[r], vn);
            keyDecoded.add(internal.key, 0, internal.key == null ? -1 : internal.keyLen);
            valueDecoded.add(internal.value, 0, internal.value == null ? -1 : internal.valueLen);
            text(payloadError, internal.error);
        }
    }

    private static void text(Blobs to, String s) {
        if (s == null) {
            to.add(null, 0, -1);
        } else {
            byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            to.add(b, 0, b.length);
        }
    }

    void clear() {
        n = 0;
        recordHeaders = 0;
        key.cut(0);
        value.cut(0);
        keyDecoded.cut(0);
        valueDecoded.cut(0);
        payloadError.cut(0);
        hkey.cut(0);
        hvalue.cut(0);
    }

    long bytes() {
        return (long) key.size + value.size + hkey.size + hvalue.size;
    }

    /** The rows as a Spark batch (valid until the next clear()). */
    ColumnarBatch take(String topic, int partition, String file, boolean nullEmptyHeaders) {
        StructField[] fields = schema.fields();
        ColumnVector[] cols = new ColumnVector[fields.length];
        for (int i = 0; i < fields.length; i++) cols[i] = column(fields[i], topic, partition, file, nullEmptyHeaders);
        return new ColumnarBatch(cols, n);
    }

    private ColumnVector column(StructField f, String topic, int partition, String file, boolean nullEmptyHeaders) {
        DataType t = f.dataType();
        return switch (f.name()) {
            case "key" -> new Cols.Bytes(t, n, key.data, key.off, key.nulls);
            case "value" -> new Cols.Bytes(t, n, value.data, value.off, value.nulls);
            case "topic" -> new Cols.Same(t, n, topic, 0, false);
            case "partition" -> new Cols.Same(t, n, null, partition, false);
            case "file" -> new Cols.Same(t, n, file, 0, false);
            case "error", "raw" -> new Cols.Same(t, n, null, 0, true);
            case "offset" -> new Cols.Longs(t, n, offset, null, 1);
            case "timestamp" -> new Cols.Longs(t, n, ts, tsNull, 1000);
            case "timestamp_ms" -> new Cols.Longs(t, n, ts, tsNullMs(), 1);
            case "timestampType" -> new Cols.Ints(t, n, tsType);
            case "magic" -> new Cols.Ints(t, n, magic);
            case "codec" -> new Cols.Codec(t, n, codec);
            case "batch_base_offset" -> new Cols.Longs(t, n, base, null, 1);
            case "producer_id" -> new Cols.Longs(t, n, pid, null, 1);
            case "producer_epoch" -> new Cols.Ints(t, n, epoch);
            case "base_sequence" -> new Cols.Ints(t, n, sequence);
            case "is_transactional" -> new Cols.Bools(t, n, txn);
            case "is_control" -> new Cols.Bools(t, n, control);
            case "partition_leader_epoch" -> new Cols.Ints(t, n, leaderEpoch);
            case "delete_horizon" -> new Cols.Longs(t, n, horizon, horizonNull, 1);
            case "position" -> new Cols.Longs(t, n, position, null, 1);
            case "headers" -> headers(t, nullEmptyHeaders);
            case "key_decoded" -> new Cols.Bytes(t, n, keyDecoded.data, keyDecoded.off, keyDecoded.nulls);
            case "value_decoded" -> new Cols.Bytes(t, n, valueDecoded.data, valueDecoded.off, valueDecoded.nulls);
            case "payload_error" -> new Cols.Bytes(t, n, payloadError.data, payloadError.off, payloadError.nulls);
            default -> throw new IllegalArgumentException("kafka-log-jvm: no column " + f.name());
        };
    }

    private byte[] tsNullMs() {
        byte[] out = new byte[n];
        for (int i = 0; i < n; i++) out[i] = (byte) (ts[i] == -1 ? 1 : 0);
        return out;
    }

    private ColumnVector headers(DataType t, boolean nullEmpty) {
        StructType entry = (StructType) ((org.apache.spark.sql.types.ArrayType) t).elementType();
        int nh = hkey.count;
        ColumnVector k = new Cols.Bytes(entry.fields()[0].dataType(), nh, hkey.data, hkey.off, null);
        ColumnVector v = new Cols.Bytes(entry.fields()[1].dataType(), nh, hvalue.data, hvalue.off, hvalue.nulls);
        return new Cols.Headers(t, n, hoff, new Cols.Struct(entry, nh, k, v), nullEmpty);
    }
}
