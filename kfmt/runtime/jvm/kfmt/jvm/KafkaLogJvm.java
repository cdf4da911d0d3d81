package kfmt.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
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
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** {@code spark.read.format("kafka-log-jvm")}: kfmt's kafka-log source decoded on the JVM, into Spark's columns.
 * It reads the plan kfmt.spark.jvm makes on the driver (option {@code plan}) and the schema it gives; only the
 * columns a query reads are built. */
public final class KafkaLogJvm implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "kafka-log-jvm";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String ddl = options.get("schema_ddl");
        if (ddl == null) throw new IllegalArgumentException("kafka-log-jvm: load it through kfmt.spark.read(..., engine='jvm')");
        return StructType.fromDDL(ddl);
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new LogTable(schema, properties.get("plan"));
    }

    static final class LogTable implements SupportsRead {
        private final StructType schema;
        private final String plan;

        LogTable(StructType schema, String plan) {
            this.schema = schema;
            this.plan = plan;
        }

        @Override public String name() { return "kafka-log-jvm"; }
        @Override public StructType schema() { return schema; }
        @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.BATCH_READ); }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            if (plan == null) throw new IllegalArgumentException("kafka-log-jvm: no plan: load it through kfmt.spark.read(..., engine='jvm')");
            return new LogScan(schema, Plan.parse(plan));
        }
    }

    static final class LogScan implements ScanBuilder, SupportsPushDownRequiredColumns, Scan, Batch {
        private StructType schema;
        private final Plan plan;

        LogScan(StructType schema, Plan plan) {
            this.schema = schema;
            this.plan = plan;
        }

        @Override public void pruneColumns(StructType required) { schema = required; }
        @Override public Scan build() { return this; }
        @Override public StructType readSchema() { return schema; }
        @Override public String description() { return "kafka-log-jvm (kfmt, " + plan.groups.size() + " input partitions)"; }
        @Override public Batch toBatch() { return this; }

        @Override
        public InputPartition[] planInputPartitions() {
            InputPartition[] out = new InputPartition[plan.groups.size()];
            for (int i = 0; i < out.length; i++) out[i] = new Group(plan.groups.get(i));
            return out;
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            Plan shipped = new Plan();
            shipped.limits = plan.limits;
            shipped.includeControl = plan.includeControl;
            shipped.nullEmptyHeaders = plan.nullEmptyHeaders;
            shipped.format = plan.format;
            shipped.chunkBytes = plan.chunkBytes;
            return new Factory(shipped, schema);
        }
    }

    record Group(Slice[] slices) implements InputPartition {}

    static final class Factory implements PartitionReaderFactory, Serializable {
        private final Plan plan;
        private final String schemaJson;

        Factory(Plan plan, StructType schema) {
            this.plan = plan;
            this.schemaJson = schema.json();
        }

        @Override public boolean supportColumnarReads(InputPartition p) { return true; }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition p) {
            throw new UnsupportedOperationException("kafka-log-jvm reads columns");
        }

        @Override
        public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
            return new GroupReader(plan, (StructType) DataType.fromJson(schemaJson), ((Group) p).slices());
        }
    }

    static final class GroupReader implements PartitionReader<ColumnarBatch> {
        private final SliceReader reader;
        private final Slice[] slices;
        private int next;
        private boolean open;
        private ColumnarBatch current;

        GroupReader(Plan plan, StructType schema, Slice[] slices) {
            this.reader = new SliceReader(plan, schema);
            this.slices = slices;
        }

        @Override
        public boolean next() throws IOException {
            while (true) {
                if (!open) {
                    if (next >= slices.length) return false;
                    reader.open(slices[next++]);
                    open = true;
                }
                current = reader.next();
                if (current != null) return true;
                open = false;
            }
        }

        @Override public ColumnarBatch get() { return current; }
        @Override public void close() throws IOException { reader.close(); }
    }
}
