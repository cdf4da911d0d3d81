package kfmt.jvm;

import java.io.IOException;
import java.io.InputStream;

/** kfmt.capture's reading of a capture file, in the JVM (the kafka-capture source): pcap (microsecond and nanosecond,
 * either byte order) and pcapng (every section with its byte order, every interface with its own link type,
 * timestamp resolution and offset; enhanced, simple and obsolete packet blocks), read as a stream, packet by packet.
 * A file that ends inside a packet record is said ({@link #cut}), as kfmt.capture._segments says it. */
final class Pcap {
    /** One packet: its number in the capture (from 1, as Wireshark counts), link type, time (NaN: none), bytes. */
    static final class Packet {
        long number;
        int link;
        double time;
        byte[] b = new byte[0];
        int len;
    }

    private final InputStream in;
    private final boolean ng;
    private boolean le, nano;
    private int link;
    /** a pcapng section's interfaces: link type, units per second, offset in seconds */
    private final java.util.ArrayList<double[]> interfaces = new java.util.ArrayList<>();
    /** bytes read, and where the last whole record read ends */
    private long pos, done;
    private long number;
    private byte[] block = new byte[1 << 16];

    private Pcap(InputStream in, boolean ng) {
        this.in = in;
        this.ng = ng;
    }

    /** kfmt.capture's magic numbers: a pcapng section header, pcap's four. */
    static final int PCAPNG = 0x0a0d0d0a;

    /** A reader of the capture {@code in} whose first four bytes are {@code magic} (read already), or a one-line
     * error naming the file when it is neither pcap nor pcapng. */
    static Pcap open(InputStream in, byte[] magic, String name) throws IOException {
        int m = (int) Ctx.i32(magic, 0);
        Pcap p = new Pcap(in, m == PCAPNG);
        p.pos = 4;
        if (m == PCAPNG) {
            System.arraycopy(magic, 0, p.block, 0, 4);
            return p;
        }
        switch (m) {
            case 0xd4c3b2a1 -> p.le = true;
            case 0x4d3cb2a1 -> { p.le = true; p.nano = true; }
            case 0xa1b2c3d4 -> p.le = false;
            case 0xa1b23c4d -> p.nano = true;
            default -> throw new IOException(name + ": not a pcap or pcapng capture (its first bytes are "
                    + java.util.HexFormat.of().formatHex(magic) + ")");
        }
        return p;
    }

    /** Whether the file's first four bytes are a capture's (kfmt.capture.is_capture). */
    static boolean isCapture(byte[] magic) {
        int m = (int) Ctx.i32(magic, 0);
        return m == PCAPNG || m == 0xd4c3b2a1 || m == 0x4d3cb2a1 || m == 0xa1b2c3d4 || m == 0xa1b23c4d;
    }

    /** The next packet into {@code p}; false at the end, or where the file ends inside a record (see {@link #cut}). */
    boolean next(Packet p) throws IOException {
        try {
            return ng ? nextBlock(p) : nextRecord(p);
        } catch (Cut e) {
            return false;
        }
    }

    /** What the file has after its last whole record (read to its end): 0 for a whole file. */
    long cut() throws IOException {
        long rest = pos;
        byte[] skip = new byte[1 << 16];
        for (int n; (n = in.read(skip)) > 0; ) rest += n;
        return rest - done;
    }

    long done() {
        return done;
    }

    private static final class Cut extends Exception {
        @Override public synchronized Throwable fillInStackTrace() { return this; }
    }

    private static final Cut CUT = new Cut();

    private boolean nextRecord(Packet p) throws IOException, Cut {
        if (pos == 4) {
            if (!fill(block, 4, 20)) throw CUT;
            link = u32(block, 20);
            done = pos;
        }
        int got = read(block, 0, 16);
        if (got == 0) return false;
        if (got < 16) throw CUT;
        long sec = u32(block, 0) & 0xffffffffL, frac = u32(block, 4) & 0xffffffffL;
        int caplen = u32(block, 8);
        if (caplen < 0) throw CUT;
        room(p, caplen);
        if (!fill(p.b, 0, caplen)) throw CUT;
        done = pos;
        p.len = caplen;
        p.link = link;
        p.time = sec + frac / (nano ? 1e9 : 1e6);
        p.number = ++number;
        return true;
    }

