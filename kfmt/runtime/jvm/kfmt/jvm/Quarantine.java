package kfmt.jvm;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** A quarantine row (on_corrupt=quarantine), as kfmt.log.arrow's: the damaged region's file, topic, partition,
 * position, error and raw bytes; no headers; every other column null. */
final class Quarantine {
    private Quarantine() {}

    static ColumnarBatch row(StructType schema, Slice s, long position, String error, byte[] raw, boolean nullEmptyHeaders) {
        StructField[] fields = schema.fields();
        ColumnVector[] cols = new ColumnVector[fields.length];
        for (int i = 0; i < fields.length; i++) {
            DataType t = fields[i].dataType();
            cols[i] = switch (fields[i].name()) {
                case "topic" -> new Cols.Same(t, 1, s.topic, 0, false);
                case "partition" -> new Cols.Same(t, 1, null, s.partition, false);
                case "file" -> new Cols.Same(t, 1, s.path, 0, false);
                case "position" -> new Cols.Longs(t, 1, new long[] {position}, null, 1);
                case "error" -> one(t, error.getBytes(StandardCharsets.UTF_8));
                case "raw" -> one(t, raw);
                case "headers" -> noHeaders(t, nullEmptyHeaders);
                default -> new Cols.Same(t, 1, null, 0, true);
            };
        }
        return new ColumnarBatch(cols, 1);
    }

    private static ColumnVector one(DataType t, byte[] value) {
        return new Cols.Bytes(t, 1, value, new int[] {0, value.length}, null);
    }

    private static ColumnVector noHeaders(DataType t, boolean nullEmpty) {
        StructType entry = (StructType) ((ArrayType) t).elementType();
        ColumnVector k = new Cols.Bytes(entry.fields()[0].dataType(), 0, new byte[0], new int[] {0}, null);
        ColumnVector v = new Cols.Bytes(entry.fields()[1].dataType(), 0, new byte[0], new int[] {0}, null);
        return new Cols.Headers(t, 1, new int[] {0, 0}, new Cols.Struct(entry, 0, k, v), nullEmpty);
    }
}
