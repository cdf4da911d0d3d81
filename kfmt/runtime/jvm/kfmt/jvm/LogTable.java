package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The kafka-log table: reads and streams planned by kfmt's planner and decoded by the JVM engine, writes encoded by
 * it ({@link LogWrite}); what that engine does not read or write yet (the planner's answer "python") handed to kfmt's
 * Python data source (registered as {@value #PYTHON} by kfmt.spark.register). */
final class LogTable implements SupportsRead, SupportsWrite {
    static final String PYTHON = "kafka-log-python";
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("kfmt");
    /** The reasons said so far: a read or write handed to the Python data source says why, once per reason. */
    private static final Set<String> SAID = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final StructType schema;
    private final Transform[] partitioning;
    private final Map<String, String> properties;

    LogTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        this.schema = schema;
        this.partitioning = partitioning;
        this.properties = properties;
    }

    @Override public String name() { return KafkaLog.NAME; }
    @Override public StructType schema() { return schema; }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ, TableCapability.BATCH_WRITE,
                TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new Builder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new LogWrite(this, info, withTable(info.options()));
    }

    /** kfmt's Python data source for this table, reading {@code columns} (why: what it is needed for, said if it
     * is not registered). */
    Table python(String why, StructType columns) {
        if (SAID.add(why)) LOG.warn("kfmt: {} goes to kfmt's Python data source (said once)", why);
        try {
            PythonDataSourceV2 p = new PythonDataSourceV2();
            p.setShortName(PYTHON);
            return p.getTable(columns, partitioning, properties);
        } catch (RuntimeException e) {
            throw new IllegalStateException("kafka-log: " + why + " needs kfmt's Python data source, and this session has "
                    + "none (in PySpark: kfmt.spark.register(spark)): " + e.getMessage(), e);
        }
    }

    /** A read's options over the table's own (a catalog table's OPTIONS and path, say). */
    CaseInsensitiveStringMap withTable(CaseInsensitiveStringMap options) {
        java.util.Map<String, String> all = new java.util.HashMap<>(properties);
        String location = all.get(org.apache.spark.sql.connector.catalog.TableCatalog.PROP_LOCATION);
        // a catalog's own properties (location, owner, provider, ...) are not the source's options
        for (String k : scala.jdk.javaapi.CollectionConverters.asJava(
                org.apache.spark.sql.connector.catalog.CatalogV2Util.TABLE_RESERVED_PROPERTIES())) all.remove(k);
        if (location != null && !all.containsKey("path") && !all.containsKey("paths")) all.put("path", location);
        all.putAll(options.asCaseSensitiveMap());
        String path = all.get("path");
        if (path != null && path.startsWith("file:") && !path.contains(",")) {
            all.put("path", java.net.URI.create(path).getPath()); // a catalog keeps a local path as a URI (file:/data)
        }
        return new CaseInsensitiveStringMap(all);
    }

    final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns {
        private final CaseInsensitiveStringMap options;
        private StructType columns = schema;

        Builder(CaseInsensitiveStringMap options) {
            this.options = options;
        }

        /** Only the columns a query reads; a query reading none (a count) reads the offset, a reader's rows
         * having at least one column. */
        @Override
        public void pruneColumns(StructType required) {
            columns = required.isEmpty() ? new StructType(new org.apache.spark.sql.types.StructField[] {schema.apply("offset")}) : required;
        }
        @Override public Scan build() { return new LogScan(options, columns); }
    }

    /** A read of some columns: as a batch, planned by kfmt's planner when Spark asks for the batch, and decoded by
     * the JVM engine (or by kfmt's Python data source, as the planner says); as a stream, kfmt.spark.stream's. */
    final class LogScan implements Scan {
        private final CaseInsensitiveStringMap options;
        private final StructType columns;
        private JsonNode answer;
        private String streaming; // a stream: which engine decodes it

        LogScan(CaseInsensitiveStringMap options, StructType columns) {
            this.options = options;
            this.columns = columns;
        }

        @Override public StructType readSchema() { return columns; }

        private JsonNode answer() {
            if (answer == null) answer = Planner.ask(withTable(options), userSchema());
            return answer;
        }

        /** The schema the user gave (null: the source's own). */
        private StructType userSchema() {
            return schema.equals(KafkaLog.inferred(options)) ? null : schema;
        }

        @Override
        public String description() {
            // (never "kafka-log (" or "kafka-log: ": Spark quotes descriptions in its errors, and those spell kfmt's
            // own one-line failures, kfmt.spark.errors)
            if (streaming != null) return "kfmt " + KafkaLog.NAME + " stream, " + streaming;
            JsonNode a = answer();
            return a.has("plan") ? "kfmt " + KafkaLog.NAME + ", jvm engine, " + a.get("groups").asInt() + " input partitions"
                    : "kfmt " + KafkaLog.NAME + ", Python data source: " + a.get("python").asText();
        }

        @Override
        public Batch toBatch() {
            JsonNode a = answer();
            if (a.has("plan")) return new KafkaLog.JvmScan(columns, Plan.parse(a.get("plan").asText()));
            String why = "reading this (" + a.get("python").asText() + ")";
            return ((SupportsRead) python(why, columns)).newScanBuilder(withTable(options)).build().toBatch();
        }

        /** A stream: decoded by the JVM engine where the planner says it decodes the read, else by kfmt's Python
         * data source; either way its micro-batches are cut by kfmt.spark.stream. */
        @Override
        public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
            String[] why = new String[1];
            LogStream jvm = LogStream.open(withTable(options), userSchema(), columns, why);
            if (jvm != null) {
                streaming = "jvm engine";
                return jvm;
            }
            streaming = "kfmt's Python data source: " + why[0];
            Scan s = ((SupportsRead) python("streaming (" + why[0] + ")", columns)).newScanBuilder(withTable(options)).build();
            return s.toMicroBatchStream(checkpointLocation);
        }
    }
}
