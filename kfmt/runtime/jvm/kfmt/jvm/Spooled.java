package kfmt.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** One direction's bytes in stream order, as kfmt.capture.assembly keeps them: in memory while small, then in a
 * spool file of the capture's temporary folder (appended in chunks, never all held), read back by position through
 * a window. Memory stays bounded by the chunk and the window, not by the capture. */
final class Spooled {
    /** bytes held before they go to the file; and the window read back at once (system properties
     * kfmt.capture.chunk and kfmt.capture.window: the tests make them small, to read every capture through files) */
    static final int CHUNK = Math.max(16, Integer.getInteger("kfmt.capture.chunk", 1 << 20)),
            WINDOW = Math.max(16, Integer.getInteger("kfmt.capture.window", 4 << 20));
    /** The bytes all the directions of a capture hold in memory: past {@link #LIMIT}, a direction that grows writes
     * what it holds to its file (a capture of thousands of connections holds at most this much, not a chunk each). */
    static final class Held {
        static final long LIMIT = Math.max(16, Long.getLong("kfmt.capture.memory", 64L << 20));
        long bytes;
    }

    private final Path dir;
    private final Held held;
    private Path file;
    private byte[] mem = new byte[256];
    private int memLen;
    long size;
    private FileChannel read;
    private byte[] win;
    private long winStart = -1;
    private int winLen;

    Spooled(Path dir, Held held) {
        this.dir = dir;
        this.held = held;
    }

    void append(byte[] b, int off, int n) {
        if (held.bytes + n > Held.LIMIT && memLen > 0) flush();
        if (memLen + n > mem.length) {
            if (memLen + n > CHUNK) {
                flush();
                if (n > CHUNK) {
                    write(b, off, n);
                    size += n;
                    return;
                }
            }
            if (memLen + n > mem.length) mem = java.util.Arrays.copyOf(mem, Math.max(memLen + n, Math.min(CHUNK, mem.length * 2)));
        }
        System.arraycopy(b, off, mem, memLen, n);
        memLen += n;
        held.bytes += n;
        size += n;
    }

    private void flush() {
        if (memLen == 0) return;
        write(mem, 0, memLen);
        held.bytes -= memLen;
        memLen = 0;
        if (mem.length > (1 << 12)) mem = new byte[256]; // (what it held is on file: its room given back)
    }

    private void write(byte[] b, int off, int n) {
        try {
            if (file == null) file = Files.createTempFile(dir, "direction-", ".bin");
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                ByteBuffer bb = ByteBuffer.wrap(b, off, n);
                while (bb.hasRemaining()) ch.write(bb);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("kafka-capture: the spool file of a connection could not be written: " + e.getMessage(), e);
        }
    }

    /** No more bytes: what is held goes to the file (when there is one), which is opened for reading. */
    void finish() {
        if (file == null) return; // (all in memory)
        flush();
        try {
            read = FileChannel.open(file, StandardOpenOption.READ);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The file removed (its bytes read). */
    void close() {
        try {
            if (read != null) read.close();
            if (file != null) Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        read = null;
        win = null;
    }

    /** The window covering [p, p + n) (n at most WINDOW); returns p's index in {@link #buf}. */
    private int at(long p, int n) {
        if (file == null) return (int) p;
        if (win == null) win = new byte[WINDOW];
        if (p < winStart || p + n > winStart + winLen) {
            winStart = p;
            winLen = (int) Math.min(WINDOW, size - p);
            ByteBuffer bb = ByteBuffer.wrap(win, 0, winLen);
            try {
                while (bb.hasRemaining()) if (read.read(bb, p + bb.position()) < 0) break;
            } catch (IOException e) {
                throw new UncheckedIOException("kafka-capture: the spool file of a connection could not be read: " + e.getMessage(), e);
            }
        }
        return (int) (p - winStart);
    }

    private byte[] buf() {
        return file == null ? mem : win;
    }

    int u8(long p) {
        int i = at(p, 1);
        return buf()[i] & 0xff;
    }

    int i16(long p) {
        int i = at(p, 2);
        return (int) Ctx.i16(buf(), i);
    }

    int i32(long p) {
        int i = at(p, 4);
        return (int) Ctx.i32(buf(), i);
    }

    /** Bytes [p, p + n) as an array of their own. */
    byte[] copy(long p, int n) {
        byte[] out = new byte[n];
        if (file == null) {
            System.arraycopy(mem, (int) p, out, 0, n);
            return out;
        }
        if (n <= WINDOW) {
            System.arraycopy(win(p, n), (int) (p - winStart), out, 0, n);
            return out;
        }
        ByteBuffer bb = ByteBuffer.wrap(out);
        try {
            while (bb.hasRemaining()) if (read.read(bb, p + bb.position()) < 0) break;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    private byte[] win(long p, int n) {
        at(p, n);
        return win;
    }
}
