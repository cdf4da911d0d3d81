package kfmt.jvm;

import java.io.IOException;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/** The rows of one capture read ({@link Capture}) for the kafka-capture source: its messages, or the records
 * they carry. */
final class CaptureRows {
    private CaptureRows() {}

    private static UTF8String s(String v) {
        return v == null ? null : UTF8String.fromString(v);
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("kfmt");

    /** The capture read through: its notes logged, its problems the read's failure (on_corrupt=fail, the first one
     * in one line) or logged; true where they are to be rows (quarantine). */
    static boolean said(Capture cap, String path, String onCorrupt) {
        for (String n : cap.notes) LOG.info("{}: note: {}", KafkaCapture.NAME, n);
        if (!cap.problems.isEmpty() && onCorrupt.equals("fail")) {
            throw Damage.of(KafkaCapture.NAME + ": " + path + ": " + cap.problems.size() + " problem(s), the first: "
                    + cap.problems.get(0) + " (option on_corrupt=skip or quarantine to go on)");
        }
        for (String p : cap.problems) LOG.warn("{}: problem: {}", KafkaCapture.NAME, p);
        return onCorrupt.equals("quarantine");
    }

    /** A request or response a row, as the capture is read; then (quarantine) a row per problem and note. */
    static final class Messages implements PartitionReader<InternalRow> {
        private final Capture cap;
        private final String path, onCorrupt;
        private Capture.Row row;
        /** (quarantine) the rows of what the capture said: kind ("problem", "note") and its line, each */
        private List<String[]> said;
        private int next = -1;

        Messages(Capture cap, String path, String onCorrupt) {
            this.cap = cap;
            this.path = path;
            this.onCorrupt = onCorrupt;
        }

        @Override
        public boolean next() {
            if (said == null) {
                row = cap.next();
                if (row != null) return true;
                said = new java.util.ArrayList<>();
                if (CaptureRows.said(cap, path, onCorrupt)) {
                    for (String p : cap.problems) said.add(new String[] {"problem", p});
                    for (String n : cap.notes) said.add(new String[] {"note", n});
                }
            }
            return ++next < said.size();
        }

        @Override
        public InternalRow get() {
            if (said != null) return said(said.get(next));
            Capture.Row r = row;
            Wire.Msg m = r.m;
            Object[] v = {r.time, r.frame, s(r.client), s(r.broker), s(m.kind()), s(m.api.name()), m.api.key(), m.version,
                m.correlationId, m.request ? s(m.clientId) : null, m.request ? null : r.latencyMs, s(m.header), s(m.body),
                s(m.trailing), new GenericArrayData(m.notes.stream().map(UTF8String::fromString).toArray()), s(path)};
            return new GenericInternalRow(v);
        }

        private InternalRow said(String[] kl) {
            StructType c = KafkaCapture.MESSAGES;
            Object[] v = new Object[c.size()];
            v[c.fieldIndex("kind")] = s(kl[0]);
            v[c.fieldIndex("notes")] = new GenericArrayData(new Object[] {s(kl[1])});
            v[c.fieldIndex("capture")] = s(path);
            return new GenericInternalRow(v);
        }

        @Override public void close() { cap.close(); }
    }

    /** The records each message carries, in kafka-log's columns (read by kafka-log's reader) and the capture's. */
    static final class Records implements PartitionReader<ColumnarBatch> {
        private final Capture cap;
        private final String path, onCorrupt;
        private final StructType schema, logSchema;
        private final SliceReader reader;
        private Capture.Row row;
        private int set;
        private List<WireRecords.Set> sets = List.of();
        private boolean open, problemsGiven, read;
        private ColumnarBatch current;

        Records(Capture cap, String path, StructType schema, String onCorrupt) {
            this.cap = cap;
            this.path = path;
            this.schema = schema;
            StructType log = new StructType();
            for (StructField f : schema.fields()) if (KafkaCapture.ON_THE_WIRE.getFieldIndex(f.name()).isEmpty()) log = log.add(f);
            this.logSchema = log;
            this.reader = WireRecords.reader(onCorrupt, log);
            this.onCorrupt = onCorrupt;
        }

        @Override
        public boolean next() throws IOException {
            while (true) {
                if (open) {
                    ColumnarBatch b = batch();
                    if (b != null) {
                        current = joined(b, row, sets.get(set - 1));
                        return true;
                    }
                    open = false;
                }
                if (set < sets.size()) {
                    WireRecords.open(reader, row.m, sets.get(set++), path);
                    open = true;
                    continue;
                }
                if (!read && (row = cap.next()) != null) {
                    sets = WireRecords.of(row.m);
                    set = 0;
                    continue;
                }
                read = true;
                return problems();
            }
        }

        /** The next rows of the record set open; its damage (on_corrupt=fail) said with the message it is in. */
        private ColumnarBatch batch() throws IOException {
            try {
                return reader.next();
            } catch (IllegalStateException e) {
                Capture.Row r = row;
                Wire.Msg m = r.m;
                throw Damage.of(KafkaCapture.NAME + ": " + path + ": " + r.client + " -> " + r.broker + ": " + m.api.name() + " v"
                        + m.version + " " + m.kind() + " (correlation id " + m.correlationId + "): " + sets.get(set - 1).path()
                        + ": " + e.getMessage());
            }
        }

        /** quarantine: the capture's problems, a row each (kind "problem", the line in error). */
        private boolean problems() {
            if (problemsGiven) return false;
            problemsGiven = true;
            if (!CaptureRows.said(cap, path, onCorrupt) || cap.problems.isEmpty()) return false;
            int n = cap.problems.size();
            ColumnVector[] cols = new ColumnVector[schema.size()];
            for (int i = 0; i < cols.length; i++) {
                StructField f = schema.fields()[i];
                ConstantColumnVector c = new ConstantColumnVector(n, f.dataType());
                if (f.name().equals("kind")) c.setUtf8String(s("problem"));
                else if (f.name().equals("file")) c.setUtf8String(s(path));
                else c.setNull();
                cols[i] = c;
            }
            cols[schema.fieldIndex("error")] = new Lines(schema.apply("error").dataType(), cap.problems);
            current = new ColumnarBatch(cols, n);
            return true;
        }

        private ColumnarBatch joined(ColumnarBatch b, Capture.Row r, WireRecords.Set s) {
            ColumnVector[] cols = new ColumnVector[schema.size()];
            int n = b.numRows();
            for (int i = 0; i < cols.length; i++) {
                StructField f = schema.fields()[i];
                int at = logSchema.getFieldIndex(f.name()).isDefined() ? logSchema.fieldIndex(f.name()) : -1;
                if (at >= 0 && !(f.name().equals("partition") && s.partition() == null)) cols[i] = b.column(at);
                else cols[i] = constant(f, n, r, s);
            }
            return new ColumnarBatch(cols, n);
        }

        private static ColumnVector constant(StructField f, int n, Capture.Row r, WireRecords.Set s) {
            ConstantColumnVector c = new ConstantColumnVector(n, f.dataType());
            Wire.Msg m = r.m;
            Object v = switch (f.name()) {
                case "packet_time" -> r.time;
                case "frame" -> r.frame;
                case "client" -> r.client;
                case "broker" -> r.broker;
                case "kind" -> m.kind();
                case "api" -> m.api.name();
                case "version" -> m.version;
                default -> null; // (a partition no struct around the set names)
            };
            if (v == null) c.setNull();
            else if (v instanceof String t) c.setUtf8String(UTF8String.fromString(t));
            else if (v instanceof Double d) c.setDouble(d);
            else if (v instanceof Long l) c.setLong(l);
            else c.setInt((Integer) v);
            return c;
        }

        @Override public ColumnarBatch get() { return current; }
        @Override
        public void close() throws IOException {
            try {
                reader.release();
            } finally {
                cap.close();
            }
        }
    }

    /** A text column of given lines. */
    static final class Lines extends Cols.Base {
        private final List<String> lines;

        Lines(DataType t, List<String> lines) {
            super(t, lines.size());
            this.lines = lines;
        }

        @Override public UTF8String getUTF8String(int r) { return UTF8String.fromString(lines.get(r)); }
    }
}
