package kfmt.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/** A capture file read in the JVM as {@code kfmt dump CAPTURE} reads it (kfmt.capture and
 * kfmt.tools.dump.capture): its TCP connections put back together, which side is the client decided by the same
 * rules, each connection's exchanges read ({@link Talk}), and every request and response given as a row of
 * {@code kfmt dump --json}'s columns; what the capture cannot say goes to {@link #problems} and {@link #notes},
 * as kfmt dump says it. The differential test (tests/test_capture_spark.py) holds the two to the same rows.
 * Read in two passes, in bounded memory: the packets put each direction together on disk ({@link Flow}), then the
 * connections are read one at a time, their rows given one by one ({@link #next}) as their exchanges settle. */
final class Capture implements AutoCloseable {
    /** One request or response: {@code kfmt dump --json}'s object. */
    static final class Row {
        Double time, latencyMs;
        Long frame;
        String client, broker;
        Wire.Msg m;
    }

    /** what the capture cannot say: complete once {@link #next} gives null */
    final List<String> problems = new ArrayList<>(), notes = new ArrayList<>();
    /** the connections to read: client, broker, the client's direction, the broker's, whether the capture saw it opened */
    private record Conn(String client, String broker, Flow toServer, Flow toClient, boolean opened) {}

    private final java.util.ArrayDeque<Conn> conns = new java.util.ArrayDeque<>();
    private final java.util.ArrayDeque<Row> ready = new java.util.ArrayDeque<>();
    private Conn conn;
    private Talk talk;
    /** the first exchange of the connection open, read to see whether it is Kafka's */
    private Talk.Exchange firstX;
    private java.nio.file.Path dir;
    /** what the directions hold in memory, together */
    private final Spooled.Held held = new Spooled.Held();
    private final Wire wire = new Wire();
    private final Integer port;
    /** whether each message's record sets are read for damage here (the records reader says its own) */
    private final boolean checkRecords;
    private SliceReader sets;
    private String name;

    /** this reader's share of the capture's connections: those whose ends hash to {@code part} of {@code parts} */
    private final int part, parts;

    Capture(Integer port, boolean checkRecords) {
        this(port, checkRecords, 0, 1);
    }

    Capture(Integer port, boolean checkRecords, int part, int parts) {
        this.port = port;
        this.checkRecords = checkRecords;
        this.part = part;
        this.parts = parts;
    }

    /** Whether a segment's connection is this reader's share (the same for both its directions). */
    private boolean mine(Segment s) {
        if (parts == 1) return true;
        String a = s.src + "\u0000" + s.sport, b = s.dst + "\u0000" + s.dport;
        String key = a.compareTo(b) < 0 ? a + "\u0001" + b : b + "\u0001" + a;
        return Math.floorMod(key.hashCode(), parts) == part;
    }

    /** The capture {@code name} read from {@code in} (its first bytes included). */
    void read(InputStream in, String name) throws IOException {
        this.name = name;
        byte[] magic = in.readNBytes(4);
        if (magic.length < 4 || !Pcap.isCapture(magic)) {
            throw new IOException(name + ": not a pcap or pcapng capture (its first bytes are "
                    + java.util.HexFormat.of().formatHex(magic) + ")");
        }
        Pcap pcap = Pcap.open(in, magic, name);
        dir = java.nio.file.Files.createTempDirectory("kfmt-capture-");
        LinkedHashMap<String, Flow> flows = new LinkedHashMap<>();
        LinkedHashMap<String, String[]> ends = new LinkedHashMap<>();
        Pcap.Packet p = new Pcap.Packet();
        Segment s = new Segment();
        while (pcap.next(p)) {
            if (!s.of(p) || !mine(s)) continue;
            String key = s.src + "\u0000" + s.sport + "\u0000" + s.dst + "\u0000" + s.dport;
            Flow f = flows.get(key);
            if (f == null) {
                flows.put(key, f = new Flow(dir, held));
                ends.put(key, new String[] {s.src, Integer.toString(s.sport), s.dst, Integer.toString(s.dport)});
            }
            if ((s.flags & 0x02) != 0 && (s.flags & 0x10) == 0) f.syn = s.seq;
            else if ((s.flags & 0x02) != 0) f.synack = s.seq;
            if (s.end > s.at) f.add(s.seq, p.b, s.at, s.end, p.number, p.time);
        }
        long cut = pcap.cut();
        if (cut > 0 && part == 0) problems.add(name + ": the capture ends inside a packet record: " + cut + " byte(s) after byte " + pcap.done() + " unread");
        connections(flows, ends);
    }

