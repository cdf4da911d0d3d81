package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What kfmt's planner (kfmt.spark.jvm, on the driver) hands the JVM engine: the input partitions (groups of
 * slices) and the read options that reach the executors. */
public final class Plan implements Serializable {
    public Limits limits = new Limits();
    public boolean includeControl;
    public boolean nullEmptyHeaders;
    public String format;
    /** fail, skip or quarantine (kfmt.table.plan.LogReader.on_corrupt) */
    public String onCorrupt = "fail";
    /** bytes of a slice read at a time (an entry larger than this is read whole) */
    public int chunkBytes = 8 << 20;
    /** kfmt.table.plan.LogReader.compressed_objects == "read": an object stored compressed whole is decompressed */
    public boolean decompress = true;
    /** how long one read from a store by URI may wait (kfmt.table.plan.LogReader.read_timeout), in milliseconds */
    public long readTimeoutMs = 120_000;
    public List<Slice[]> groups = new ArrayList<>();

    public static Plan parse(String json) {
        try {
            JsonNode root = new ObjectMapper().readTree(json);
            Plan p = new Plan();
            JsonNode l = root.get("limits");
            p.limits.verifyCrc = l.get("verify_crc").asBoolean();
            p.limits.maxDecompressed = l.get("max_decompressed").asLong();
            p.limits.maxRatio = l.get("max_ratio").asLong();
            p.limits.maxRecords = l.get("max_records").asLong();
            p.limits.maxHeaders = l.get("max_headers").asLong();
            p.limits.maxBytes = l.get("max_bytes").asLong();
            p.limits.maxDepth = l.get("max_depth").asInt();
            p.includeControl = root.get("include_control").asBoolean();
            p.nullEmptyHeaders = root.get("null_empty_headers").asBoolean();
            p.format = root.get("format").isNull() ? null : root.get("format").asText();
            if (root.has("on_corrupt")) p.onCorrupt = root.get("on_corrupt").asText();
            if (root.has("chunk_bytes")) p.chunkBytes = Math.max(1, root.get("chunk_bytes").asInt());
            if (root.has("decompress")) p.decompress = root.get("decompress").asBoolean();
            if (root.has("read_timeout_ms")) p.readTimeoutMs = root.get("read_timeout_ms").asLong();
            java.util.List<Slice.Txns> txns = new ArrayList<>();
            if (root.has("txns")) for (JsonNode t : root.get("txns")) txns.add(txns(t));
            java.util.List<TableCheck> tables = new ArrayList<>();
            if (root.has("tables")) for (JsonNode t : root.get("tables")) tables.add(table(t, p.readTimeoutMs));
            for (JsonNode g : root.get("groups")) {
                Slice[] group = new Slice[g.size()];
                for (int i = 0; i < g.size(); i++) group[i] = slice(g.get(i), txns, tables);
                p.groups.add(group);
            }
            return p;
        } catch (java.io.IOException | RuntimeException e) {
            throw new IllegalArgumentException("kafka-log-jvm: the option plan is not a plan made by kfmt.spark.jvm: " + e, e);
        }
    }

    private static Long opt(JsonNode n) {
        return n == null || n.isNull() ? null : n.asLong();
    }

    /** A kfmt table its slices' tasks re-check (kfmt.table.commit.recheck_files). */
    private static TableCheck table(JsonNode t, long timeoutMs) {
        TableCheck c = new TableCheck();
        c.timeoutMs = timeoutMs;
        c.uri = t.get("uri").asText();
        c.pending = t.get("pending").asText();
        c.marker = t.get("marker").asText();
        c.version = t.get("version").toString(); // as JSON: null, a string, ...
        return c;
    }

    private static Slice slice(JsonNode j, java.util.List<Slice.Txns> txns, java.util.List<TableCheck> tables) {
        Slice s = new Slice();
        s.path = j.get("path").asText();
        s.topic = j.get("topic").asText();
        s.partition = j.get("partition").asInt();
        s.start = j.get("start").asLong();
        s.end = j.get("end").asLong();
        s.first = opt(j.get("first"));
        s.stop = opt(j.get("stop"));
        s.liveEnd = j.get("live_end").asBoolean();
        JsonNode t = j.get("txn");
        s.txns = t == null || t.isNull() ? null : txns.get(t.asInt());
        JsonNode table = j.get("table");
        s.table = table == null || table.isNull() ? null : tables.get(table.asInt());
        return s;
    }

    /** A log's read_committed transactions (kfmt.log.txn.Transactions), indexed once for all its slices. */
    private static Slice.Txns txns(JsonNode t) {
        JsonNode a = t.get("aborted");
        long[][] triples = new long[a.size()][];
        for (int i = 0; i < a.size(); i++) {
            JsonNode x = a.get(i);
            triples[i] = new long[] {x.get(0).asLong(), x.get(1).isNull() ? Long.MIN_VALUE : x.get(1).asLong(), x.get(2).asLong()};
        }
        Map<Long, Long> open = new HashMap<>();
        for (JsonNode o : t.get("open")) open.put(o.get(0).asLong(), o.get(1).asLong());
        return new Slice.Txns(Slice.index(triples), open);
    }
}
