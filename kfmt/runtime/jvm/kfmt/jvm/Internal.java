package kfmt.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.nio.charset.StandardCharsets;

/** Option decode_payloads in the JVM: the keys and values of Kafka's own topics decoded by name into the JSON text
 * kfmt.payloads writes ({@code json.dumps(Decoded.to_json())}), or why one did not decode, as kfmt.log.arrow's
 * add_decoded puts them in the columns key_decoded, value_decoded and payload_error. The bindings (which schemas
 * read which topic) are kfmt.payloads.BINDINGS, written into the jar by kfmt.spark.jvm.build. One per task. */
public final class Internal {
    private static final Map<String, String[]> BINDINGS = bindings();

    private final Ctx cx;
    private final Js j = new Js();
    private final Map<String, Payload> decoders = new HashMap<>();
    /** the key's and the value's JSON text (ASCII) as the last record decoded */
    private final Js keyOut = new Js(), valueOut = new Js();
    /** the last record's columns, as JSON text in a buffer (null: NULL), or the error */
    public byte[] key, value;
    public int keyLen, valueLen;
    public String error;
    private final java.util.ArrayList<String> problems = new java.util.ArrayList<>();
    /** the messages' Kafka names as ASCII, once each */
    private final Map<String, byte[]> names = new HashMap<>();

    public Internal(Limits limits) {
        this.cx = new Ctx(null, limits);
    }

    /** Whether records of this topic are decoded (a topic of Kafka's own with a binding). */
    public static boolean bound(String topic) {
        return topic != null && BINDINGS.containsKey(topic);
    }

    /** Decodes one record of a bound topic (kb/vb null: a null key or value); the columns in key (keyLen bytes),
     * value (valueLen), error: each null for NULL. */
    public void decode(String topic, byte[] kb, int kp, int kn, byte[] vb, int vp, int vn) {
        key = value = null;
        error = null;
        String[] b = BINDINGS.get(topic);
        problems.clear();
        long param = 0;
        boolean hasKey = kb != null && !b[0].isEmpty();
        try {
            if (hasKey) {
                one(b[0], kb, kp, kn, 0, "key", keyOut);
                param = j.version;
                key = keyOut.buf;
                keyLen = keyOut.len;
            }
            if (vb != null) {
                if (!b[2].isEmpty() && !hasKey) {
                    throw new Bad("value", Bad.NOWHERE, "a " + topic + " value needs its key (the record type chooses its layout)");
                }
                one(b[1], vb, vp, vn, param, "value", valueOut);
                value = valueOut.buf;
                valueLen = valueOut.len;
            }
        } catch (Bad e) {
            key = value = null;
            error = e.text(null);
            return;
        }
        error = problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** A key's or value's JSON ({"type", "version", "data"[, "trailing"]}) into {@code out}; its problems added
     * under {@code what}. */
    private void one(String schema, byte[] b, int p, int n, long param, String what, Js out) throws Bad {
        Payload d = decoders.computeIfAbsent(schema, kfmt.jvm.gen.Payloads::of);
        if (d == null) throw new Bad(what, Bad.NOWHERE, "no payload decoder for " + schema + " in this jar");
        j.reset();
        j.frame = 1;
        int end;
        try {
            end = d.decode(cx, j, b, p, p + n, param);
            if (end != p + n && d.exact()) {
                throw new Bad(schema, end, (p + n - end) + " bytes follow the " + schema);
            }
        } catch (Bad e) {
            Bad at = e.from(p);
            throw new Bad(at.path == null ? what : what + "." + at.path, at.at, at.getMessage());
        }
        if (j.frame != 1) throw new Bad(what + "." + what, Bad.NOWHERE, "frame version " + j.frame + " (Kafka reads only frame version 1)");
        out.reset();
        out.raw(TYPE);
        out.raw(names.computeIfAbsent(j.type, Internal::ascii));
        out.raw(VERSION);
        out.num(j.version);
        out.raw(DATA);
        out.raw(j.buf, 0, j.len);
        for (String problem : j.problems) problems.add(what + "." + problem);
        if (end != p + n) {
            out.raw(TRAILING);
            out.hex(b, end, p + n - end);
            problems.add(what + "." + j.type + ": " + (p + n - end) + " byte(s) follow it (Kafka's reader ignores them; kept)");
        }
        out.raw(CLOSE);
    }

    private static final byte[] TYPE = ascii("{\"type\": \""), VERSION = ascii("\", \"version\": "),
            DATA = ascii(", \"data\": "), TRAILING = ascii(", \"trailing\": "), CLOSE = ascii("}");

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static Map<String, String[]> bindings() {
        Properties p = new Properties();
        try (InputStream in = Internal.class.getResourceAsStream("bindings.properties")) {
            if (in != null) p.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("kafka-log: the jar's kfmt/jvm/bindings.properties does not read", e);
        }
        Map<String, String[]> out = new HashMap<>();
        for (String topic : p.stringPropertyNames()) out.put(topic, (p.getProperty(topic) + ",,").split(",", -1));
        return out;
    }
}
