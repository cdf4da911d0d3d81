package kfmt.jvm;

import java.nio.charset.StandardCharsets;

/** Kafka's frames read in the JVM as kfmt.protocol reads them: a request by its header's API key and version
 * (KIP-511's ApiVersions request newer than Kafka's: its header only), a response at its request's API and version
 * (an ApiVersions response that does not read so, at v0), header and body decoded by the generated decoders
 * (kfmt.jvm.gen.Protocol) into the JSON of kfmt.protocol's to_json(), bytes after the body kept and noted. And
 * kfmt.protocol.conversation's framing rules: where whole frames are, where a stream read from its middle resumes. */
final class Wire {
    /** kfmt.protocol.conversation.LARGEST_FRAME */
    static final int LARGEST_FRAME = 100 << 20;
    static final int SASL_HANDSHAKE = 17;

    /** One request or response read: what its --json row says. */
    static final class Msg {
        boolean request;
        Api api;
        int version, correlationId;
        String clientId, header, body, trailing;
        byte[] frame;
        final java.util.ArrayList<String> notes = new java.util.ArrayList<>();
        /** its record sets: position and length in the frame, and field path under "body" */
        final java.util.ArrayList<long[]> sets = new java.util.ArrayList<>();
        final java.util.ArrayList<String> setPaths = new java.util.ArrayList<>();

        String kind() {
            return request ? "request" : "response";
        }
    }

    private final Ctx cx = new Ctx(null, new Limits());
    private final Js j = new Js();
    private final java.util.HashMap<String, Payload> decoders = new java.util.HashMap<>();

    Msg request(byte[] f) throws Bad {
        if (f.length < 4) throw new Bad("header", 0, "a request header needs 4 bytes for its API key and version, the frame has " + f.length);
        int key = (int) Ctx.i16(f, 0), version = (int) Ctx.i16(f, 2);
        Api a = api(key);
        Msg m = new Msg();
        m.request = true;
        m.api = a;
        m.version = version;
        m.frame = f;
        boolean kip511 = !a.has(version) && key == Api.API_VERSIONS && version > a.hi();
        if (!a.has(version) && !kip511) throw versionError(a, version, "request", 2L);
        int hv = a.requestHeaderVersion(version);
        int pos = part("request_header", f, 0, hv, "header");
        m.header = json();
        m.correlationId = (int) Ctx.i32(f, 4);
        if (hv >= 1) m.clientId = clientId(f);
        if (kip511) {
            m.trailing = java.util.HexFormat.of().formatHex(f, pos, f.length);
            m.notes.add("ApiVersions v" + version + " is newer than Kafka's newest (v" + a.hi() + "): its body is not read, as "
                    + "Kafka's broker does not read it (KIP-511: it answers with a v0 response, error 35)");
            return m;
        }
        return body(m, a.request(), pos);
    }

    Msg response(byte[] f, Api a, int version) throws Bad {
        Msg m = new Msg();
        m.api = a;
        m.version = version;
        m.frame = f;
        int pos = part("response_header", f, 0, a.responseHeaderVersion(version), "header");
        m.header = json();
        m.correlationId = (int) Ctx.i32(f, 0);
        try {
            return body(m, a.response(), pos);
        } catch (Bad e) {
            if (a.key() != Api.API_VERSIONS || version == 0) throw e;
        }
        m.version = 0;
        body(m, a.response(), pos);
        String code = f.length >= pos + 2 ? Long.toString(Ctx.i16(f, pos)) : "?";
        m.notes.add(0, "ApiVersions response read at v0, not v" + version + ", as Kafka's client falls back (error code "
                + code + "; KIP-511)");
        return m;
    }

    private Msg body(Msg m, String schema, int pos) throws Bad {
        int end = part(schema, m.frame, pos, m.version, "body");
        m.body = json();
        m.sets.clear();
        m.sets.addAll(j.recordSets);
        m.setPaths.clear();
        for (String p : j.recordSetPaths) m.setPaths.add("body" + p);
        if (end < m.frame.length) {
            m.trailing = java.util.HexFormat.of().formatHex(m.frame, end, m.frame.length);
            m.notes.add((m.frame.length - end) + " byte(s) follow the " + m.api.name() + " " + m.kind() + " v" + m.version
                    + " at byte " + end + " (Kafka's parser leaves them unread; kept)");
        }
        return m;
    }

