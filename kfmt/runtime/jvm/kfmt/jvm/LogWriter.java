package kfmt.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** One task of a kafka-log write: its rows (the source's columns) grouped by topic-partition, each group in offset
 * order cut into batches and encoded with the format's generated encoder, each group's batches staged as one file
 * ({@code <staging>/<topic>-<partition>/<uuid>.part}). The rules are kfmt.spark.writer.encode_rows' (which rows make
 * a batch, which batch values a row carries, what an old magic refuses, with its words); the differential test
 * (tests/test_jvm.py) holds the two engines' staged bytes equal. */
final class LogWriter implements DataWriter<InternalRow> {
    private final LogWrite.Settings s;
    private final Cols c;
    private final Map<Part, List<Row>> groups = new LinkedHashMap<>();
    private final List<Path> written = new ArrayList<>();
    private long skipped;

    LogWriter(LogWrite.Settings s) {
        this.s = s;
        this.c = new Cols(s.schema());
    }

    /** The executors' writers of one job. */
    record Factory(LogWrite.Settings s) implements DataWriterFactory, StreamingDataWriterFactory {
        @Override public DataWriter<InternalRow> createWriter(int partition, long task) { return new LogWriter(s); }
        @Override public DataWriter<InternalRow> createWriter(int partition, long task, long epoch) { return new LogWriter(s); }
    }

    /** A topic-partition. */
    record Part(String topic, int partition) {}

    /** One row's values (null: the column is absent or null). */
    static final class Row {
        long offset;
        long ts;
        byte[] key, value;
        byte[][] hk, hv;
        Long batch, producerId, deleteHorizon;
        Integer producerEpoch, baseSequence, timestampType, leaderEpoch;
        Boolean transactional, control;
    }

    /** The ordinals of the columns a write reads, by name (-1: absent), and their types. */
    static final class Cols {
        final StructType schema;
        final int topic, partition, offset, ts, tsMs, key, value, headers, batch, producerId, producerEpoch,
                baseSequence, transactional, control, timestampType, leaderEpoch, deleteHorizon, error;

        Cols(StructType schema) {
            this.schema = schema;
            topic = at("topic");
            partition = at("partition");
            offset = at("offset");
            ts = at("timestamp");
            tsMs = at("timestamp_ms");
            key = at("key");
            value = at("value");
            headers = at("headers");
            batch = at("batch_base_offset");
            producerId = at("producer_id");
            producerEpoch = at("producer_epoch");
            baseSequence = at("base_sequence");
            transactional = at("is_transactional");
            control = at("is_control");
            timestampType = at("timestampType");
            leaderEpoch = at("partition_leader_epoch");
            deleteHorizon = at("delete_horizon");
            error = at("error");
            if (topic < 0 || partition < 0) throw new IllegalArgumentException(Names.text("need_columns"));
            if (type(topic) != DataTypes.StringType) throw new IllegalArgumentException(Names.text("topic_column"));
            DataType p = type(partition);
            if (p != DataTypes.IntegerType && p != DataTypes.LongType && p != DataTypes.ShortType && p != DataTypes.ByteType)
                throw new IllegalArgumentException(Names.text("partition_column"));
        }

        private int at(String name) {
            for (int i = 0; i < schema.fields().length; i++) if (schema.fields()[i].name().equals(name)) return i;
            return -1;
        }

        DataType type(int i) {
            return schema.fields()[i].dataType();
        }

        Long along(InternalRow r, int i) {
            if (i < 0 || r.isNullAt(i)) return null;
            DataType t = type(i);
            if (t == DataTypes.IntegerType) return (long) r.getInt(i);
            if (t == DataTypes.ShortType) return (long) r.getShort(i);
            if (t == DataTypes.ByteType) return (long) r.getByte(i);
            if (t == DataTypes.BooleanType) return r.getBoolean(i) ? 1L : 0L;
            return r.getLong(i);
        }

        Integer anint(InternalRow r, int i) {
            Long v = along(r, i);
            return v == null ? null : (int) (long) v;
        }

        byte[] bytes(InternalRow r, int i) {
            if (i < 0 || r.isNullAt(i)) return null;
            return type(i) == DataTypes.StringType ? r.getUTF8String(i).getBytes() : r.getBinary(i);
        }
    }

