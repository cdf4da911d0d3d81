package kfmt.jvm;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;

/** What a kafka-capture path names: a capture file (read whatever it holds: a file that is not one is the read's
 * one-line error), a folder (every capture file under it, by its first four bytes, hidden files and those whose
 * names start with "_" left out, as Spark's file sources leave them), or a glob; local, or in a store by URI
 * through Hadoop's FileSystem API as kafka-log reads. In path order, each file once. */
final class CaptureFiles {
    private CaptureFiles() {}

    /** Each capture file the paths name, with its size, in path order. */
    static java.util.SortedMap<String, Long> list(List<String> paths, Configuration conf) {
        java.util.TreeMap<String, Long> out = new java.util.TreeMap<>();
        for (String p : paths) {
            java.util.Map<String, Long> found;
            try {
                found = expand(p, conf);
            } catch (IOException e) {
                throw new IllegalArgumentException(KafkaCapture.NAME + ": " + p + ": " + e.getMessage(), e);
            }
            if (found.isEmpty()) throw new IllegalArgumentException(KafkaCapture.NAME + ": no capture at " + p);
            out.putAll(found);
        }
        return out;
    }

    private static java.util.Map<String, Long> expand(String p, Configuration conf) throws IOException {
        boolean uri = Source.isUri(p);
        Path path = new Path(p);
        FileSystem fs = uri ? path.getFileSystem(conf) : FileSystem.getLocal(conf);
        FileStatus[] matched = fs.globStatus(path);
        java.util.Map<String, Long> out = new java.util.LinkedHashMap<>();
        if (matched == null) return out;
        for (FileStatus s : matched) {
            if (!s.isDirectory()) {
                out.put(name(s.getPath(), uri), s.getLen());
                continue;
            }
            RemoteIterator<LocatedFileStatus> it = fs.listFiles(s.getPath(), true);
            while (it.hasNext()) {
                LocatedFileStatus f = it.next();
                String base = f.getPath().getName();
                if (base.startsWith(".") || base.startsWith("_") || !isCapture(fs, f.getPath())) continue;
                out.put(name(f.getPath(), uri), f.getLen());
            }
        }
        return out;
    }

    /** A local file's path as the user writes it (no file: scheme); a store's URI as it is. */
    private static String name(Path p, boolean uri) {
        return uri ? p.toString() : p.toUri().getPath();
    }

    private static boolean isCapture(FileSystem fs, Path p) throws IOException {
        byte[] magic = new byte[4];
        try (var in = fs.open(p)) {
            return in.read(0, magic, 0, 4) == 4 && Pcap.isCapture(magic);
        }
    }
}
