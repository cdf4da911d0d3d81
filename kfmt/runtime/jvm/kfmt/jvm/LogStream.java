package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.UUID;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** {@code spark.readStream.format("kafka-log")} decoded by the JVM engine. What each micro-batch reads is decided by
 * kfmt's planner on the driver (kfmt.spark.stream.KafkaLogStreamReader, through {@link Planner}: the stream's offsets,
 * its tails of the last segments, maxOffsetsPerTrigger's shares), so the two engines cut a stream the same way; the
 * executors decode the slices as a batch read's. Offsets are Spark's Kafka source's JSON,
 * {@code {"topic": {"partition": next offset}}}. */
final class LogStream implements MicroBatchStream, SupportsTriggerAvailableNow {
    private final String id;
    /** the session the stream was started in: its thread asks the planner through it, also once it is no longer the
     * active one, and stops quietly when it was stopped */
    private final SparkSession spark;
    private final CaseInsensitiveStringMap options;
    private final StructType userSchema;
    private final StructType columns;
    private final Plan settings;
    private final long maxOffsets;
    /** Trigger.AvailableNow: the latest offset when the query started, which no micro-batch goes past */
    private Offset availableNow;

    /** {@code settings} and {@code maxOffsets} (0: none): the planner's answer to the stream's "open" call (the read's
     * options, no slices; maxOffsetsPerTrigger as kfmt.spark.stream took it). */
    private LogStream(SparkSession spark, CaseInsensitiveStringMap options, StructType userSchema, StructType columns,
                      String id, Plan settings, long maxOffsets) {
        this.spark = spark;
        this.options = options;
        this.userSchema = userSchema;
        this.columns = columns;
        this.settings = settings;
        this.maxOffsets = maxOffsets;
        this.id = id;
    }

    /** The "open" call: the plan of options when the JVM engine decodes this stream, else null and why in
     * {@code why[0]} (the source then hands the stream to kfmt's Python data source). */
    static LogStream open(CaseInsensitiveStringMap options, StructType userSchema, StructType columns, String[] why) {
        String id = UUID.randomUUID().toString();
        SparkSession spark = SparkSession.active();
        JsonNode a = Planner.ask(spark, options, userSchema, call(id, "open"));
        if (!a.has("plan")) {
            why[0] = a.get("python").asText();
            return null;
        }
        JsonNode max = a.get("max_offsets");
        return new LogStream(spark, options, userSchema, columns, id, Plan.parse(a.get("plan").asText()),
                max == null || max.isNull() ? 0 : max.asLong());
    }

    private static ObjectNode call(String id, String name) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("id", id);
        n.put("call", name);
        return n;
    }

    private JsonNode ask(String name, Offset start, Offset end, Long limit) {
        return ask(name, start, end, limit, null);
    }

    private JsonNode ask(String name, Offset start, Offset end, Long limit, Offset until) {
        ObjectNode c = call(id, name);
        if (start != null) c.put("start", start.json());
        if (end != null) c.put("end", end.json());
        if (limit != null) c.put("limit", limit);
        if (until != null) c.put("until", until.json());
        if (spark.sparkContext().isStopped()) throw stopped();
        try {
            return Planner.ask(spark, options, userSchema, c);
        } catch (RuntimeException e) {
            if (spark.sparkContext().isStopped()) throw stopped(); // the planner went with the session
            throw e;
        }
    }

    /** The session was stopped under a running query: an interruption, which Spark takes as the query's stop (not an
     * error: a stream stops with its session). */
    private static java.io.UncheckedIOException stopped() {
        return new java.io.UncheckedIOException(new java.io.InterruptedIOException("kafka-log: the Spark session was stopped; the stream stops with it"));
    }

    @Override
    public Offset initialOffset() {
        return new LogOffset(ask("initial", null, null, null).get("offset").asText());
    }

    @Override
    public Offset deserializeOffset(String json) {
        return new LogOffset(json);
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        return maxOffsets > 0 ? ReadLimit.maxRows(maxOffsets) : ReadLimit.allAvailable();
    }

    /** What is there now (every partition's next offset). */
    @Override
    public Offset latestOffset() {
        return new LogOffset(ask("latest", null, null, null).get("offset").asText());
    }

    @Override
    public Offset latestOffset(Offset start, ReadLimit limit) {
        Long rows = limit instanceof ReadMaxRows m ? m.maxRows() : null;
        return new LogOffset(ask("latest", start, null, rows, availableNow).get("offset").asText());
    }

    /** What is there now is what the query reads, in as many micro-batches as maxOffsetsPerTrigger makes (also
     * after a restart that first re-runs a micro-batch planned before). */
    @Override
    public void prepareForTriggerAvailableNow() {
        availableNow = latestOffset();
    }

    @Override
    public Offset reportLatestOffset() {
        return latestOffset();
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        Plan plan = Plan.parse(ask("plan", start, end, null).get("plan").asText());
        InputPartition[] out = new InputPartition[plan.groups.size()];
        for (int i = 0; i < out.length; i++) out[i] = new KafkaLog.Group(plan.groups.get(i));
        return out;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return KafkaLog.factory(settings, columns, KafkaLog.storeConf(!Planner.schemes(options).isEmpty()));
    }

    @Override
    public void commit(Offset end) {
        ask("commit", null, end, null);
    }

    @Override
    public void stop() {
        if (!spark.sparkContext().isStopped()) ask("close", null, null, null); // else the planner's state went with it
    }

    @Override
    public String toString() {
        return "kfmt " + KafkaLog.NAME + " stream, jvm engine, " + id; // not kfmt.spark.errors' prefixes (LogTable)
    }

    /** A stream offset: the planner's JSON, one spelling per offset (Spark compares offsets by their JSON). */
    static final class LogOffset extends Offset {
        private final String json;

        LogOffset(String json) {
            this.json = json;
        }

        @Override
        public String json() {
            return json;
        }
    }
}
