package kfmt.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/** Option decode_payloads in the JVM: the keys and values of Kafka's own topics decoded by name into the JSON text
 * kfmt.payloads writes ({@code json.dumps(Decoded.to_json())}), or why one did not decode, as kfmt.log.arrow's
 * add_decoded puts them in the columns key_decoded, value_decoded and payload_error. The bindings (which schemas
 * read which topic) are kfmt.payloads.BINDINGS, written into the jar by kfmt.spark.jvm.build. One per task. */
public final class Internal {
    private static final Map<String, String[]> BINDINGS = bindings();

    private final Ctx cx;
    private final Js j = new Js();
    private final Map<String, Payload> decoders = new HashMap<>();
    /** the last record's columns: JSON text, or null */
    public String key, value, error;

    public Internal(Limits limits) {
        this.cx = new Ctx(null, limits);
    }

    /** Whether records of this topic are decoded (a topic of Kafka's own with a binding). */
    public static boolean bound(String topic) {
        return topic != null && BINDINGS.containsKey(topic);
    }

    /** Decodes one record of a bound topic (kb/vb null: a null key or value); the columns in key, value, error. */
    public void decode(String topic, byte[] kb, int kp, int kn, byte[] vb, int vp, int vn) {
        key = value = error = null;
        String[] b = BINDINGS.get(topic);
        java.util.ArrayList<String> problems = new java.util.ArrayList<>();
        long param = 0;
        boolean hasKey = kb != null && !b[0].isEmpty();
        try {
            if (hasKey) {
                key = one(b[0], kb, kp, kn, 0, "key", problems);
                param = j.version;
            }
            if (vb != null) {
                if (!b[2].isEmpty() && !hasKey) {
                    throw new Bad("value", Bad.NOWHERE, "a " + topic + " value needs its key (the record type chooses its layout)");
                }
                value = one(b[1], vb, vp, vn, param, "value", problems);
            }
        } catch (Bad e) {
            key = value = null;
            error = e.text(null);
            return;
        }
        error = problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** A key's or value's JSON ({"type", "version", "data"[, "trailing"]}); its problems added under {@code what}. */
    private String one(String schema, byte[] b, int p, int n, long param, String what, java.util.List<String> problems) throws Bad {
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
        StringBuilder out = new StringBuilder(j.sb.length() + 64);
        out.append("{\"type\": \"").append(j.type).append("\", \"version\": ").append(j.version).append(", \"data\": ").append(j.sb);
        for (String problem : j.problems) problems.add(what + "." + problem);
        if (end != p + n) {
            j.sb.setLength(0);
            j.hex(b, end, p + n - end);
            out.append(", \"trailing\": ").append(j.sb);
            problems.add(what + "." + j.type + ": " + (p + n - end) + " byte(s) follow it (Kafka's reader ignores them; kept)");
        }
        return out.append('}').toString();
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
