package kfmt.jvm;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/** Read-only Spark column vectors over the sink's arrays (no copy into Spark's own vectors). */
final class Cols {
    private Cols() {}

    /** Every accessor refused; each vector overrides what its type reads. */
    abstract static class Base extends ColumnVector {
        final int rows;

        Base(DataType t, int rows) {
            super(t);
            this.rows = rows;
        }

        @Override public void close() {}
        @Override public boolean hasNull() { return numNulls() > 0; }
        @Override public int numNulls() { int k = 0; for (int i = 0; i < rows; i++) if (isNullAt(i)) k++; return k; }
        @Override public boolean isNullAt(int r) { return false; }
        @Override public boolean getBoolean(int r) { throw new UnsupportedOperationException(); }
        @Override public byte getByte(int r) { throw new UnsupportedOperationException(); }
        @Override public short getShort(int r) { throw new UnsupportedOperationException(); }
        @Override public int getInt(int r) { throw new UnsupportedOperationException(); }
        @Override public long getLong(int r) { throw new UnsupportedOperationException(); }
        @Override public float getFloat(int r) { throw new UnsupportedOperationException(); }
        @Override public double getDouble(int r) { throw new UnsupportedOperationException(); }
        @Override public ColumnarArray getArray(int r) { throw new UnsupportedOperationException(); }
        @Override public ColumnarMap getMap(int r) { throw new UnsupportedOperationException(); }
        @Override public Decimal getDecimal(int r, int p, int s) { throw new UnsupportedOperationException(); }
        @Override public UTF8String getUTF8String(int r) { throw new UnsupportedOperationException(); }
        @Override public byte[] getBinary(int r) { throw new UnsupportedOperationException(); }
        @Override public ColumnVector getChild(int i) { throw new UnsupportedOperationException(); }
    }

    /** int64 values times {@code scale} (1000: milliseconds as Spark's microsecond timestamps); {@code nulls}
     * marks nulls (null: none). */
    static final class Longs extends Base {
        final long[] v;
        final byte[] nulls;
        final long scale;

        Longs(DataType t, int rows, long[] v, byte[] nulls, long scale) {
            super(t, rows);
            this.v = v;
            this.nulls = nulls;
            this.scale = scale;
        }

        @Override public boolean isNullAt(int r) { return nulls != null && nulls[r] != 0; }
        @Override public int numNulls() { return nulls == null ? 0 : super.numNulls(); }
        @Override public long getLong(int r) { return v[r] * scale; }
    }

    static final class Ints extends Base {
        final int[] v;

        Ints(DataType t, int rows, int[] v) {
            super(t, rows);
            this.v = v;
        }

        @Override public int numNulls() { return 0; }
        @Override public int getInt(int r) { return v[r]; }
    }

    static final class Bools extends Base {
        final boolean[] v;

        Bools(DataType t, int rows, boolean[] v) {
            super(t, rows);
            this.v = v;
        }

        @Override public int numNulls() { return 0; }
        @Override public boolean getBoolean(int r) { return v[r]; }
    }

    /** Variable-length values: row r is data[off[r], off[r + 1]); a negative off[r + 1] - off[r]... no: nulls. */
    static final class Bytes extends Base {
        final byte[] data;
        final int[] off;
        final byte[] nulls;

        Bytes(DataType t, int rows, byte[] data, int[] off, byte[] nulls) {
            super(t, rows);
            this.data = data;
            this.off = off;
            this.nulls = nulls;
        }

        @Override public boolean isNullAt(int r) { return nulls != null && nulls[r] != 0; }
        @Override public int numNulls() { return nulls == null ? 0 : super.numNulls(); }
        @Override public byte[] getBinary(int r) { return isNullAt(r) ? null : Arrays.copyOfRange(data, off[r], off[r + 1]); }
        @Override public UTF8String getUTF8String(int r) {
            return isNullAt(r) ? null : UTF8String.fromBytes(data, off[r], off[r + 1] - off[r]);
        }
    }

    /** One value for every row (topic, partition, file), or null (error, raw: the JVM engine quarantines nothing). */
    static final class Same extends Base {
        final UTF8String text;
        final int number;
        final boolean isNull;

        Same(DataType t, int rows, String text, int number, boolean isNull) {
            super(t, rows);
            this.text = text == null ? null : UTF8String.fromString(text);
            this.number = number;
            this.isNull = isNull;
        }

        @Override public boolean isNullAt(int r) { return isNull; }
        @Override public int numNulls() { return isNull ? rows : 0; }
        @Override public int getInt(int r) { return number; }
        @Override public UTF8String getUTF8String(int r) { return isNull ? null : text; }
        @Override public byte[] getBinary(int r) { return null; }
    }

    /** The codec name of each row's batch. */
    static final class Codec extends Base {
        private static final UTF8String[] NAMES = new UTF8String[5];

        static {
            for (int i = 0; i < 5; i++) NAMES[i] = UTF8String.fromString(Codecs.name(i));
        }

        final byte[] v;

        Codec(DataType t, int rows, byte[] v) {
            super(t, rows);
            this.v = v;
        }

        @Override public int numNulls() { return 0; }
        @Override public UTF8String getUTF8String(int r) { return NAMES[v[r]]; }
    }

    /** array<struct<key, value>>: row r holds entries off[r] to off[r + 1] of the struct vector. */
    static final class Headers extends Base {
        final int[] off;
        final ColumnVector entries;
        final boolean nullWhenEmpty;

        Headers(DataType t, int rows, int[] off, ColumnVector entries, boolean nullWhenEmpty) {
            super(t, rows);
            this.off = off;
            this.entries = entries;
            this.nullWhenEmpty = nullWhenEmpty;
        }

        @Override public boolean isNullAt(int r) { return nullWhenEmpty && off[r] == off[r + 1]; }
        @Override public int numNulls() { return nullWhenEmpty ? super.numNulls() : 0; }
        @Override public ColumnarArray getArray(int r) {
            return isNullAt(r) ? null : new ColumnarArray(entries, off[r], off[r + 1] - off[r]);
        }
    }

    static final class Struct extends Base {
        final ColumnVector[] children;

        Struct(DataType t, int rows, ColumnVector... children) {
            super(t, rows);
            this.children = children;
        }

        @Override public int numNulls() { return 0; }
        @Override public ColumnVector getChild(int i) { return children[i]; }
    }

    /** Header keys as Kafka's Java consumer reads them: U+FFFD for each byte that is not UTF-8. */
    static byte[] kafkaUtf8(byte[] b, int p, int n) {
        for (int i = 0; i < n; i++) {
            if (b[p + i] < 0) return new String(b, p, n, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
        }
        return null; // ASCII: as it is
    }
}
