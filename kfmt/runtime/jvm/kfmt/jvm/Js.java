package kfmt.jvm;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** JSON text as kfmt.payloads writes a decoded payload: Python's {@code json.dumps} of {@code Decoded.to_json()}
 * (separators ", " and ": ", every character outside printable ASCII escaped as {@code \\uXXXX}), with
 * kfmt.payloads' values: bytes as lowercase hex, a uuid as Kafka's URL-safe base64 without padding, a float64
 * as Python's repr (what JSON has no number for as Jackson's strings), text that is not UTF-8 as
 * {@code {"hex": ..., "kafka": <what Kafka's Java reader makes of it>}}. Generated payload decoders write into
 * one; one per task, not thread-safe. */
public final class Js {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final Base64.Encoder UUID = Base64.getUrlEncoder().withoutPadding();
    /** the members of an unknown tag's JSON */
    public static final byte[] TAG = name("\"tag\""), DATA = name("\"data\"");

    /** the JSON text so far (ASCII: every other character is escaped) */
    public byte[] buf = new byte[1024];
    public int len;
    /** whether the object or array open at each depth has no member yet; its member's name or element's index */
    private boolean[] first = new boolean[16];
    private byte[][] keyOf = new byte[16][];
    private long[] index = new long[16];
    private boolean[] array = new boolean[16];
    public int depth;
    /** the Kafka name of the message being decoded (set by the outermost message struct), and its version */
    public String type;
    public long version;
    /** the message's frame version, where its root has one (Kafka reads only 1) */
    public long frame;
    /** what did not decode although the payload did (bytes holding a message that do not parse), as
     * kfmt.payloads.Decoded.problems says it */
    public final java.util.ArrayList<String> problems = new java.util.ArrayList<>();
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

    /** A key's text as the generated decoders keep it: quoted, escaped, with its ": ". */
    public static byte[] name(String quoted) {
        return (quoted + ": ").getBytes(StandardCharsets.US_ASCII);
    }

    private void put(char c) {
        if (len == buf.length) buf = java.util.Arrays.copyOf(buf, buf.length * 2);
        buf[len++] = (byte) c;
    }

    private void put(String ascii) {
        int n = ascii.length();
        room(n);
        ascii.getBytes(0, n, buf, len); // (ASCII: one byte a char)
        len += n;
    }

    private void put(byte[] b, int p, int n) {
        room(n);
        System.arraycopy(b, p, buf, len, n);
        len += n;
    }

    private void room(int n) {
        if (len + n > buf.length) buf = java.util.Arrays.copyOf(buf, Math.max(len + n, buf.length * 2));
    }

    /** The text as a String (tests, messages). */
    @Override
    public String toString() {
        return new String(buf, 0, len, StandardCharsets.US_ASCII);
    }

    /** the record sets (Kafka's records type, not null) written so far: each one's position and length in the input,
     * and its field path (".TopicData[0].PartitionData[0].Records") */
    public final java.util.ArrayList<long[]> recordSets = new java.util.ArrayList<>();
    public final java.util.ArrayList<String> recordSetPaths = new java.util.ArrayList<>();

    public void reset() {
        recordSets.clear();
        recordSetPaths.clear();
        len = 0;
        depth = 0;
        type = null;
        version = 0;
        problems.clear();
    }

    public void open() {
        put('{');
        push(false);
    }

    public void close() {
        put('}');
        depth--;
    }

    public void openArray() {
        put('[');
        push(true);
    }

    public void closeArray() {
        put(']');
        depth--;
    }

    private void push(boolean isArray) {
        if (++depth >= first.length) {
            first = java.util.Arrays.copyOf(first, first.length * 2);
            keyOf = java.util.Arrays.copyOf(keyOf, first.length);
            index = java.util.Arrays.copyOf(index, first.length);
            array = java.util.Arrays.copyOf(array, first.length);
        }
        first[depth] = true;
        array[depth] = isArray;
        index[depth] = -1;
    }

    /** A member's name (given escaped and quoted); its value follows. */
    public void key(String quoted) {
        key(name(quoted));
    }

    /** A member's name as {@link #name} made it. */
    public void key(byte[] named) {
        item();
        keyOf[depth] = named;
        put(named, 0, named.length);
    }

    /** Before an array's element (or an object's member). */
    public void item() {
        index[depth]++;
        if (first[depth]) {
            first[depth] = false;
        } else {
            room(2);
            buf[len++] = ',';
            buf[len++] = ' ';
        }
    }

    /** A record set at b[p, p + n) of the input, its value just written under the member named last. */
    public void recordSet(int p, int n) {
        recordSets.add(new long[] {p, n});
        recordSetPaths.add(path().toString());
    }

    /** Where the value being written is: ".member[i].member" from the outermost object. */
    private StringBuilder path() {
        StringBuilder at = new StringBuilder();
        for (int d = 1; d <= depth; d++) {
            if (array[d]) at.append('[').append(index[d]).append(']');
            else at.append('.').append(new String(keyOf[d], 1, keyOf[d].length - 4, StandardCharsets.US_ASCII));
        }
        return at;
    }

    /** A message in bytes that did not parse (kept as bytes): said with where it is, as kfmt.payloads says it
     * ("<type>.<member>[<i>].<member>: <error> (kept as bytes)"). */
    public void problem(Bad e, long base) {
        StringBuilder at = path().insert(0, type == null ? "" : type);
        problems.add(at + ": " + e.from(base).text(null) + " (kept as bytes)");
    }

    /** Whether text b[p, p + n) (n < 0: null) is {@code s} (ASCII). */
    public static boolean same(byte[] b, int p, int n, String s) {
        if (n != s.length()) return false;
        for (int i = 0; i < n; i++) if (b[p + i] != s.charAt(i)) return false;
        return true;
    }

    public void num(long v) {
        if (v >= 0 && v < 10) {
            put((char) ('0' + v));
            return;
        }
        if (v == Long.MIN_VALUE) {
            put("-9223372036854775808");
            return;
        }
        room(20);
        if (v < 0) {
            buf[len++] = '-';
            v = -v;
        }
        int end = len + digits(v);
        for (int i = end - 1; i >= len; i--, v /= 10) buf[i] = (byte) ('0' + v % 10);
        len = end;
    }

    private static int digits(long v) {
        int n = 1;
        while (v >= 10) {
            v /= 10;
            n++;
        }
        return n;
    }

    /** An unsigned 64-bit value. */
    public void unum(long v) {
        if (v >= 0) num(v);
        else put(Long.toUnsignedString(v));
    }

    public void bool(boolean v) {
        put(v ? "true" : "false");
    }

    public void nul() {
        put("null");
    }

    /** Precomputed JSON text. */
    public void raw(byte[] json) {
        put(json, 0, json.length);
    }

    public void raw(byte[] json, int p, int n) {
        put(json, p, n);
    }

    /** Where the text is now; {@link #cut} takes what was written since. */
    public int mark() {
        return len;
    }

    public byte[] cut(int mark) {
        byte[] out = java.util.Arrays.copyOfRange(buf, mark, len);
        len = mark;
        return out;
    }

    public void hex(byte[] b, int p, int n) {
        room(2 * n + 2);
        buf[len++] = '"';
        for (int i = 0; i < n; i++) {
            int x = b[p + i] & 0xFF;
            buf[len++] = (byte) HEX[x >>> 4];
            buf[len++] = (byte) HEX[x & 15];
        }
        buf[len++] = '"';
    }

    public void uuid(byte[] b, int p) { // p < 0: a field absent at its version, the zero uuid
        put('"');
        put(UUID.encodeToString(p < 0 ? new byte[16] : java.util.Arrays.copyOfRange(b, p, p + 16)));
        put('"');
    }

    /** Text: its characters when it is UTF-8 (as Python's strict decoder takes it), else its bytes and Kafka's. */
    public void text(byte[] b, int p, int n) {
        int i = 0;
        while (i < n) { // printable ASCII without a quote or a backslash is copied as it is
            byte c = b[p + i];
            if (c < ' ' || c == '"' || c == '\\' || c == 127) break; // (a byte past 127 is negative)
            i++;
        }
        if (i == n) {
            room(n + 2);
            buf[len++] = '"';
            System.arraycopy(b, p, buf, len, n);
            len += n;
            buf[len++] = '"';
            return;
        }
        boolean ascii = true;
        for (int k = i; k < n && ascii; k++) ascii = b[p + k] >= 0;
        if (ascii) {
            put('"');
            put(b, p, i);
            for (int k = i; k < n; k++) escape((char) b[p + k]);
            put('"');
            return;
        }
        CharBuffer chars;
        try {
            chars = utf8.reset().decode(ByteBuffer.wrap(b, p, n));
        } catch (CharacterCodingException e) {
            put("{\"hex\": ");
            hex(b, p, n);
            put(", \"kafka\": ");
            quoted(new String(b, p, n, StandardCharsets.UTF_8));
            put('}');
            return;
        }
        quoted(chars);
    }

    private void quoted(CharSequence s) {
        put('"');
        for (int i = 0; i < s.length(); i++) escape(s.charAt(i));
        put('"');
    }

    /** One UTF-16 unit as Python's json.dumps (ensure_ascii) writes it. */
    private void escape(char c) {
        switch (c) {
            case '"' -> put("\\\"");
            case '\\' -> put("\\\\");
            case '\n' -> put("\\n");
            case '\r' -> put("\\r");
            case '\t' -> put("\\t");
            case '\b' -> put("\\b");
            case '\f' -> put("\\f");
            default -> {
                if (c >= ' ' && c <= '~') {
                    put(c);
                } else {
                    put("\\u");
                    put(HEX[c >>> 12]);
                    put(HEX[(c >>> 8) & 15]);
                    put(HEX[(c >>> 4) & 15]);
                    put(HEX[c & 15]);
                }
            }
        }
    }

    /** A float64 as kfmt.payloads writes it: Python's repr, or Jackson's "NaN", "Infinity", "-Infinity". */
    public void f64(double d) {
        if (Double.isNaN(d)) put("\"NaN\"");
        else if (Double.isInfinite(d)) put(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else put(pyRepr(d));
    }

    /** Python's repr of a finite float: the shortest digits that read back as it, fixed notation for decimal
     * exponents -4 to 15, else d.ddde+XX. */
    static String pyRepr(double d) {
        if (d == 0) return (Double.doubleToRawLongBits(d) < 0 ? "-" : "") + "0.0";
        String sci = null;
        for (int p = 1; p <= 17; p++) {
            sci = String.format(java.util.Locale.ROOT, "%." + (p - 1) + "e", d);
            if (Double.parseDouble(sci) == d) break;
        }
        boolean neg = sci.charAt(0) == '-';
        String body = neg ? sci.substring(1) : sci;
        int e = body.indexOf('e');
        String digits = body.substring(0, e).replace(".", "");
        int exp = Integer.parseInt(body.substring(e + 1));
        int end = digits.length();
        while (end > 1 && digits.charAt(end - 1) == '0') end--;
        digits = digits.substring(0, end);
        StringBuilder out = new StringBuilder(neg ? "-" : "");
        if (exp >= -4 && exp < 16) {
            if (exp < 0) {
                out.append("0.").append("0".repeat(-exp - 1)).append(digits);
            } else if (digits.length() > exp + 1) {
                out.append(digits, 0, exp + 1).append('.').append(digits, exp + 1, digits.length());
            } else {
                out.append(digits).append("0".repeat(exp + 1 - digits.length())).append(".0");
            }
        } else {
            out.append(digits.charAt(0));
            if (digits.length() > 1) out.append('.').append(digits, 1, digits.length());
            out.append('e').append(exp < 0 ? '-' : '+');
            if (Math.abs(exp) < 10) out.append('0');
            out.append(Math.abs(exp));
        }
        return out.toString();
    }
}
