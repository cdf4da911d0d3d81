import java.io.EOFException;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/** A Hadoop FileSystem for the tests (tests/test_jvm.py): a store whose objects <scheme>://<bucket>/<key> are the
 * files <kfmt.test.root>/<bucket>/<key>, read with a fault injected as kfmt.test.fault says: none; short (at most 7
 * bytes a read); zero (reads that give nothing); ioerror (an IOException for a read that reaches past byte 1,000
 * of an object); stall (each read waits kfmt.test.stall_ms); hang (a read never answers). Read-only: what the JVM engine's executors need. */
public final class KfmtTestStore extends FileSystem {
    private URI uri;
    private File root;
    private String fault;
    private long stallMs;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        super.initialize(name, conf);
        uri = URI.create(name.getScheme() + "://" + name.getAuthority());
        root = new File(conf.get("kfmt.test.root"));
        fault = conf.get("kfmt.test.fault", "none");
        stallMs = conf.getLong("kfmt.test.stall_ms", 0);
    }

    private File local(Path p) {
        URI u = p.toUri();
        return new File(new File(root, u.getAuthority()), u.getPath());
    }

    @Override public URI getUri() { return uri; }
    @Override public String getScheme() { return uri.getScheme(); }

    @Override
    public FSDataInputStream open(Path p, int bufferSize) throws IOException {
        File f = local(p);
        if (!f.isFile()) throw new FileNotFoundException(p.toString());
        return new FSDataInputStream(new Faulty(new RandomAccessFile(f, "r")));
    }

    @Override
    public FileStatus getFileStatus(Path p) throws IOException {
        File f = local(p);
        if (!f.exists()) throw new FileNotFoundException(p.toString());
        return new FileStatus(f.length(), f.isDirectory(), 1, 1 << 20, f.lastModified(), makeQualified(p));
    }

    @Override
    public FileStatus[] listStatus(Path p) throws IOException {
        File[] files = local(p).listFiles();
        if (files == null) throw new FileNotFoundException(p.toString());
        FileStatus[] out = new FileStatus[files.length];
        for (int i = 0; i < files.length; i++) out[i] = getFileStatus(new Path(p, files[i].getName()));
        return out;
    }

    private final class Faulty extends FSInputStream {
        private final RandomAccessFile f;
        private long pos;

        Faulty(RandomAccessFile f) {
            this.f = f;
        }

        @Override
        public int read(long at, byte[] b, int off, int len) throws IOException {
            if (len == 0) return 0;
            if ("zero".equals(fault)) return 0;
            if ("stall".equals(fault) || "hang".equals(fault)) {
                try {
                    Thread.sleep("hang".equals(fault) ? 600_000 : stallMs); // hang: a store that never answers
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted");
                }
            }
            if ("ioerror".equals(fault) && at + len > 1000 && f.length() > 1000)
                throw new IOException("injected: connection reset by the store");
            if ("short".equals(fault)) len = Math.min(len, 7);
            if (at >= f.length()) return -1;
            f.seek(at);
            int got = f.read(b, off, len);
            return got;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int got = read(pos, one, 0, 1);
            if (got > 0) pos++;
            return got > 0 ? one[0] & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int got = read(pos, b, off, len);
            if (got > 0) pos += got;
            return got;
        }

        @Override
        public void seek(long p) throws IOException {
            if (p < 0) throw new EOFException("negative seek");
            pos = p;
        }

        @Override public long getPos() { return pos; }
        @Override public boolean seekToNewSource(long p) { return false; }
        @Override public void close() throws IOException { f.close(); }
    }

    // ------------------------------------------------------------------ read-only
    @Override
    public FSDataOutputStream create(Path p, FsPermission perm, boolean overwrite, int bufferSize, short replication,
            long blockSize, Progressable progress) throws IOException {
        throw new IOException("read-only test store");
    }

    @Override
    public FSDataOutputStream append(Path p, int bufferSize, Progressable progress) throws IOException {
        throw new IOException("read-only test store");
    }

    @Override public boolean rename(Path a, Path b) throws IOException { throw new IOException("read-only test store"); }
    @Override public boolean delete(Path p, boolean recursive) throws IOException { throw new IOException("read-only test store"); }
    @Override public boolean mkdirs(Path p, FsPermission perm) throws IOException { throw new IOException("read-only test store"); }
    @Override public void setWorkingDirectory(Path p) {}
    @Override public Path getWorkingDirectory() { return new Path(uri.toString() + "/"); }
}
