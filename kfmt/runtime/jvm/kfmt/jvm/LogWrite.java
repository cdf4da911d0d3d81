package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.execution.datasources.v2.python.PythonWriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** {@code df.write.format("kafka-log")} and {@code writeStream}: rows encoded into batches in the executors' JVM
 * ({@link LogWriter}, with the jvm backend's generated encoders), staged under the target, and put in place by kfmt's
 * one commit on the driver (kfmt.spark.writer.commit_partitions, asked through {@link Planner}: the same commit, the
 * same checks, the same atomic publication as the Python data source's writes). The planner decides the settings
 * (the writer's options checked as the Python writer checks them) and where the JVM does not write (a store by URI),
 * hands the write to kfmt's Python data source. */
final class LogWrite implements WriteBuilder, SupportsTruncate {
    private final LogTable table;
    private final LogicalWriteInfo info;
    private final CaseInsensitiveStringMap options;
    private boolean truncate;

    LogWrite(LogTable table, LogicalWriteInfo info, CaseInsensitiveStringMap options) {
        this.table = table;
        this.info = info;
        this.options = options;
    }

    @Override
    public WriteBuilder truncate() {
        truncate = true;
        return this;
    }

    @Override
    public Write build() {
        return new Write() {
            @Override
            public BatchWrite toBatch() {
                JsonNode a = open(false);
                return a.has("python") ? python(a).toBatch() : new Job(settings(a, false));
            }

            @Override
            public StreamingWrite toStreaming() {
                JsonNode a = open(true);
                return a.has("python") ? python(a).toStreaming() : new Job(settings(a, true));
            }
        };
    }

    /** The planner's answer for this write: {"write": settings}, or {"python": why} (kfmt's Python data source
     * writes it). */
    private JsonNode open(boolean stream) {
        return Planner.write(options, Planner.object().put("call", "open").put("overwrite", truncate).put("stream", stream));
    }

    private Settings settings(JsonNode a, boolean stream) {
        JsonNode w = a.get("write");
        String staging = java.nio.file.Paths.get(w.get("path").asText(), ".kfmt-staging-" + ProcessHandle.current().pid()
                + "-" + java.util.UUID.randomUUID().toString().replace("-", "")).toString();
        return new Settings(info.schema(), staging, w.get("format").asText(), w.get("magic").asInt(), w.get("codec").asText(),
                w.get("batch_records").asInt(), w.get("keep_batches").asBoolean(), stream, truncate);
    }

    private Write python(JsonNode a) {
        String why = "writing (" + a.get("python").asText() + ")";
        WriteBuilder b = ((SupportsWrite) table.python(why, table.schema())).newWriteBuilder(info);
        if (truncate) b = ((SupportsTruncate) b).truncate();
        return b.build();
    }

    /** What the executors need: the rows' schema and how to encode them (the format of the magic, by id). */
    record Settings(StructType schema, String staging, String format, int magic, String codec, int batchRecords,
            boolean keepBatches, boolean stream, boolean overwrite) implements Serializable {}

    /** What a task tells the driver: the JSON {@code {"files": [[topic, partition, path, records, bytes], ...],
     * "skipped": quarantined rows not written}}, in a class of Spark's own (a task's result is read on the driver by
     * a class loader that may not hold kfmt's jar when it was added to a running session: ADD JAR). */
    static WriterCommitMessage staged(byte[] json) {
        return new PythonWriterCommitMessage(json);
    }

    /** One write job (or a stream's micro-batches): the factory of the executors' writers, and the commit. */
    final class Job implements BatchWrite, StreamingWrite {
        private final Settings s;

        Job(Settings s) {
            this.s = s;
        }

        private LogWriter.Factory factory() {
            return new LogWriter.Factory(s);
        }

        @Override public boolean useCommitCoordinator() { return true; }
        @Override public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo i) { return factory(); }
        @Override public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo i) { return factory(); }
        @Override public void commit(WriterCommitMessage[] messages) { call("commit", messages, -1); }
        @Override public void abort(WriterCommitMessage[] messages) { call("abort", messages, -1); }
        @Override public void commit(long epoch, WriterCommitMessage[] messages) { call("commit", messages, epoch); }
        @Override public void abort(long epoch, WriterCommitMessage[] messages) { call("abort", messages, epoch); }

        /** The Python writer's commit or abort of the tasks' staged files (kfmt.spark.planner). */
        private void call(String what, WriterCommitMessage[] messages, long epoch) {
            ObjectNode ask = Planner.object().put("call", what).put("overwrite", s.overwrite()).put("stream", s.stream())
                    .put("staging", s.staging()).put("batch_id", epoch);
            ArrayNode ms = ask.putArray("messages");
            for (WriterCommitMessage m : messages) {
                if (!(m instanceof PythonWriterCommitMessage st)) continue; // a task that failed before it reported
                ms.add(Planner.parse(st.pickledMessage()));
            }
            Planner.write(options, ask);
        }
    }
}
