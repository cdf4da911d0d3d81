package kfmt.jvm;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;

/** One TCP connection read as Kafka's peers read it, as kfmt.protocol.conversation.exchanges reads it: each
 * direction's whole frames (from the first whole frame of a stream read from its middle, and of each run after a
 * hole), both directions in the capture's packet order, each response paired with its request by correlation id
 * (one captured before its request still paired, within {@link #WINDOW}), raw SASL tokens after a SaslHandshake v0
 * told apart; every exchange in its request's order, and what else is found: problems, skipped bytes, holes. */
final class Talk {
    /** conversation.WINDOW: exchanges awaiting their answer, and their bytes, held at most */
    static final int WINDOW_COUNT = 1000;
    static final long WINDOW_BYTES = 64L << 20;

    static final class Exchange {
        Wire.Msg request, response;
        long requestAt, responseAt = -1;
        boolean answered;
    }

    private record Frame(long key, boolean client, long position, byte[] data) {}

    final List<Exchange> exchanges = new ArrayList<>();
    final List<String> problems = new ArrayList<>();
    final LinkedHashMap<String, Integer> skipped = new LinkedHashMap<>();
    final HashMap<String, Integer> frames = new HashMap<>();
    final HashMap<String, Integer> tails = new HashMap<>();
    /** {side, hole, at, before, after} of each hole in a direction */
    final List<Object[]> resumed = new ArrayList<>();
    int tokens;

    private final Wire wire;
    private final ArrayDeque<Exchange> order = new ArrayDeque<>();
    private final HashMap<Integer, Exchange> waiting = new HashMap<>();
    private final LinkedHashMap<Integer, Frame> early = new LinkedHashMap<>();
    private long held;
    private boolean saslClient, saslServer;

    Talk(Wire wire) {
        this.wire = wire;
    }

    /** The connection read: {@code client} the bytes the client sent, {@code server} the broker's. */
    void read(Flow client, Flow server, boolean midStream) {
        List<Frame> c = sideFrames("client", client, midStream), s = sideFrames("server", server, midStream);
        int i = 0, k = 0;
        while (i < c.size() || k < s.size()) { // heapq.merge by (packet, side): the client's first on a tie
            boolean takeClient = k >= s.size() || (i < c.size() && c.get(i).key <= s.get(k).key);
            if (takeClient) request(c.get(i++));
            else response(s.get(k++));
            settle();
        }
        while (!early.isEmpty()) dropEarly();
        while (!order.isEmpty()) give();
        for (String side : new String[] {"client", "server"}) {
            int tail = tails.getOrDefault(side, 0);
            if (tail > 0) {
                long end = ends.get(side);
                problems.add(side + " byte " + (end - tail) + ": " + tail + " byte(s) after the last whole frame (the connection ends mid-frame)");
            }
        }
    }

    private final HashMap<String, Long> ends = new HashMap<>();

    /** A direction's whole frames with their packet keys (conversation._side_frames and _keyed). */
    private List<Frame> sideFrames(String side, Flow d, boolean midStream) {
        boolean client = side.equals("client");
        List<Frame> out = new ArrayList<>();
        int first = d.runs.size() > 1 ? (int) d.runs.get(1)[1] : d.written;
        int start = midStream ? Wire.firstFrame(d.data, 0, first, client) : 0;
        skipped.put(side, start);
        frames.put(side, 0);
        long[] last = {0};
        int tail = framesOf(out, side, d, 0, start, first, 0, last);
        long reach = first;
        for (int r = 1; r < d.runs.size(); r++) {
            long at = d.runs.get(r)[0];
            int from = (int) d.runs.get(r)[1], to = r + 1 < d.runs.size() ? (int) d.runs.get(r + 1)[1] : d.written;
            int k = Wire.firstFrame(d.data, from, to, client);
            resumed.add(new Object[] {side, reach, at, tail, k - from});
            tail = framesOf(out, side, d, from, k, to, at - from, last);
            reach = at + (to - from);
        }
        tails.put(side, tail);
        ends.put(side, reach);
        return out;
    }

    /** The whole frames of d.data[p, to) (positions shifted by {@code base}); returns the bytes after the last. */
    private int framesOf(List<Frame> out, String side, Flow d, int from, int p, int to, long base, long[] last) {
        boolean client = side.equals("client");
        for (int end; (end = Wire.frameEnd(d.data, p, to)) >= 0; p = end) {
            frames.merge(side, 1, Integer::sum);
            double[] at = d.packetAt(base + p);
            if (at != null) last[0] = Math.max(last[0], (long) at[0]);
            out.add(new Frame(last[0], client, base + p, java.util.Arrays.copyOfRange(d.data, p + 4, end)));
        }
        return to - p;
    }

    private void request(Frame f) {
        if (saslClient && !Wire.looksLikeRequest(f.data, 0, f.data.length)) {
            tokens++;
            return;
        }
        Wire.Msg m;
        try {
            m = wire.request(f.data);
        } catch (Bad e) {
            problems.add("client byte " + (f.position + 4) + ": " + e.text(null));
            return;
        }
        saslClient = rawSaslFollows(m);
        Exchange x = new Exchange();
        x.request = m;
        x.requestAt = f.position;
        order.add(x);
        waiting.put(m.correlationId, x);
        held += f.data.length;
        Frame e = early.remove(m.correlationId);
        if (e != null) {
            held -= e.data.length;
            response(e);
        }
    }

    private void response(Frame f) {
        Integer cid = f.data.length >= 4 ? (int) Ctx.i32(f.data, 0) : null;
        Exchange x = cid != null ? waiting.remove(cid) : null;
        if (x != null) answer(x, f, cid);
        else if (saslServer) tokens++;
        else if (cid != null) {
            early.put(cid, f);
            held += f.data.length;
            while (early.size() > WINDOW_COUNT || held > WINDOW_BYTES) dropEarly();
        } else unasked(f, null);
    }

    private void dropEarly() {
        Integer cid = early.keySet().iterator().next();
        Frame f = early.remove(cid);
        held -= f.data.length;
        unasked(f, cid);
    }

    private void unasked(Frame f, Integer cid) {
        problems.add("server byte " + (f.position + 4) + ": a response to correlation id " + cid + ", which no request of this connection carries");
    }

    private void answer(Exchange x, Frame f, int cid) {
        Wire.Msg req = x.request;
        x.answered = true;
        try {
            x.response = wire.response(f.data, req.api, req.version);
            x.responseAt = f.position;
            held += f.data.length;
        } catch (Bad e) {
            problems.add("server byte " + (f.position + 4) + ": " + req.api.name() + " v" + req.version + " response (correlation id " + cid + "): " + e.text(null));
        }
        saslServer = rawSaslFollows(req);
    }

    private static boolean rawSaslFollows(Wire.Msg m) {
        return m.api.key() == Wire.SASL_HANDSHAKE && m.version == 0;
    }

    private void settle() {
        while (!order.isEmpty() && (order.peek().answered || order.size() > WINDOW_COUNT || held > WINDOW_BYTES)) give();
    }

    private void give() {
        Exchange x = order.poll();
        if (waiting.get(x.request.correlationId) == x) waiting.remove(x.request.correlationId);
        held -= x.request.frame.length + (x.response != null ? x.response.frame.length : 0);
        exchanges.add(x);
    }
}
