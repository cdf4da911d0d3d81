package kfmt.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.util.Map;
import java.util.Properties;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/** {@code spark.read.format("kafka-log")}, {@code readStream}, {@code df.write} and {@code CREATE TABLE ... USING
 * kafka-log}: kfmt's one Spark source. Reads are planned by kfmt's planner on the driver ({@link Planner}) and decoded
 * here, into Spark's columns, building only the columns a query reads; writes are encoded here ({@link LogWrite}) and
 * committed by kfmt's commit on the driver. What the JVM engine does not read or write yet (the planner says which)
 * goes to kfmt's Python data source, registered by kfmt.spark.register. */
public final class KafkaLog implements TableProvider, DataSourceRegister {
    static final String NAME = "kafka-log";
    private static final Properties SCHEMAS = schemas();

    @Override
    public String shortName() {
        return NAME;
    }

    /** The source's columns (kfmt.log.arrow.SCHEMA, or SCHEMA_DECODED with decode_payloads), written into the jar
     * by kfmt.spark.jvm.build from the same definitions the Python source uses. */
    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return inferred(options);
    }

    static StructType inferred(CaseInsensitiveStringMap options) {
        boolean decoded = "true".equalsIgnoreCase(options.getOrDefault("decode_payloads", "false").trim());
        return PARSED.computeIfAbsent(decoded ? "decoded" : "plain", k -> StructType.fromDDL(SCHEMAS.getProperty(k)));
    }

    /** The schemas parsed once (Spark's DDL parser costs more than planning a small read). */
    private static final java.util.concurrent.ConcurrentHashMap<String, StructType> PARSED = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new LogTable(schema, partitioning, properties);
    }

    private static Properties schemas() {
        Properties p = new Properties();
        try (InputStream in = KafkaLog.class.getResourceAsStream("schema.properties")) {
            p.load(in);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("kafka-log: the jar has no kfmt/jvm/schema.properties (built by kfmt.spark.jvm.build)", e);
        }
        return p;
    }

    /** A read the JVM engine decodes: the planner's input partitions, the columns read. */
    static final class JvmScan implements Batch {
        private final StructType schema;
        private final Plan plan;

        JvmScan(StructType schema, Plan plan) {
            this.schema = schema;
            this.plan = plan;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            InputPartition[] out = new InputPartition[plan.groups.size()];
            for (int i = 0; i < out.length; i++) out[i] = new Group(plan.groups.get(i));
            return out;
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            boolean uris = false;
            for (Slice[] g : plan.groups) for (Slice s : g) uris |= Source.isUri(s.path);
            return factory(plan, schema, storeConf(uris));
        }
    }

    /** The executors' reader factory: the plan's read options (not its slices: each task gets its own group). */
    static PartitionReaderFactory factory(Plan plan, StructType schema, Broadcast<SerializableConfiguration> conf) {
        Plan shipped = new Plan();
        shipped.limits = plan.limits;
        shipped.includeControl = plan.includeControl;
        shipped.nullEmptyHeaders = plan.nullEmptyHeaders;
        shipped.format = plan.format;
        shipped.onCorrupt = plan.onCorrupt;
        shipped.chunkBytes = plan.chunkBytes;
        shipped.decompress = plan.decompress;
        shipped.readTimeoutMs = plan.readTimeoutMs;
        return new Factory(shipped, schema, conf);
    }

    /** The session's Hadoop configuration, broadcast to the executors, when slices are read from a store by URI
     * (null for local files: none is needed). */
    static Broadcast<SerializableConfiguration> storeConf(boolean uris) {
        if (!uris) return null;
        SparkSession spark = SparkSession.active();
        return SerializableConfiguration.broadcast(spark.sparkContext(), spark.sessionState().newHadoopConf());
    }

    record Group(Slice[] slices) implements InputPartition {}

    static final class Factory implements PartitionReaderFactory, Serializable {
        private final Plan plan;
        private final String schemaJson;
        private final Broadcast<SerializableConfiguration> conf;

        Factory(Plan plan, StructType schema, Broadcast<SerializableConfiguration> conf) {
            this.plan = plan;
            this.schemaJson = schema.json();
            this.conf = conf;
        }

        @Override public boolean supportColumnarReads(InputPartition p) { return true; }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition p) {
            throw new UnsupportedOperationException(NAME + " (jvm engine) reads columns");
        }

        @Override
        public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
            org.apache.hadoop.conf.Configuration c = conf == null ? null : conf.value().value();
            StructType schema = PARSED.computeIfAbsent(schemaJson, j -> (StructType) DataType.fromJson(j));
            return new GroupReader(new SliceReader(plan, schema, c), ((Group) p).slices(), c);
        }
    }

    static final class GroupReader implements PartitionReader<ColumnarBatch> {
        private final SliceReader reader;
        private final Slice[] slices;
        private final org.apache.hadoop.conf.Configuration conf;
        private int next;
        private boolean open;
        private ColumnarBatch current;

        GroupReader(SliceReader reader, Slice[] slices, org.apache.hadoop.conf.Configuration conf) {
            this.reader = reader;
            this.slices = slices;
            this.conf = conf;
        }

        @Override
        public boolean next() throws IOException {
            while (true) {
                if (!open) {
                    if (next >= slices.length) return recheckTables();
                    reader.open(slices[next++]);
                    open = true;
                }
                current = reader.next();
                if (current != null) return true;
                open = false;
            }
        }

        /** Once every slice is read, as kfmt.table.plan.LogReader.read: a commit that started or finished while this
         * task read would mix two versions of a table. Returns false (no more batches). */
        private boolean recheckTables() {
            java.util.TreeMap<String, TableCheck> tables = new java.util.TreeMap<>(); // in order, as Python checks
            for (Slice s : slices) if (s.table != null) tables.put(s.table.uri, s.table);
            for (TableCheck t : tables.values()) t.unchanged(conf);
            return false;
        }

        @Override public ColumnarBatch get() { return current; }
        @Override public void close() throws IOException { reader.release(); }
    }
}
