package kfmt.jvm;

import java.util.HashMap;
import java.util.Map;

/** The batch-level values an encoder is given, by the schema's field names (producer_id, codec, timestamp_type,
 * is_control, ...; flags as 0/1, enums as their ids): what kfmt.encode_batch takes as keyword arguments. A field not
 * given is the schema's default, or (a value derived from the records, such as base_timestamp) derived. */
public final class Fields {
    private final Map<String, Long> given = new HashMap<>();

    public Fields put(String name, long v) {
        given.put(name, v);
        return this;
    }

    public boolean has(String name) {
        return given.containsKey(name);
    }

    public long get(String name, long absent) {
        Long v = given.get(name);
        return v == null ? absent : v;
    }

    /** These values with {@code name} set to v (an inner message's: codec none). */
    public Fields with(String name, long v) {
        Fields f = new Fields();
        f.given.putAll(given);
        return f.put(name, v);
    }
}
