package kfmt.jvm;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** {@code java kfmt.jvm.CaptureCheck [--port N] CAPTURE...}: captures read by the JVM's capture reader
 * ({@link Capture}, the kafka-capture source's), for the differential test against {@code kfmt dump --json}: a
 * line per request or response, the object {@code kfmt dump --json} prints (header and body as the JVM's decoders
 * write them), then {@code {"problem": line}} and {@code {"note": line}} for what the capture cannot say; a file
 * that cannot be read is {@code {"error": line}}; each file's lines after {@code {"capture": its path}}. */
public final class CaptureCheck {
    private static final ObjectMapper JSON = new ObjectMapper();

    private CaptureCheck() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        Integer port = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--port")) {
                port = Integer.valueOf(args[++i]);
                continue;
            }
            out.println(JSON.writeValueAsString(JSON.createObjectNode().put("capture", args[i])));
            try (Capture c = new Capture(port, true)) {
                try (Source src = Source.open(args[i], null, 0);
                     java.io.InputStream in = new java.io.BufferedInputStream(src.stream(), 1 << 16)) {
                    c.read(in, args[i]);
                } catch (java.io.IOException e) {
                    out.println(JSON.writeValueAsString(JSON.createObjectNode().put("error", e.getMessage())));
                    continue;
                }
                for (Capture.Row r; (r = c.next()) != null; ) out.println(JSON.writeValueAsString(row(r)));
                for (String p : c.problems) out.println(JSON.writeValueAsString(JSON.createObjectNode().put("problem", p)));
                for (String n : c.notes) out.println(JSON.writeValueAsString(JSON.createObjectNode().put("note", n)));
            }
        }
        out.flush();
    }

    private static ObjectNode row(Capture.Row r) throws Exception {
        Wire.Msg m = r.m;
        ObjectNode o = JSON.createObjectNode();
        o.put("time", r.time).put("frame", r.frame).put("client", r.client).put("broker", r.broker)
                .put("kind", m.kind()).put("api", m.api.name()).put("api_key", m.api.key()).put("version", m.version)
                .put("correlation_id", m.correlationId);
        if (m.request) o.put("client_id", m.clientId);
        else o.put("latency_ms", r.latencyMs);
        o.set("header", JSON.readTree(m.header));
        o.set("body", m.body == null ? null : JSON.readTree(m.body));
        if (m.trailing != null) o.put("trailing", m.trailing);
        if (!m.notes.isEmpty()) o.set("notes", JSON.valueToTree(m.notes));
        return o;
    }
}
