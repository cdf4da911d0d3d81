package kfmt.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/** {@code spark.read.format("kafka-capture").load(path)}: captured Kafka traffic (pcap and pcapng files; a file, a
 * folder of them, a glob, local or in a store by URI) decoded in the JVM ({@link Capture}: the capture rules of
 * {@code kfmt dump}, held to them by the differential test): one row per request or response with the columns of
 * {@code kfmt dump --json} (header and body as JSON text), or with option {@code rows=records} the records carried on
 * the wire in kafka-log's columns and the capture's (packet_time, frame, client, broker, kind, api, version). A
 * capture file larger than spark.sql.files.maxPartitionBytes is split by connection: each of its tasks reads the
 * file's packets and puts together and decodes its share of the connections (a TCP stream runs through the whole
 * file, so a file is not cut into byte ranges). What a capture cannot
 * say: option {@code on_corrupt} as kafka-log's: fail (the read fails with the first problem, one line), skip (read
 * on; said in the log), quarantine (a row each, kind "problem" or "note", its line in notes or error). */
public final class KafkaCapture implements TableProvider, DataSourceRegister {
    static final String NAME = "kafka-capture";
    /** the columns of kfmt dump --json (and where each row comes from) */
    static final StructType MESSAGES = StructType.fromDDL("time double, frame bigint, client string, broker string, "
            + "kind string, api string, api_key int, version int, correlation_id int, client_id string, latency_ms double, "
            + "header string, body string, trailing string, notes array<string>, capture string");
    /** the capture's columns of a record's row (kfmt dump --records --json's) */
    static final StructType ON_THE_WIRE = StructType.fromDDL("packet_time double, frame bigint, client string, "
            + "broker string, kind string, api string, version int");