    private boolean nextBlock(Packet p) throws IOException, Cut {
        while (true) {
            int head = pos == 4 ? 4 + read(block, 4, 4) : read(block, 0, 8);
            if (head == 0) return false;
            if (head < 8) throw CUT;
            int h = 8;
            if ((int) Ctx.i32(block, 0) == PCAPNG) { // a section begins: its byte order mark says how it is written
                if (read(block, 8, 4) < 4) throw CUT;
                le = (int) Ctx.i32(block, 8) == 0x4d3c2b1a;
                interfaces.clear();
                h = 12;
            }
            int kind = u32(block, 0), size = u32(block, 4);
            if (size < h || size % 4 != 0) throw CUT;
            if (block.length < size) block = java.util.Arrays.copyOf(block, size);
            if (!fill(block, h, size - h)) throw CUT;
            done = pos;
            if (packet(kind, size, p)) return true;
        }
    }

    /** A block read: an interface's description kept, a packet's given (true). */
    private boolean packet(int kind, int size, Packet p) throws Cut {
        switch (kind) {
            case 1 -> interfaces.add(iface(size));
            case 6, 2 -> { // enhanced packet block; the obsolete packet block (a 16-bit interface id)
                int id = kind == 6 ? u32(block, 8) : u16(block, 8);
                if (id < 0 || id >= interfaces.size()) throw CUT;
                double[] f = interfaces.get(id);
                long ts = ((u32(block, 12) & 0xffffffffL) << 32) | (u32(block, 16) & 0xffffffffL);
                int caplen = u32(block, 20);
                if (caplen < 0 || 28 + caplen > size) throw CUT;
                give(p, (int) f[0], f[2] + ts / f[1], 28, caplen);
                return true;
            }
            case 3 -> { // simple packet block: no time, the section's first interface
                if (interfaces.isEmpty()) throw CUT;
                long length = u32(block, 8) & 0xffffffffL;
                give(p, (int) interfaces.get(0)[0], Double.NaN, 12, (int) Math.max(0, Math.min(length, size - 16)));
                return true;
            }
            default -> { }
        }
        return false;
    }

    private void give(Packet p, int link, double time, int at, int n) {
        room(p, n);
        System.arraycopy(block, at, p.b, 0, n);
        p.len = n;
        p.link = link;
        p.time = time;
        p.number = ++number;
    }

    /** An interface description block: link type, timestamp units per second (if_tsresol, option 9), offset in
     * seconds (if_tsoffset, option 14); microseconds and no offset unless it says otherwise. */
    private double[] iface(int size) throws Cut {
        if (size < 20) throw CUT;
        double divisor = 1e6, offset = 0;
        for (int at = 16; at + 4 <= size - 4; ) {
            int code = u16(block, at), n = u16(block, at + 2);
            if (code == 0) break;
            if (at + 4 + n > size - 4) throw CUT;
            if (code == 9 && n >= 1) {
                int v = block[at + 4] & 0xff;
                divisor = Math.pow((v & 0x80) != 0 ? 2 : 10, v & 0x7f);
            } else if (code == 14 && n >= 8) {
                long o = le ? Long.reverseBytes(Ctx.i64(block, at + 4)) : Ctx.i64(block, at + 4);
                offset = o;
            }
            at += 4 + ((n + 3) & ~3);
        }
        return new double[] {u16(block, 8), divisor, offset};
    }

    private static void room(Packet p, int n) {
        if (p.b.length < n) p.b = new byte[Math.max(n, p.b.length * 2)];
    }

    private int u32(byte[] b, int at) {
        int v = (int) Ctx.i32(b, at);
        return le ? Integer.reverseBytes(v) : v;
    }

    private int u16(byte[] b, int at) {
        int v = ((b[at] & 0xff) << 8) | (b[at + 1] & 0xff);
        return le ? ((v & 0xff) << 8) | (v >>> 8) : v;
    }

    /** Up to n bytes into b at off: how many (fewer only at the file's end). */
    private int read(byte[] b, int off, int n) throws IOException {
        int got = in.readNBytes(b, off, n);
        pos += got;
        return got;
    }

    private boolean fill(byte[] b, int off, int n) throws IOException {
        return read(b, off, n) == n;
    }
}
