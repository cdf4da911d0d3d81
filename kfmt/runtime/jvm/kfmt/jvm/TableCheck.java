package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Iterator;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;

/** A kfmt table a task re-checks once it has read its slices: refused if a commit is being applied, or if the table
 * was replaced since the plan was made (a reader never mixes two versions of a table). The decision follows
 * kfmt.table.commit (table_state, refuse_pending, check_unchanged) on the files kfmt.table.commit.recheck_files names;
 * tests/test_jvm.py's differential test holds the two to the same answers and messages. */
public final class TableCheck implements Serializable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> JOURNAL = Set.of("id", "mode", "puts", "removes", "marker", "host", "pid", "started",
            "ready", "version");
    private static final Set<String> PUT = Set.of("staged", "final", "size", "batches", "records", "last_offset");
    private static final DateTimeFormatter WHEN = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    /** how messages name the table; the journal's and the marker's paths or URIs; the version the plan saw (JSON) */
    public String uri, pending, marker, version;
    /** how long one read from a store may wait (the plan's read_timeout) */
    public long timeoutMs;

    /** Throws the one-line failure if the table is not as the plan saw it. */
    void unchanged(Configuration conf) {
        String why = problem(read(pending, conf), read(marker, conf));
        if (why != null) throw Damage.of("kafka-log: " + why);
    }

    /** A small file's bytes (null: there is none). */
    private byte[] read(String path, Configuration conf) {
        try {
            return Source.readAll(path, conf, timeoutMs);
        } catch (IOException e) {
            throw Damage.of("kafka-log: reading " + path + " failed: " + e.getMessage());
        }
    }

    /** kfmt.table.commit.check_unchanged's failure for these bytes of the journal and the marker (null: absent), or
     * null when the table is unchanged. */
    String problem(byte[] journal, byte[] markerBytes) {
        JsonNode j = journal == null ? null : journal(journal);
        if (j != null && truthy(j.get("ready"))) {
            return uri + ": " + describe(j) + " has not finished: the table is being written or its writer was killed; "
                    + "read it when the commit is done, or run `kfmt recover " + uri + "` if no writer is running";
        }
        JsonNode now = markerBytes == null ? null : markerId(markerBytes);
        JsonNode seen = parse(version);
        if (!same(now, seen)) {
            return uri + ": the table was rewritten while it was read (commit " + str(seen) + " -> " + str(now)
                    + "); read it again";
        }
        return null;
    }

    /** The journal as Journal.from_bytes reads it (null: one that does not read, never ready). */
    private static JsonNode journal(byte[] b) {
        JsonNode d = parse(new String(b, StandardCharsets.UTF_8));
        if (d == null || !d.isObject() || !d.has("puts") || !d.has("id") || !d.has("mode")) return null;
        for (Iterator<String> k = d.fieldNames(); k.hasNext(); ) if (!JOURNAL.contains(k.next())) return null;
        JsonNode puts = d.get("puts");
        if (puts.isArray()) {
            for (JsonNode p : puts) if (!put(p)) return null;
            return d;
        }
        // Python iterates what it is given: an empty string or object is no puts; anything else does not read
        return (puts.isTextual() && puts.asText().isEmpty()) || (puts.isObject() && puts.isEmpty()) ? d : null;
    }

    private static boolean put(JsonNode p) {
        if (!p.isObject() || !p.has("staged") || !p.has("final") || !p.has("size")) return false;
        for (Iterator<String> k = p.fieldNames(); k.hasNext(); ) if (!PUT.contains(k.next())) return false;
        return true;
    }

    /** The marker's version (d.get("version", d.get("commit"))), or null (JSON null) when it does not read. */
    private static JsonNode markerId(byte[] b) {
        JsonNode d = parse(new String(b, StandardCharsets.UTF_8));
        if (d == null || !d.isObject()) return null;
        return d.has("version") ? d.get("version") : d.get("commit");
    }

    private static String describe(JsonNode j) {
        double started = j.has("started") ? j.get("started").asDouble() : System.currentTimeMillis() / 1000.0;
        String when = WHEN.format(Instant.ofEpochSecond((long) Math.floor(started)));
        // (a journal without pid or host gets the reader's own, as Journal's defaults give them)
        String pid = j.has("pid") ? str(j.get("pid")) : Long.toString(ProcessHandle.current().pid());
        return "commit " + str(j.get("id")) + " (" + str(j.get("mode")) + ", started " + when + " by pid " + pid
                + " on " + (j.has("host") ? str(j.get("host")) : host()) + ")";
    }

    private static String host() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return "localhost";
        }
    }

    /** Python's truth of a JSON value. */
    private static boolean truthy(JsonNode v) {
        if (v == null || v.isNull()) return false;
        if (v.isBoolean()) return v.asBoolean();
        if (v.isNumber()) return v.asDouble() != 0;
        if (v.isTextual()) return !v.asText().isEmpty();
        return !v.isEmpty(); // arrays and objects
    }

    /** Python's == on two JSON values (numbers by value: 1 == 1.0). */
    private static boolean same(JsonNode a, JsonNode b) {
        boolean an = a == null || a.isNull(), bn = b == null || b.isNull();
        if (an || bn) return an && bn;
        if (a.isNumber() && b.isNumber()) return a.decimalValue().compareTo(b.decimalValue()) == 0;
        return a.equals(b);
    }

    /** Python's str() of a JSON value as the messages print it (None for null). */
    private static String str(JsonNode v) {
        if (v == null || v.isNull()) return "None";
        if (v.isTextual()) return v.asText();
        if (v.isBoolean()) return v.asBoolean() ? "True" : "False";
        return v.toString();
    }

    private static JsonNode parse(String text) {
        if (text == null) return null;
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            return null;
        }
    }

    /** For the differential test: each line of stdin "journal file\tmarker file\tversion JSON\turi" (a file "-" is
     * absent) answered "ok" or "error\t" + the message. */
    public static void main(String[] args) throws IOException {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split("\t", -1);
            TableCheck t = new TableCheck();
            t.uri = f[3];
            t.version = f[2];
            String why = t.problem(bytes(f[0]), bytes(f[1]));
            System.out.println(why == null ? "ok" : "error\t" + why);
        }
    }

    private static byte[] bytes(String path) throws IOException {
        return "-".equals(path) ? null : java.nio.file.Files.readAllBytes(java.nio.file.Path.of(path));
    }
}