    /** The API of {@code key}, or the error kfmt.protocol gives for a key Kafka has no API of. */
    static Api api(int key) throws Bad {
        Api a = known(key);
        if (a == null) throw new Bad("header.RequestApiKey", 0, "api_key " + key + ": Kafka has no such API");
        return a;
    }

    static Bad versionError(Api a, int version, String kind, long at) {
        return new Bad(kind.equals("request") ? "header.RequestApiVersion" : null, kind.equals("request") ? at : Bad.NOWHERE,
                a.name() + " v" + version + ": not a version of the " + a.name() + " " + kind + " Kafka has (v" + a.lo() + "-v" + a.hi() + ")");
    }

    private int part(String schema, byte[] f, int pos, int version, String where) throws Bad {
        Payload d = decoders.computeIfAbsent(schema, kfmt.jvm.gen.Protocol::of);
        j.reset();
        try {
            return d.decode(cx, j, f, pos, f.length, version);
        } catch (Bad e) {
            throw new Bad(e.path == null ? where : where + "." + e.path, e.at, e.getMessage());
        } catch (RuntimeException e) { // (a decoder's index past the frame: the frame ends inside the part)
            throw new Bad(where, Bad.NOWHERE, "the frame ends inside it (" + e.getClass().getSimpleName() + ")");
        }
    }

    private String json() {
        return new String(j.buf, 0, j.len, StandardCharsets.UTF_8);
    }

    /** A request header's client id (v1 and v2: a nullable string after the correlation id). */
    private static String clientId(byte[] f) {
        int n = (int) Ctx.i16(f, 8);
        return n < 0 ? null : new String(f, 10, n, StandardCharsets.UTF_8);
    }

    private static final Api NONE = new Api(-1, "", 0, -1, -1, "", "");
    private static final Api[] KNOWN = new Api[1 << 15];

    /** The API of {@code key} (null: none), each looked up once. */
    static Api known(int key) {
        if (key < 0) return null;
        Api a = KNOWN[key];
        if (a == null) {
            a = kfmt.jvm.gen.Protocol.api(key);
            KNOWN[key] = a = a == null ? NONE : a;
        }
        return a == NONE ? null : a;
    }

    /** Whether frame bytes [p, p + n) start as a request of an API and version Kafka has (conversation's
     * looks_like_request). */
    static boolean looksLikeRequest(byte[] b, int p, int n) {
        if (n < 8) return false;
        Api a = known((int) Ctx.i16(b, p));
        return a != null && a.has((int) Ctx.i16(b, p + 2));
    }

    /** Whether the frame at p of a direction (its bytes after the size, n of them) starts as a request. */
    static boolean looksLikeRequest(Spooled b, long p, long n) {
        if (n < 8) return false;
        Api a = known(b.i16(p));
        return a != null && a.has(b.i16(p + 2));
    }

    /** conversation.first_frame over a direction's bytes [from, to): where the first whole frame of a stream read
     * from its middle begins (whole frames follow one another to the end, at least one, each of 4 bytes to
     * LARGEST_FRAME, the last maybe cut; on the client's side the first reads as a request), or {@code to} where
     * none does. */
    static long firstFrame(Spooled b, long from, long to, boolean requests) {
        for (long k = from; k < to - 3; k++) {
            long size = b.i32(k);
            if (size < 4 || size > LARGEST_FRAME || k + 4 + size > to) continue;
            if (requests && !looksLikeRequest(b, k + 4, Math.min(size, 8))) continue;
            if (followed(b, k, to)) return k;
        }
        return to;
    }

    private static boolean followed(Spooled b, long k, long to) {
        long end = k;
        for (long p = k; p + 4 <= to; ) {
            long size = b.i32(p);
            if (size < 0 || p + 4 + size > to) break;
            end = p + 4 + size;
            if (end - p < 8) return false;
            p = end;
        }
        if (end + 4 > to) return true;
        long tail = b.i32(end);
        return tail >= 4 && tail <= LARGEST_FRAME;
    }

    /** The end of the whole frame at p of a direction's bytes [.., to), or -1 where none is whole. */
    static long frameEnd(Spooled b, long p, long to) {
        if (p + 4 > to) return -1;
        long size = b.i32(p);
        return size < 0 || p + 4 + size > to ? -1 : p + 4 + size;
    }
}