    private void connections(LinkedHashMap<String, Flow> flows, LinkedHashMap<String, String[]> ends) {
        java.util.HashSet<String> seen = new java.util.HashSet<>();
        for (var e : flows.entrySet()) {
            String[] ab = ends.get(e.getKey());
            String back = ab[2] + "\u0000" + ab[3] + "\u0000" + ab[0] + "\u0000" + ab[1];
            if (seen.contains(e.getKey()) || seen.contains(back)) continue;
            seen.add(e.getKey());
            Flow one = e.getValue(), other = flows.getOrDefault(back, new Flow(dir, held));
            if (one.empty() && other.empty()) {
                one.bytes.close();
                continue;
            }
            one.finish();
            other.finish();
            connection(ab, one, other);
        }
    }

    /** kfmt.capture._connection: which side opened the connection (or, opened before the capture, which sends
     * requests), then its exchanges read. */
    private void connection(String[] ab, Flow one, Flow other) {
        boolean aOpened, opened = one.syn != null || other.syn != null;
        if (opened) aOpened = one.syn != null;
        else if (one.first() == 0 || other.first() == 0) aOpened = talksFirst(ab, one, other);
        else aOpened = sendsRequests(one, other);
        String a = ab[0] + ":" + ab[1], b = ab[2] + ":" + ab[3];
        int aPort = Integer.parseInt(ab[1]), bPort = Integer.parseInt(ab[3]);
        if (port != null && port != aPort && port != bPort) { // another service's traffic: not asked for
            one.bytes.close();
            other.bytes.close();
            return;
        }
        if (!aOpened) {
            String t = a;
            a = b;
            b = t;
            int tp = aPort;
            aPort = bPort;
            bPort = tp;
            Flow f = one;
            one = other;
            other = f;
        }
        if (port != null && aPort == port) { // opened before the capture, its sides by the port
            conns.add(new Conn(b, a, other, one, opened));
        } else {
            conns.add(new Conn(a, b, one, other, opened));
        }
    }

    private boolean talksFirst(String[] ab, Flow one, Flow other) {
        Flow talking = one.first() > 0 ? one : other;
        boolean whole = false;
        long end = Wire.frameEnd(talking.bytes, 0, talking.first());
        if (end >= 0) {
            try {
                whole = wire.request(talking.bytes.copy(4, (int) (end - 4))).trailing == null;
            } catch (Bad e) {
                whole = false;
            }
        }
        int aPort = Integer.parseInt(ab[1]), bPort = Integer.parseInt(ab[3]);
        if (whole || aPort == bPort) return (one.first() > 0) == whole;
        return aPort > bPort;
    }

    private static boolean sendsRequests(Flow one, Flow other) {
        boolean[] atOnce = new boolean[2];
        Flow[] both = {one, other};
        for (int i = 0; i < 2; i++) {
            long end = Wire.frameEnd(both[i].bytes, 0, both[i].first());
            atOnce[i] = end >= 0 && Wire.looksLikeRequest(both[i].bytes, 4, end - 4);
        }
        if (atOnce[0] != atOnce[1]) return atOnce[0];
        int[] mine = answered(one, other), theirs = answered(other, one);
        if (mine[0] != theirs[0]) return mine[0] > theirs[0];
        return atOnce[0] || ((mine[0] > 0 || mine[1] > 0) && (mine[0] > theirs[0] || (mine[0] == theirs[0] && mine[1] >= theirs[1])));
    }

    /** kfmt.capture._answered: how many of the server's frames answer a request of the client by correlation id, and
     * how many requests (each read from its first whole frame). */
    private static int[] answered(Flow client, Flow server) {
        java.util.HashSet<Integer> asked = new java.util.HashSet<>();
        Spooled c = client.bytes, s = server.bytes;
        long cf = client.first(), sf = server.first();
        for (long p = Wire.firstFrame(c, 0, cf, true), e; (e = Wire.frameEnd(c, p, cf)) >= 0; p = e) {
            if (Wire.looksLikeRequest(c, p + 4, Math.min(e, p + 12) - p - 4)) asked.add(c.i32(p + 8));
        }
        int n = 0;
        for (long p = Wire.firstFrame(s, 0, sf, false), e; (e = Wire.frameEnd(s, p, sf)) >= 0; p = e) {
            if (e - p >= 8 && asked.contains(s.i32(p + 4))) n++;
        }
        return new int[] {n, asked.size()};
    }