    @Override public String shortName() { return NAME; }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return records(options) ? recordsSchema() : MESSAGES;
    }

    static StructType recordsSchema() {
        StructType s = KafkaLog.inferred(new CaseInsensitiveStringMap(Map.of()));
        for (var f : ON_THE_WIRE.fields()) s = s.add(f);
        return s;
    }

    static boolean records(Map<String, String> options) {
        String rows = options.getOrDefault("rows", "messages").trim().toLowerCase(java.util.Locale.ROOT);
        if (!rows.equals("messages") && !rows.equals("records"))
            throw new IllegalArgumentException(NAME + ": option rows is messages or records, not " + rows);
        return rows.equals("records");
    }

    @Override public boolean supportsExternalMetadata() { return true; }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new CaptureTable(schema);
    }

    static final class CaptureTable implements SupportsRead {
        private final StructType schema;

        CaptureTable(StructType schema) {
            this.schema = schema;
        }

        @Override public String name() { return NAME; }
        @Override public StructType schema() { return schema; }
        @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.BATCH_READ); }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            Options o = Options.of(options);
            return () -> new Scan() {
                @Override public StructType readSchema() { return schema; }
                @Override public Batch toBatch() { return new CaptureBatch(o, schema); }
            };
        }
    }

    /** The options kafka-capture takes (anything else is refused, naming these) */
    static final List<String> KNOWN = List.of("path", "paths", "rows", "port", "on_corrupt", "read_timeout");

    /** The read's options, as they reach the executors ({@code readTimeoutMs}: how long one read from a store by URI
     * may wait, option read_timeout in seconds, as kafka-log's). */
    record Options(List<String> paths, boolean records, Integer port, String onCorrupt, long readTimeoutMs)
            implements Serializable {
        static Options of(CaseInsensitiveStringMap o) {
            for (String k : o.keySet())
                if (!KNOWN.contains(k.toLowerCase(java.util.Locale.ROOT)))
                    throw new IllegalArgumentException(NAME + ": unknown option " + k + " (its options: " + String.join(", ", KNOWN) + ")");
            List<String> paths = new ArrayList<>();
            if (o.containsKey("path")) paths.add(o.get("path"));
            if (o.containsKey("paths")) {
                try {
                    for (var p : new com.fasterxml.jackson.databind.ObjectMapper().readTree(o.get("paths"))) paths.add(p.asText());
                } catch (IOException e) {
                    throw new IllegalArgumentException(NAME + ": option paths is not a JSON list: " + e.getMessage());
                }
            }
            if (paths.isEmpty()) throw new IllegalArgumentException(NAME + ": no path given (load(path))");
            String onCorrupt = o.getOrDefault("on_corrupt", "fail").trim().toLowerCase(java.util.Locale.ROOT);
            if (!List.of("fail", "skip", "quarantine").contains(onCorrupt))
                throw new IllegalArgumentException(NAME + ": option on_corrupt is fail, skip or quarantine, not " + onCorrupt);
            Double port = number(o, "port", null), timeout = number(o, "read_timeout", 120.0);
            if (port != null && (port != Math.rint(port) || port < 0 || port > 65535))
                throw new IllegalArgumentException(NAME + ": option port is a TCP port (0-65535), not " + o.get("port"));
            if (!(timeout > 0))
                throw new IllegalArgumentException(NAME + ": option read_timeout is seconds (more than 0), not " + o.get("read_timeout"));
            return new Options(paths, KafkaCapture.records(o), port == null ? null : port.intValue(), onCorrupt,
                    (long) Math.ceil(timeout * 1000));
        }

        private static Double number(CaseInsensitiveStringMap o, String key, Double otherwise) {
            String v = o.get(key);
            if (v == null) return otherwise;
            try {
                return Double.valueOf(v.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(NAME + ": option " + key + " is a number, not " + v);
            }
        }
    }

    /** A task: share {@code part} of {@code parts} of a capture file's connections. */
    record File(String path, int part, int parts) implements InputPartition {}

    static final class CaptureBatch implements Batch {
        private final Options options;
        private final StructType schema;

        CaptureBatch(Options options, StructType schema) {
            this.options = options;
            this.schema = schema;
        }

        @Override
        public InputPartition[] planInputPartitions() {
            org.apache.hadoop.conf.Configuration conf = org.apache.spark.sql.SparkSession.active().sessionState().newHadoopConf();
            long most = org.apache.spark.sql.SparkSession.active().sessionState().conf().filesMaxPartitionBytes();
            List<InputPartition> out = new ArrayList<>();
            for (var f : CaptureFiles.list(options.paths(), conf).entrySet()) { // a task per share of its bytes
                int parts = (int) Math.max(1, Math.min(1024, (f.getValue() + most - 1) / most));
                for (int k = 0; k < parts; k++) out.add(new File(f.getKey(), k, parts));
            }
            return out.toArray(InputPartition[]::new);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            boolean uris = options.paths().stream().anyMatch(Source::isUri);
            return new Factory(options, schema.json(), KafkaLog.storeConf(uris));
        }
    }

    static final class Factory implements PartitionReaderFactory {
        private final Options options;
        private final String schemaJson;
        private final Broadcast<SerializableConfiguration> conf;

        Factory(Options options, String schemaJson, Broadcast<SerializableConfiguration> conf) {
            this.options = options;
            this.schemaJson = schemaJson;
            this.conf = conf;
        }

        @Override public boolean supportColumnarReads(InputPartition p) { return options.records(); }

        /** A task's share of a capture read through its packets (its connections then read as rows are asked for). */
        private Capture open(File f, boolean checkRecords) {
            org.apache.hadoop.conf.Configuration c = conf == null ? null : conf.value().value();
            String path = f.path();
            Capture cap = new Capture(options.port(), checkRecords, f.part(), f.parts());
            try (Source src = Source.open(path, c, options.readTimeoutMs());
                 java.io.InputStream in = new java.io.BufferedInputStream(src.stream(), 1 << 16)) {
                cap.read(in, path);
            } catch (IOException e) { // (a file that is not a capture says so, naming it; a failed read is named here)
                cap.close();
                String why = String.valueOf(e.getMessage());
                throw Damage.of(NAME + ": " + (why.startsWith(path) ? why : path + ": could not be read: " + why));
            }
            return cap;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition p) {
            File f = (File) p;
            return new CaptureRows.Messages(open(f, true), f.path(), options.onCorrupt());
        }

        @Override
        public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
            String path = ((File) p).path();
            Capture cap = open((File) p, false);
            StructType schema = (StructType) org.apache.spark.sql.types.DataType.fromJson(schemaJson);
            return new CaptureRows.Records(cap, path, schema, options.onCorrupt());
        }
    }
}
