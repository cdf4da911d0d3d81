package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** Topic and partition names by Kafka's rules, as kfmt.logdir.names decides them (its checks, in its order; its
 * words, written into the jar as kfmt/jvm/names.json from kfmt.logdir.names.TEXTS): a write refuses, before a byte
 * is written, a row whose topic or partition Kafka would not take, so no name reaches outside the table or comes back
 * as another topic. tests/test_jvm.py holds the two engines to the same line on a table of hostile rows. */
final class Names {
    private Names() {}

    static final int MAX_TOPIC = 249;
    private static final JsonNode TEXTS = texts();

    static String text(String name) {
        return TEXTS.get(name).asText();
    }

    private static JsonNode texts() {
        try (InputStream in = Names.class.getResourceAsStream("names.json")) {
            if (in == null) throw new IllegalStateException("kafka-log: the jar has no kfmt/jvm/names.json");
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new IllegalStateException("kafka-log: the jar's kfmt/jvm/names.json does not read", e);
        }
    }

    /** The topic's text, or null for bytes that are not UTF-8 (an encoded surrogate among them). */
    private static String utf8(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private static boolean legal(String t) {
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            if (!ok) return false;
        }
        return true;
    }

    /** Why Kafka refuses the topic (UTF-8 bytes), or null. */
    static String topicProblem(byte[] topic) {
        String t = utf8(topic);
        if (t == null) return text("not_utf8");
        if (t.isEmpty()) return text("empty");
        if (t.equals(".") || t.equals("..")) return text("dots");
        if (t.length() > MAX_TOPIC) return text("too_long").replace("{value}", Integer.toString(t.length()));
        return legal(t) ? null : text("illegal");
    }

    /** A name as the refusal shows it: Python's json.dumps text (ASCII, escaped), or x'..' hex for bytes that are
     * not UTF-8. */
    static String shown(byte[] topic) {
        String t = utf8(topic);
        StringBuilder sb = new StringBuilder();
        if (t == null) {
            sb.append("x'");
            for (byte b : topic) sb.append(String.format("%02X", b & 0xff));
            return sb.append('\'').toString();
        }
        sb.append('"');
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        return sb.append('"').toString();
    }

    /** The one line refusing a row (topic: UTF-8 bytes or null; partition: null when null), or null. */
    static String rowProblem(byte[] topic, Long partition, long offset) {
        String at = text("at").replace("{offset}", Long.toString(offset));
        if (topic == null) return text("no_topic").replace("{at}", at);
        String why = topicProblem(topic);
        if (why != null) return text("bad_topic").replace("{at}", at).replace("{why}", why).replace("{value}", shown(topic));
        if (partition == null) return text("no_partition").replace("{at}", at);
        if (partition < 0 || partition > Integer.MAX_VALUE) return text("bad_partition").replace("{at}", at).replace("{value}", Long.toString(partition));
        return null;
    }
}
