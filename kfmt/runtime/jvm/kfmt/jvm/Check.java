package kfmt.jvm;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** The JVM engine's reader without Spark, for differential checks (fuzz/jvm_differential.py) and fault tests: reads
 * each group of each plan file named (one JVM for all) and prints one line per group, in order, "ok rows digest" (a CRC-32 over every row's offset,
 * timestamp_ms, key, value and headers, or a quarantine row's position, raw bytes and error, serialized as
 * kfmt.spark.jvm.row_digest does) or "error message". */
public final class Check {
    static final StructType SCHEMA = StructType.fromDDL(
            "offset long, timestamp_ms long, key binary, value binary, headers array<struct<key: string, value: binary>>, "
            + "position long, error string, raw binary");

    /** Hadoop settings for stores by URI: the system properties named kfmt.hadoop.&lt;key&gt; (for example
     * -Dkfmt.hadoop.fs.s3.impl=...), as an executor gets its session's spark.hadoop.&lt;key&gt;. */
    static org.apache.hadoop.conf.Configuration hadoop() {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
        for (String k : System.getProperties().stringPropertyNames()) {
            if (k.startsWith("kfmt.hadoop.")) conf.set(k.substring("kfmt.hadoop.".length()), System.getProperty(k));
        }
        return conf;
    }

    /** Arguments: plan files, each read with the Hadoop settings so far; "--set key=value" changes one for the plan
     * files after it. */
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        org.apache.hadoop.conf.Configuration conf = hadoop();
        for (int i = 0; i < args.length; i++) {
            if ("--set".equals(args[i])) {
                String[] kv = args[++i].split("=", 2);
                conf = new org.apache.hadoop.conf.Configuration(conf);
                conf.set(kv[0], kv[1]);
                continue;
            }
            read(Plan.parse(Files.readString(Path.of(args[i]))), conf, out);
        }
        System.out.print(out);
    }

    private static void read(Plan plan, org.apache.hadoop.conf.Configuration conf, StringBuilder out) {
        for (Slice[] group : plan.groups) {
            // a task's reader: its slices in order, then its tables re-checked
            try (KafkaLog.GroupReader r = new KafkaLog.GroupReader(new SliceReader(plan, SCHEMA, conf), group, conf)) {
                CRC32 crc = new CRC32();
                long rows = 0;
                StringBuilder errors = new StringBuilder(); // the quarantine rows' errors, with -Dkfmt.check.errors=true
                while (r.next()) {
                    ColumnarBatch b = r.get();
                    for (int i = 0; i < b.numRows(); i++) {
                        row(b, i, crc);
                        if (!b.column(6).isNullAt(i)) errors.append('\t').append(b.column(6).getUTF8String(i).toString().replace('\n', ' '));
                    }
                    rows += b.numRows();
                }
                out.append("ok\t").append(rows).append('\t').append(crc.getValue());
                if (Boolean.getBoolean("kfmt.check.errors")) out.append(errors);
                out.append('\n');
            } catch (Exception e) {
                out.append("error\t").append(String.valueOf(e.getMessage()).replace('\n', ' ')).append('\n');
            }
        }
    }

    private static void row(ColumnarBatch b, int i, CRC32 crc) {
        if (!b.column(6).isNullAt(i)) { // a quarantine row: where its region starts, its raw bytes and its error
            crc.update(ByteBuffer.allocate(9).put((byte) 'Q').putLong(b.column(5).getLong(i)).array());
            blob(crc, b.column(7).getBinary(i));
            blob(crc, b.column(6).getUTF8String(i).getBytes());
            return;
        }
        ByteBuffer head = ByteBuffer.allocate(17);
        head.putLong(b.column(0).getLong(i));
        ColumnVector ts = b.column(1);
        head.put((byte) (ts.isNullAt(i) ? 0 : 1));
        head.putLong(ts.isNullAt(i) ? 0 : ts.getLong(i));
        crc.update(head.array());
        blob(crc, b.column(2).getBinary(i));
        blob(crc, b.column(3).getBinary(i));
        ColumnarArray hs = b.column(4).getArray(i);
        crc.update(ByteBuffer.allocate(4).putInt(hs.numElements()).array());
        for (int k = 0; k < hs.numElements(); k++) {
            var h = hs.getStruct(k, 2);
            blob(crc, h.getUTF8String(0).toString().getBytes(StandardCharsets.UTF_8));
            blob(crc, h.isNullAt(1) ? null : h.getBinary(1));
        }
    }

    private static void blob(CRC32 crc, byte[] v) {
        crc.update(ByteBuffer.allocate(4).putInt(v == null ? -1 : v.length).array());
        if (v != null) crc.update(v);
    }

}
