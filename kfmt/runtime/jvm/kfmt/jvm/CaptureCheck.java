package kfmt.jvm;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** {@code java kfmt.jvm.CaptureCheck [--port N] [--records] CAPTURE...}: captures read by the JVM's capture reader
 * ({@link Capture}, the kafka-capture source's), for the differential test against {@code kfmt dump --json}: a
 * line per request or response, the object {@code kfmt dump --json} prints (header and body as the JVM's decoders
 * write them), then {@code {"problem": line}} and {@code {"note": line}} for what the capture cannot say; a file
 * that cannot be read is {@code {"error": line}}; each file's lines after {@code {"capture": its path}}. With
 * {@code --records}, a line per record the messages carry instead (rows=records' columns, bytes as hex). */
public final class CaptureCheck {
    private static final ObjectMapper JSON = new ObjectMapper();

    private CaptureCheck() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        Integer port = null;
        boolean records = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--port")) {
                port = Integer.valueOf(args[++i]);
                continue;
            }
            if (args[i].equals("--records")) {
                records = true;
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
                SliceReader sets = records ? WireRecords.reader("skip", RECORD) : null;
                for (Capture.Row r; (r = c.next()) != null; ) {
                    if (sets == null) out.println(JSON.writeValueAsString(row(r)));
                    else records(out, sets, r, args[i]);
                }
                if (sets != null) sets.release();
                for (String p : c.problems) out.println(JSON.writeValueAsString(JSON.createObjectNode().put("problem", p)));
                for (String n : c.notes) out.println(JSON.writeValueAsString(JSON.createObjectNode().put("note", n)));
            }
        }
        out.flush();
    }

    /** The columns a record's line carries (--records), as the kafka-capture source reads them. */
    private static final org.apache.spark.sql.types.StructType RECORD = org.apache.spark.sql.types.StructType.fromDDL(
            "key binary, value binary, topic string, partition int, offset long, timestamp_ms long, "
            + "headers array<struct<key: string, value: binary>>, position long");

    /** --records: a line per record the message carries, its columns and the capture's, as rows=records gives them
     * (bytes as hex); the record sets read as the source reads them (damaged batches left out, as with
     * on_corrupt=skip). */
    private static void records(PrintStream out, SliceReader sets, Capture.Row r, String file) throws Exception {
        java.util.HexFormat hex = java.util.HexFormat.of();
        for (WireRecords.Set s : WireRecords.of(r.m)) {
            WireRecords.open(sets, r.m, s, file);
            for (org.apache.spark.sql.vectorized.ColumnarBatch b; (b = sets.next()) != null; ) {
                for (int i = 0; i < b.numRows(); i++) {
                    var row = b.getRow(i);
                    ObjectNode o = JSON.createObjectNode();
                    o.put("packet_time", r.time).put("frame", r.frame).put("client", r.client).put("broker", r.broker)
                            .put("kind", r.m.kind()).put("api", r.m.api.name()).put("version", r.m.version)
                            .put("topic", s.topic()).put("partition", s.partition()).put("position", row.getLong(7))
                            .put("offset", row.getLong(4)).put("timestamp", row.isNullAt(5) ? -1 : row.getLong(5))
                            .put("key", row.isNullAt(0) ? null : hex.formatHex(row.getBinary(0)))
                            .put("value", row.isNullAt(1) ? null : hex.formatHex(row.getBinary(1)));
                    var hs = o.putArray("headers");
                    var h = row.getArray(6);
                    for (int k = 0; k < h.numElements(); k++) {
                        var e = h.getStruct(k, 2);
                        hs.addArray().add(e.getUTF8String(0).toString()).add(e.isNullAt(1) ? null : hex.formatHex(e.getBinary(1)));
                    }
                    out.println(JSON.writeValueAsString(o));
                }
            }
        }
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
