package kfmt.jvm;

import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.SparkSession;

/** A store by URI as the driver's Hadoop FileSystem sees it, for kfmt's planner when it runs in the driver's
 * interpreter (kfmt.spark.hadoop, through Py4J): a store only a Hadoop connector reaches ({@code hdfs://} without
 * libhdfs, a scheme of the cluster's own) is then listed and read on the driver through the same FileSystem the
 * executors read it with. One per planning request: the session's Hadoop configuration as it is then. */
public final class Stores {
    private final Configuration conf;

    private Stores(Configuration conf) {
        this.conf = conf;
    }

    /** The active session's stores (its Hadoop configuration, {@code spark.hadoop.*} included). */
    public static Stores session() {
        return new Stores(SparkSession.active().sessionState().newHadoopConf());
    }

    /** {@code F<tab>size}, {@code D} or {@code N} (nothing there). */
    public String info(String uri) throws IOException {
        Path p = new Path(uri);
        try {
            FileStatus s = p.getFileSystem(conf).getFileStatus(p);
            return s.isDirectory() ? "D" : "F\t" + s.getLen();
        } catch (FileNotFoundException e) {
            return "N";
        }
    }

    /** What is under a folder, a line each: {@code F<tab>size<tab>uri} or {@code D<tab>0<tab>uri}; every file
     * below it when {@code recursive} (folders then too). Null when the folder is not there. */
    public String list(String uri, boolean recursive) throws IOException {
        Path p = new Path(uri);
        FileSystem fs = p.getFileSystem(conf);
        StringBuilder out = new StringBuilder();
        try {
            walk(fs, p, recursive, out);
        } catch (FileNotFoundException e) {
            return null;
        }
        return out.toString();
    }

    private static void walk(FileSystem fs, Path p, boolean recursive, StringBuilder out) throws IOException {
        RemoteIterator<FileStatus> it = fs.listStatusIterator(p);
        while (it.hasNext()) {
            FileStatus s = it.next();
            out.append(s.isDirectory() ? 'D' : 'F').append('\t').append(s.isDirectory() ? 0 : s.getLen()).append('\t')
                    .append(s.getPath().toString()).append('\n');
            if (recursive && s.isDirectory()) walk(fs, s.getPath(), true, out);
        }
    }

    /** Up to {@code n} bytes of the object from {@code pos} (fewer only at its end), read as the executors read
     * (Source: the zero-read guard, each read bounded by {@code timeoutMs}; 0: none). */
    public byte[] read(String uri, long pos, int n, long timeoutMs) throws IOException {
        java.nio.ByteBuffer bb = java.nio.ByteBuffer.allocate(n);
        try (Source src = Source.open(uri, conf, timeoutMs)) {
            while (bb.hasRemaining() && src.read(bb, pos + bb.position()) >= 0) {
                // each read moves bb on
            }
        }
        return bb.hasRemaining() ? java.util.Arrays.copyOf(bb.array(), bb.position()) : bb.array();
    }
}
