package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** The record sets inside captured messages (Produce requests, Fetch responses...), read by kafka-log's own reader
 * ({@link SliceReader}, each set a slice of bytes in memory): any magic and codec, CRCs checked, control batches
 * kept, a last batch cut at the set's end left out as Kafka's consumer leaves it (kfmt.protocol.records' rules).
 * Each set's topic and partition are those kfmt.tools.dump.capture.record_sets finds around it in the message's
 * JSON (a Name, Topic, TopicName or TopicId text; an Index, PartitionIndex or Partition number). */
final class WireRecords {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] TOPIC = {"Name", "Topic", "TopicName", "TopicId"};
    private static final String[] PARTITION = {"Index", "PartitionIndex", "Partition"};

    /** One record set: its field path, topic and partition (null: none found), and where it is in the frame. */
    record Set(String path, String topic, Integer partition, int at, int n) {}

    private WireRecords() {}

    /** The record sets of a message, in the order of its fields. */
    static List<Set> of(Wire.Msg m) {
        List<Set> out = new ArrayList<>();
        if (m.sets.isEmpty()) return out;
        JsonNode body;
        try {
            body = JSON.readTree(m.body);
        } catch (IOException e) {
            throw new IllegalStateException("a decoder's JSON does not parse: " + e.getMessage(), e);
        }
        for (int i = 0; i < m.sets.size(); i++) out.add(found(body, m.setPaths.get(i), m.sets.get(i)));
        return out;
    }

    /** The set at {@code path} ("body.A[0].B[1].Records"): the topic and partition of the objects on its way. */
    private static Set found(JsonNode node, String path, long[] at) {
        String topic = null;
        Integer partition = null;
        String[] steps = path.substring("body".length()).split("(?=[.\\[])");
        for (String step : steps) {
            if (node == null) break;
            if (node.isObject()) {
                for (String k : TOPIC) if (node.path(k).isTextual()) { topic = node.get(k).asText(); break; }
                for (String k : PARTITION) if (node.path(k).isIntegralNumber()) { partition = node.get(k).asInt(); break; }
            }
            if (step.isEmpty()) continue;
            node = step.charAt(0) == '[' ? node.get(Integer.parseInt(step.substring(1, step.length() - 1))) : node.get(step.substring(1));
        }
        return new Set(path, topic, partition, (int) at[0], (int) at[1]);
    }

    /** A reader of record sets: {@code onCorrupt} as kafka-log's (fail, skip, quarantine), control batches kept. */
    static SliceReader reader(String onCorrupt, org.apache.spark.sql.types.StructType schema) {
        Plan plan = new Plan();
        plan.includeControl = true;
        plan.onCorrupt = onCorrupt;
        plan.decompress = false;
        return new SliceReader(plan, schema);
    }

    /** The record set opened in {@code r} as a slice named {@code file} of its topic and partition. */
    static void open(SliceReader r, Wire.Msg m, Set s, String file) throws IOException {
        Slice slice = new Slice();
        slice.path = file;
        slice.topic = s.topic();
        slice.partition = s.partition() == null ? -1 : s.partition();
        slice.start = 0;
        slice.end = s.n();
        slice.wire = true;
        r.open(slice, new Source.Memory(m.frame, s.at(), s.n()));
    }

    /** The damage inside a message's record sets, a line each as kfmt.protocol.records says it ("<field path> at
     * byte <n>: <what>"): every set read through, its records not kept. */
    static List<String> damage(SliceReader r, Wire.Msg m, String file) throws IOException {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < m.sets.size(); i++) { // (where each set is is all it takes: no topic, no JSON read)
            long[] at = m.sets.get(i);
            Set s = new Set(m.setPaths.get(i), null, null, (int) at[0], (int) at[1]);
            r.damaged.clear();
            open(r, m, s, file);
            while (r.next() != null) { /* read through: damage is said as the reader meets it */ }
            for (String d : r.damaged) out.add(s.path() + " " + d);
        }
        return out;
    }
}
