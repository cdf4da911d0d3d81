package kfmt.jvm;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;

/** One TCP connection read as Kafka's peers read it, as kfmt.protocol.conversation.exchanges reads it: each
 * direction's whole frames (from the first whole frame of a stream read from its middle, and of each run after a
 * hole), both directions in the capture's packet order, each response paired with its request by correlation id
 * (one captured before its request still paired, within {@link #WINDOW_COUNT} exchanges and {@link #WINDOW_BYTES}
 * bytes), raw SASL tokens after a SaslHandshake v0 told apart; the exchanges given one at a time in their requests'
 * order as each settles ({@link #next}), so that only those awaiting an answer are held; what else is found goes to
 * problems, skipped, resumed (complete once the last exchange is given). */
final class Talk {
    /** conversation.WINDOW: exchanges awaiting their answer, and their bytes, held at most */
    static final int WINDOW_COUNT = 1000;
    static final long WINDOW_BYTES = 64L << 20;

    static final class Exchange {
        Wire.Msg request, response;
        long requestAt, responseAt = -1;
        boolean answered;
    }

    private record Frame(long key, long position, byte[] data) {}

    final List<String> problems = new ArrayList<>();
    final LinkedHashMap<String, Long> skipped = new LinkedHashMap<>();
    final HashMap<String, Integer> frames = new HashMap<>();
    final HashMap<String, Long> tails = new HashMap<>(), ends = new HashMap<>();
    /** {side, hole, at, before, after} of each hole in a direction */
    final List<Object[]> resumed = new ArrayList<>();
    int tokens;

    private final Wire wire;
    private final Side client, server;
    private final ArrayDeque<Exchange> order = new ArrayDeque<>(), ready = new ArrayDeque<>();
    private final HashMap<Integer, Exchange> waiting = new HashMap<>();
    private final LinkedHashMap<Integer, Frame> early = new LinkedHashMap<>();
    private long held;
    private boolean saslClient, saslServer, done;

    /** The connection to read: {@code toServer} the bytes the client sent, {@code toClient} the broker's. */
    Talk(Wire wire, Flow toServer, Flow toClient, boolean midStream) {
        this.wire = wire;
        this.client = new Side("client", toServer, midStream);
        this.server = new Side("server", toClient, midStream);
    }

    /** The next exchange, in its request's order (null: the connection is read; then what it says is complete). */
    Exchange next() {
        while (ready.isEmpty() && !done) step();
        return ready.poll();
    }

    /** One frame read, the one the capture holds first (the client's first on a tie), and what it settles. */
    private void step() {
        Frame c = client.peek(), s = server.peek();
        if (c == null && s == null) {
            finish();
            return;
        }
        if (s == null || (c != null && c.key <= s.key)) request(client.take());
        else response(server.take());
        while (!order.isEmpty() && (order.peek().answered || order.size() > WINDOW_COUNT || held > WINDOW_BYTES)) give();
    }

    private void finish() {
        while (!early.isEmpty()) dropEarly();
        while (!order.isEmpty()) give();
        for (String side : new String[] {"client", "server"}) {
            long tail = tails.getOrDefault(side, 0L);
            if (tail > 0) {
                problems.add(side + " byte " + (ends.get(side) - tail) + ": " + tail + " byte(s) after the last whole frame (the connection ends mid-frame)");
            }
        }
        done = true;
    }

    /** One direction's whole frames, one at a time (conversation._side_frames and _keyed): each a copy of its
     * bytes, keyed by the capture's number of the packet where it starts (never less than the one before). */
    private final class Side {
        private final String name;
        private final Flow d;
        private final boolean requests;
        private int run; // the run being read: 0 from stream byte 0, then one after each hole
        private long p, to, base, last;
        private Frame next;
        private boolean over;

        Side(String name, Flow d, boolean midStream) {
            this.name = name;
            this.d = d;
            this.requests = name.equals("client");
            to = d.first();
            p = midStream ? Wire.firstFrame(d.bytes, 0, to, requests) : 0;
            skipped.put(name, p);
            frames.put(name, 0);
        }

        Frame peek() {
            if (next == null && !over) next = read();
            return next;
        }

        Frame take() {
            Frame f = peek();
            next = null;
            return f;
        }

        private Frame read() {
            while (true) {
                long end = Wire.frameEnd(d.bytes, p, to);
                if (end >= 0) {
                    frames.merge(name, 1, Integer::sum);
                    double[] at = d.packetAt(base + p);
                    if (at != null) last = Math.max(last, (long) at[0]);
                    Frame f = new Frame(last, base + p, d.bytes.copy(p + 4, (int) (end - p - 4)));
                    p = end;
                    return f;
                }
                long tail = to - p;
                if (++run >= d.runs.size()) { // the direction read
                    tails.put(name, tail);
                    ends.put(name, base + to);
                    over = true;
                    return null;
                }
                long reach = base + to; // the message the hole cut is unread: its bytes before and after it counted
                long at = d.runs.get(run)[0], from = d.runs.get(run)[1];
                to = run + 1 < d.runs.size() ? d.runs.get(run + 1)[1] : d.written();
                p = Wire.firstFrame(d.bytes, from, to, requests);
                resumed.add(new Object[] {name, reach, at, tail, p - from});
                base = at - from;
            }
        }
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

    private void give() {
        Exchange x = order.poll();
        if (waiting.get(x.request.correlationId) == x) waiting.remove(x.request.correlationId);
        held -= x.request.frame.length + (x.response != null ? x.response.frame.length : 0);
        ready.add(x);
    }
}
