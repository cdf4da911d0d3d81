package kfmt.jvm;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
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
    /** A URI's scheme: two or more characters, then "://" (a Windows drive letter is a path); group 1 the scheme. */
    static final Pattern SCHEME = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]+)://");
    private static final int ZERO_READS = 100;

    /** Reads into bb from file position {@code at}: how many bytes (at least one), or -1 at the end. */
    final int read(ByteBuffer bb, long at) throws IOException {
        for (int zero = 0; zero < ZERO_READS; zero++) {
            int got = readOnce(bb, at);
            if (got != 0) return got;
        }
        throw new IOException("no bytes read at byte " + at + " after " + ZERO_READS + " reads");
    }

    /** One read into bb (advancing its position) from file position {@code at}: bytes read, 0, or -1 at the end. */
    abstract int readOnce(ByteBuffer bb, long at) throws IOException;

    /** Whether the path names a store by URI (it starts with a scheme) rather than a local file. */
    static boolean isUri(String path) {
        return SCHEME.matcher(path).lookingAt();
    }

    /** A local file, or a store's object by URI whose every read fails after {@code timeoutMs} without an answer
     * (0: reads wait as long as the store's connector lets them). */
    static Source open(String path, Configuration conf, long timeoutMs) throws IOException {
        if (!isUri(path)) return new Local(FileChannel.open(java.nio.file.Path.of(path), StandardOpenOption.READ));
        Path p = new Path(path);
        return new Hadoop(p.getFileSystem(conf != null ? conf : new Configuration()).open(p), timeoutMs);
    }

    /** A small file's bytes (kfmt's table journal and marker), or null when there is none; reads as a slice's are
     * read (the zero-read guard, {@code timeoutMs} for a store). */
    static byte[] readAll(String path, Configuration conf, long timeoutMs) throws IOException {
        if (!isUri(path) && !java.nio.file.Files.isRegularFile(java.nio.file.Path.of(path))) return null;
        // (a store's connector may say an object is missing at open or at its first read)
        try (Source src = open(path, conf, timeoutMs)) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            ByteBuffer bb = ByteBuffer.allocate(8192);
            for (long at = 0; ; ) {
                bb.clear();
                int got = src.read(bb, at);
                if (got < 0) return out.toByteArray();
                out.write(bb.array(), 0, got);
                at += got;
            }
        } catch (java.io.FileNotFoundException | java.nio.file.NoSuchFileException e) {
            return null;
        }
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

    /** kfmt.storage.COMPRESSED_OBJECTS: the magic of an object stored compressed whole, and its compression. */
    private static final byte[][] MAGICS = {
        {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd}, {0x1f, (byte) 0x8b}, {0x04, 0x22, 0x4d, 0x18},
        {(byte) 0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'},
    };
    private static final String[] PACKED = {"zstd", "gzip", "lz4", "snappy (framed)"};

    /** kfmt.storage.compressed_object: the compression the object is stored with as a whole, or null. */
    String packed() throws IOException {
        ByteBuffer head = ByteBuffer.allocate(16);
        while (head.hasRemaining() && read(head, head.position()) > 0) { /* the first 16 bytes, or all there are */ }
        for (int k = 0; k < MAGICS.length; k++) {
            if (head.position() < MAGICS[k].length) continue;
            if (java.util.Arrays.equals(head.array(), 0, MAGICS[k].length, MAGICS[k], 0, MAGICS[k].length)) return PACKED[k];
        }
        return null;
    }

    /** kfmt.storage.open_segment: this object, stored compressed whole, decompressed into a temporary file (memory
     * stays flat; the file is removed when the returned source is closed, and this one is closed). */
    Source decompressed(String packed) throws IOException {
        java.nio.file.Path tmp = java.nio.file.Files.createTempFile("kfmt-object-", ".log");
        try (InputStream in = decompressing(packed, new Sequential(this))) {
            java.nio.file.Files.copy(in, tmp, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            return new Local(FileChannel.open(tmp, StandardOpenOption.READ, StandardOpenOption.DELETE_ON_CLOSE));
        } catch (IOException | RuntimeException e) {
            java.nio.file.Files.deleteIfExists(tmp);
            throw e;
        } finally {
            close();
        }
    }

    private static InputStream decompressing(String packed, InputStream in) throws IOException {
        switch (packed) {
            case "zstd": return new com.github.luben.zstd.ZstdInputStream(in); // frame after frame
            case "gzip": return new java.util.zip.GZIPInputStream(in, 1 << 16); // member after member
            case "lz4": return new net.jpountz.lz4.LZ4FrameInputStream(in);
            default: return new org.xerial.snappy.SnappyFramedInputStream(in);
        }
    }

    /** The source read from its start, in order. */
    /** This source read from its first byte on, as a stream. */
    InputStream stream() {
        return new Sequential(this);
    }

    private static final class Sequential extends InputStream {
        private final Source src;
        private long at;

        Sequential(Source src) {
            this.src = src;
        }

        @Override
        public int read(byte[] b, int off, int n) throws IOException {
            if (n == 0) return 0;
            int got = src.read(ByteBuffer.wrap(b, off, n), at);
            if (got > 0) at += got;
            return got;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }
    }

    /** The size of a local source (a decompressed temporary file); -1 for a store's (its slices carry their ends). */
    long size() throws IOException {
        return this instanceof Local l ? l.channel.size() : -1;
    }

    /** Bytes in memory as a source (a record set on the wire, read by the log reader as a slice). */
    static final class Memory extends Source {
        private final byte[] b;
        private final int off, n;

        Memory(byte[] b, int off, int n) {
            this.b = b;
            this.off = off;
            this.n = n;
        }

        @Override
        int readOnce(ByteBuffer bb, long at) {
            if (at >= n) return -1;
            int k = (int) Math.min(bb.remaining(), n - at);
            bb.put(b, off + (int) at, k);
            return k;
        }

        @Override public void close() {}
    }

    private static final class Local extends Source {
        private final FileChannel channel;

        Local(FileChannel channel) {
            this.channel = channel;
        }

        @Override
        int readOnce(ByteBuffer bb, long at) throws IOException {
            return channel.read(bb, at);
        }

        @Override public void close() throws IOException { channel.close(); }
    }

    private static final class Hadoop extends Source {
        private final FSDataInputStream in;
        private final long timeoutMs;
        private java.util.concurrent.ExecutorService reads; // one daemon thread, for reads with a deadline

        Hadoop(FSDataInputStream in, long timeoutMs) {
            this.in = in;
            this.timeoutMs = timeoutMs;
        }

        @Override
        int readOnce(ByteBuffer bb, long at) throws IOException {
            byte[] a = bb.array();
            int off = bb.arrayOffset() + bb.position(), n = bb.remaining();
            int got = timeoutMs > 0 ? bounded(() -> in.read(at, a, off, n)) : in.read(at, a, off, n);
            if (got > 0) bb.position(bb.position() + got);
            return got;
        }

        /** The read, or an IOException when the store has not answered in time (the read is interrupted and left). */
        private int bounded(java.util.concurrent.Callable<Integer> read) throws IOException {
            if (reads == null) {
                reads = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "kfmt-store-read");
                    t.setDaemon(true);
                    return t;
                });
            }
            java.util.concurrent.Future<Integer> f = reads.submit(read);
            try {
                return f.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                f.cancel(true);
                reads.shutdownNow();
                reads = null; // a stuck read keeps its thread: the next read gets a new one
                throw new IOException("the store gave no answer in " + timeoutMs / 1000.0 + " s (option read_timeout)");
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof IOException io) throw io;
                throw new IOException(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }

        @Override
        public void close() throws IOException {
            if (reads != null) reads.shutdownNow();
            in.close();
        }
    }
}
