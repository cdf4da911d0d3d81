package kfmt.jvm;

import java.util.PriorityQueue;

/** One direction of a TCP connection put back together as its segments come, as kfmt.capture.assembly.Assembly
 * does (the same rules: the first byte after the SYN's or SYN-ACK's sequence number, else the lowest of the first
 * {@value #LOOKAHEAD} segments; a retransmission counted and kept once; a segment ahead of the next byte waits, and a
 * hole is taken once {@value #PENDING} bytes wait, or at the end), its bytes spooled ({@link Spooled}). */
final class Flow {
    static final long SEQ = 1L << 32;
    static final int PENDING = 32 << 20, LOOKAHEAD = 64;

    Long syn, synack;
    private Long start;
    private final java.util.ArrayList<Object[]> early = new java.util.ArrayList<>(); // {seq, payload, number, time}
    private long nxt;
    /** segments waiting: {stream byte, packet number, payload, time} */
    private final PriorityQueue<Object[]> waiting = new PriorityQueue<>((x, y) -> {
        int c = Long.compare((long) x[0], (long) y[0]);
        return c != 0 ? c : Long.compare((long) x[1], (long) y[1]);
    });
    private long waitingBytes;
    final Spooled bytes;
    /** (stream byte, offset in data) where each run begins */
    final java.util.ArrayList<long[]> runs = new java.util.ArrayList<>(java.util.List.of(new long[] {0, 0}));
    int repeated;
    /** where each packet's new bytes begin: stream byte, packet number, time */
    long[] markAt = new long[16], markNumber = new long[16];
    double[] markTime = new double[16];
    int marks;

    Flow(java.nio.file.Path dir, Spooled.Held held) {
        bytes = new Spooled(dir, held);
    }

    boolean empty() {
        return bytes.size == 0 && early.isEmpty() && waiting.isEmpty();
    }

    /** The bytes of the direction (after {@link #finish}: all of them). */
    long written() {
        return bytes.size;
    }

    void add(long seq, byte[] b, int at, int end, long number, double time) {
        byte[] payload = java.util.Arrays.copyOfRange(b, at, end);
        if (start == null) {
            early.add(new Object[] {seq, payload, number, time});
            if (syn == null && synack == null && early.size() < LOOKAHEAD) return;
            begin();
            return;
        }
        take(Math.floorMod(seq - start, SEQ), payload, number, time);
    }

    private void begin() {
        if (syn != null) start = (syn + 1) % SEQ;
        else if (synack != null) start = (synack + 1) % SEQ;
        else {
            long lo = Long.MAX_VALUE;
            for (Object[] e : early) lo = Math.min(lo, (long) e[0]);
            start = lo;
        }
        for (Object[] e : early) take(Math.floorMod((long) e[0] - start, SEQ), (byte[]) e[1], (long) e[2], (double) e[3]);
        early.clear();
    }

    private void take(long off, byte[] payload, long number, double time) {
        if (off > nxt) {
            waiting.add(new Object[] {off, number, payload, time});
            waitingBytes += payload.length;
            if (waitingBytes > PENDING) hole();
            return;
        }
        append(off, payload, number, time);
        drain();
    }

    private void append(long off, byte[] payload, long number, double time) {
        long end = off + payload.length;
        if (end <= nxt) {
            repeated++;
            return;
        }
        mark(nxt, number, time);
        write(payload, (int) (nxt - off));
        nxt = end;
    }

    private void drain() {
        while (!waiting.isEmpty() && (long) waiting.peek()[0] <= nxt) {
            Object[] w = waiting.poll();
            waitingBytes -= ((byte[]) w[2]).length;
            append((long) w[0], (byte[]) w[2], (long) w[1], (double) w[3]);
        }
    }

    private void hole() {
        Object[] w = waiting.poll();
        waitingBytes -= ((byte[]) w[2]).length;
        runs.add(new long[] {(long) w[0], bytes.size});
        nxt = (long) w[0];
        append((long) w[0], (byte[]) w[2], (long) w[1], (double) w[3]);
        drain();
    }

    private void mark(long at, long number, double time) {
        if (marks == markAt.length) {
            markAt = java.util.Arrays.copyOf(markAt, marks * 2);
            markNumber = java.util.Arrays.copyOf(markNumber, marks * 2);
            markTime = java.util.Arrays.copyOf(markTime, marks * 2);
        }
        markAt[marks] = at;
        markNumber[marks] = number;
        markTime[marks++] = time;
    }

    private void write(byte[] payload, int from) {
        bytes.append(payload, from, payload.length - from);
    }

    /** Every segment placed (holes taken for what never came). */
    void finish() {
        if (start == null && !early.isEmpty()) begin();
        while (!waiting.isEmpty()) hole();
        bytes.finish();
    }

    /** The spool position where the first hole is (where the bytes of stream byte 0 on end: all of them, without
     * a hole). */
    long first() {
        return runs.size() > 1 ? runs.get(1)[1] : bytes.size;
    }

    /** The number and time of the packet holding stream byte {@code position} (null: no packet does), as
     * kfmt.capture.Direction.packet_at. */
    double[] packetAt(long position) {
        int lo = 0, hi = marks; // the last mark at or before position
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (markAt[mid] <= position) lo = mid + 1;
            else hi = mid;
        }
        int i = lo - 1;
        if (i < 0 || !inside(position)) return null;
        return new double[] {markNumber[i], markTime[i]};
    }

    private boolean inside(long position) {
        long first = runs.size() > 1 ? runs.get(1)[1] : bytes.size;
        if (position < first) return true;
        for (int r = 1; r < runs.size(); r++) {
            long at = runs.get(r)[0], len = (r + 1 < runs.size() ? runs.get(r + 1)[1] : bytes.size) - runs.get(r)[1];
            if (at <= position && position < at + len) return true;
        }
        return false;
    }
}