    @Override
    public void write(InternalRow r) {
        if (c.error >= 0 && !r.isNullAt(c.error)) {
            skipped++; // quarantined rows carry no record: counted, and reported at the commit
            return;
        }
        Row w = new Row();
        Long off = c.along(r, c.offset);
        if (off == null) throw new IllegalArgumentException("kafka-log writer: rows need an 'offset' column");
        w.offset = off;
        w.ts = timestamp(r);
        w.key = c.bytes(r, c.key);
        w.value = c.bytes(r, c.value);
        headers(r, w);
        w.batch = c.along(r, c.batch);
        w.producerId = c.along(r, c.producerId);
        w.producerEpoch = c.anint(r, c.producerEpoch);
        w.baseSequence = c.anint(r, c.baseSequence);
        w.transactional = c.transactional < 0 || r.isNullAt(c.transactional) ? null : r.getBoolean(c.transactional);
        w.control = c.control < 0 || r.isNullAt(c.control) ? null : r.getBoolean(c.control);
        w.timestampType = c.anint(r, c.timestampType);
        w.leaderEpoch = c.anint(r, c.leaderEpoch);
        w.deleteHorizon = c.along(r, c.deleteHorizon);
        byte[] topic = r.isNullAt(c.topic) ? null : r.getUTF8String(c.topic).getBytes();
        Long partition = c.along(r, c.partition);
        String refused = Names.rowProblem(topic, partition, w.offset); // before a byte is written: Kafka's names only
        if (refused != null) throw new IllegalArgumentException(refused);
        groups.computeIfAbsent(new Part(new String(topic, StandardCharsets.US_ASCII), (int) (long) partition), k -> new ArrayList<>()).add(w);
    }

    /** A row's Kafka timestamp in milliseconds: {@code timestamp} (microseconds, rounded as kfmt.spark.writer rounds
     * a datetime's: seconds as a double, times 1000, half to even), else {@code timestamp_ms}, else -1 (none). */
    private long timestamp(InternalRow r) {
        if (c.ts >= 0 && !r.isNullAt(c.ts)) {
            long micros = r.getLong(c.ts);
            return (long) Math.rint((micros / 1e6) * 1000);
        }
        Long ms = c.along(r, c.tsMs);
        return ms == null ? -1 : ms;
    }

    private void headers(InternalRow r, Row w) {
        if (c.headers < 0 || r.isNullAt(c.headers)) return;
        ArrayData a = r.getArray(c.headers);
        int n = a.numElements();
        if (n == 0) return;
        w.hk = new byte[n][];
        w.hv = new byte[n][];
        for (int j = 0; j < n; j++) {
            InternalRow h = a.getStruct(j, 2);
            w.hk[j] = h.isNullAt(0) ? null : h.getUTF8String(0).getBytes();
            w.hv[j] = h.isNullAt(1) ? null : h.getBinary(1);
        }
    }

    @Override
    public WriterCommitMessage commit() {
        com.fasterxml.jackson.databind.node.ObjectNode msg = Planner.object();
        com.fasterxml.jackson.databind.node.ArrayNode files = msg.putArray("files");
        Enc x = new Enc();
        Encoder e = kfmt.jvm.gen.Encoders.of(s.format());
        if (e == null) throw new IllegalStateException("kafka-log writer: no Java encoder for " + s.format());
        int codec = Codecs.id(s.codec());
        try {
            for (Map.Entry<Part, List<Row>> g : groups.entrySet()) {
                List<Row> rows = g.getValue();
                rows.sort((a, b) -> Long.compare(a.offset, b.offset));
                x.out.clear();
                Batches.encode(x, e, rows, s.magic(), codec, s.batchRecords(), s.keepBatches());
                Part tp = g.getKey();
                Path p = Paths.get(s.staging(), tp.topic() + "-" + tp.partition(), java.util.UUID.randomUUID().toString().replace("-", "") + ".part");
                Files.createDirectories(p.getParent());
                written.add(p);
                try (var ch = java.nio.channels.FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(x.out.b, 0, x.out.n);
                    while (bb.hasRemaining()) ch.write(bb);
                    ch.force(true);
                }
                files.addArray().add(tp.topic()).add(tp.partition()).add(p.toString()).add(rows.size()).add(x.out.n);
            }
        } catch (IOException err) {
            throw new UncheckedIOException("kafka-log writer: staging under " + s.staging() + ": " + err.getMessage(), err);
        } finally {
            x.close();
        }
        return LogWrite.staged(Planner.bytes(msg.put("skipped", skipped)));
    }

    /** A failed task: its staged files go (the job's abort removes the staging folder too). */
    @Override
    public void abort() {
        for (Path p : written) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException ignored) {
                // the job's abort removes the whole staging folder
            }
        }
    }

    @Override
    public void close() {}
}