    /** The next request or response of the capture (null: every connection is read, and what the capture cannot
     * say is in problems and notes), connection by connection. */
    Row next() {
        while (ready.isEmpty()) {
            if (talk == null && !open()) return null;
            Talk.Exchange x = firstX != null ? firstX : talk.next();
            firstX = null;
            if (x == null) {
                close(conn);
                continue;
            }
            String who = conn.client() + " -> " + conn.broker() + ": ";
            double[] asked = conn.toServer().packetAt(x.requestAt);
            add(x.request, asked, null, who);
            if (x.response != null) {
                double[] answered = conn.toClient().packetAt(x.responseAt);
                add(x.response, answered, latency(asked, answered), who);
            }
        }
        return ready.poll();
    }

    /** The next connection opened for reading; false when none is left. A connection nothing of which reads as
     * Kafka's is another protocol's, noted (kfmt.tools.dump.capture._connection's rule). */
    private boolean open() {
        while (!conns.isEmpty()) {
            conn = conns.poll();
            talk = new Talk(wire, conn.toServer(), conn.toClient(), !conn.opened());
            Talk.Exchange first = talk.next();
            boolean kafkaAnswers = talk.frames.getOrDefault("server", 0) > 0 && talk.tails.getOrDefault("server", 0L) == 0;
            if (first == null && port == null && talk.tokens == 0 && !kafkaAnswers) {
                notes.add(conn.client() + " -> " + conn.broker() + ": not Kafka traffic (no frame reads as a request; "
                        + (conn.toServer().first() + conn.toClient().first()) + " byte(s))");
                drop(conn);
                talk = null;
                continue;
            }
            firstX = first;
            return true;
        }
        return false;
    }

    /** The connection read: what it says said, its spool files removed. */
    private void close(Conn c) {
        said(talk, c.client() + " -> " + c.broker() + ": ", c.opened());
        drop(c);
        talk = null;
    }

    private static void drop(Conn c) {
        c.toServer().bytes.close();
        c.toClient().bytes.close();
    }

    /** Every spool file removed, and the capture's temporary folder. */
    @Override
    public void close() {
        try {
            if (sets != null) sets.release();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        sets = null;
        if (conn != null) drop(conn);
        for (Conn c : conns) drop(c);
        conns.clear();
        if (dir != null) {
            try (var files = java.nio.file.Files.list(dir)) {
                for (var f : (Iterable<java.nio.file.Path>) files::iterator) java.nio.file.Files.deleteIfExists(f);
                java.nio.file.Files.deleteIfExists(dir);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            dir = null;
        }
    }

    private void said(Talk t, String who, boolean opened) {
        for (var e : t.skipped.entrySet()) {
            if (e.getValue() > 0L) notes.add(who + "the " + e.getKey() + "'s first " + e.getValue() + " byte(s) are the end of a message that began before the capture");
        }
        for (String line : t.problems) {
            if (line.contains("which no request of this connection carries") && !opened) notes.add(who + line);
            else problems.add(who + line);
        }
        for (Object[] r : t.resumed) {
            long hole = (long) r[1], at = (long) r[2];
            problems.add(who + "the " + r[0] + "'s bytes lack " + (at - hole) + " byte(s) from byte " + hole + " (a segment the capture lacks)");
        }
    }

    private void add(Wire.Msg m, double[] packet, Double latency, String who) {
        Row r = new Row();
        r.m = m;
        r.client = conn.client();
        r.broker = conn.broker();
        if (packet != null) {
            r.frame = (long) packet[0];
            r.time = Double.isNaN(packet[1]) ? null : packet[1];
        }
        r.latencyMs = latency == null ? null : new java.math.BigDecimal(latency).setScale(3, java.math.RoundingMode.HALF_EVEN).doubleValue();
        ready.add(r);
        String which = who + m.api.name() + " v" + m.version + " " + m.kind() + " (correlation id " + m.correlationId + "): ";
        for (String n : m.notes) notes.add(which + n);
        if (checkRecords && !m.sets.isEmpty()) for (String d : damage(m)) problems.add(which + d);
    }

    private List<String> damage(Wire.Msg m) {
        if (sets == null) sets = WireRecords.reader("skip", org.apache.spark.sql.types.StructType.fromDDL("offset long"));
        try {
            return WireRecords.damage(sets, m, name);
        } catch (IOException e) { // (bytes in memory: no read fails)
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Double latency(double[] asked, double[] answered) {
        if (asked == null || answered == null || Double.isNaN(asked[1]) || Double.isNaN(answered[1])) return null;
        return (answered[1] - asked[1]) * 1000;
    }
}
