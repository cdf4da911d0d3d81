package kfmt.jvm;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/** Where a slice's bytes are read from, by position: a local file through a FileChannel, any URI through Hadoop's
 * FileSystem API, as Spark's own sources read (s3a://, gs://, abfs://, hdfs://: wherever the cluster has the
 * store's connector). A read gives at least one byte, or -1 at the end; a store that gives none repeatedly, or
 * fails, is an IOException. */
abstract class Source implements Closeable {
    /** kfmt.storage.is_uri: a scheme of two or more characters, then "://" (a Windows drive letter is a path). */
    private static final Pattern URI = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]+://.*");
    private static final int ZERO_READS = 100;

    /** Reads into bb from file position {@code at}: how many bytes (at least one), or -1 at the end. */
    abstract int read(ByteBuffer bb, long at) throws IOException;

    static boolean isUri(String path) {
        return URI.matcher(path).matches();
    }

    /** The scheme of a URI, lower-case ("" for a local path). */
    static String scheme(String path) {
        return isUri(path) ? path.substring(0, path.indexOf("://")).toLowerCase(java.util.Locale.ROOT) : "";
    }

    static Source open(String path, Configuration conf) throws IOException {
        if (!isUri(path)) return new Local(FileChannel.open(java.nio.file.Path.of(path), StandardOpenOption.READ));
        Path p = new Path(path);
        return new Hadoop(p.getFileSystem(conf != null ? conf : new Configuration()).open(p));
    }

    /** Whether this JVM has a Hadoop FileSystem for the scheme (its connector is on the classpath, or configured). */
    static boolean readable(String scheme, Configuration conf) {
        try {
            FileSystem.getFileSystemClass(scheme, conf);
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static final class Local extends Source {
        private final FileChannel channel;

        Local(FileChannel channel) {
            this.channel = channel;
        }

        @Override
        int read(ByteBuffer bb, long at) throws IOException {
            for (int zero = 0; zero < ZERO_READS; zero++) {
                int got = channel.read(bb, at);
                if (got != 0) return got;
            }
            throw new IOException("no bytes read at byte " + at + " after " + ZERO_READS + " reads");
        }

        @Override public void close() throws IOException { channel.close(); }
    }

    private static final class Hadoop extends Source {
        private final FSDataInputStream in;

        Hadoop(FSDataInputStream in) {
            this.in = in;
        }

        @Override
        int read(ByteBuffer bb, long at) throws IOException {
            for (int zero = 0; zero < ZERO_READS; zero++) {
                int got = in.read(at, bb.array(), bb.arrayOffset() + bb.position(), bb.remaining());
                if (got > 0) bb.position(bb.position() + got);
                if (got != 0) return got;
            }
            throw new IOException("no bytes read at byte " + at + " after " + ZERO_READS + " reads");
        }

        @Override public void close() throws IOException { in.close(); }
    }
}
