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

    public final StringBuilder sb = new StringBuilder(1024);
    /** whether the object or array open at each depth has no member yet; its member's name or element's index */
    private boolean[] first = new boolean[16];
    private String[] keys = new String[16];
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

    public void reset() {
        sb.setLength(0);
        depth = 0;
        type = null;
        version = 0;
        problems.clear();
    }

    public void open() {
        sb.append('{');
        push(false);
    }

    public void close() {
        sb.append('}');
        depth--;
    }

    public void openArray() {
        sb.append('[');
        push(true);
    }

    public void closeArray() {
        sb.append(']');
        depth--;
    }

    private void push(boolean isArray) {
        if (++depth >= first.length) {
            first = java.util.Arrays.copyOf(first, first.length * 2);
            keys = java.util.Arrays.copyOf(keys, first.length);
            index = java.util.Arrays.copyOf(index, first.length);
            array = java.util.Arrays.copyOf(array, first.length);
        }
        first[depth] = true;
        array[depth] = isArray;
        index[depth] = -1;
    }

    /** A member's name (given escaped and quoted); its value follows. */
    public void key(String quoted) {
        item();
        keys[depth] = quoted;
        sb.append(quoted).append(": ");
    }

    /** Before an array's element (or an object's member). */
    public void item() {
        index[depth]++;
        if (first[depth]) first[depth] = false;
        else sb.append(", ");
    }

    /** A message in bytes that did not parse (kept as bytes): said with where it is, as kfmt.payloads says it
     * ("<type>.<member>[<i>].<member>: <error> (kept as bytes)"). */
    public void problem(Bad e, long base) {
        StringBuilder at = new StringBuilder(type == null ? "" : type);
        for (int d = 1; d <= depth; d++) {
            if (array[d]) at.append('[').append(index[d]).append(']');
            else at.append('.').append(keys[d], 1, keys[d].length() - 1);
        }
        problems.add(at + ": " + e.from(base).text(null) + " (kept as bytes)");
    }

    /** Whether text b[p, p + n) (n < 0: null) is {@code s} (ASCII). */
    public static boolean same(byte[] b, int p, int n, String s) {
        if (n != s.length()) return false;
        for (int i = 0; i < n; i++) if (b[p + i] != s.charAt(i)) return false;
        return true;
    }

    public void num(long v) {
        sb.append(v);
    }

    /** An unsigned 64-bit value. */
    public void unum(long v) {
        sb.append(Long.toUnsignedString(v));
    }

    public void bool(boolean v) {
        sb.append(v ? "true" : "false");
    }

    public void nul() {
        sb.append("null");
    }

    /** Precomputed JSON text. */
    public void raw(String json) {
        sb.append(json);
    }

    /** Where the text is now; {@link #cut} takes what was written since. */
    public int mark() {
        return sb.length();
    }

    public String cut(int mark) {
        String s = sb.substring(mark);
        sb.setLength(mark);
        return s;
    }

    public void hex(byte[] b, int p, int n) {
        sb.append('"');
        for (int i = 0; i < n; i++) {
            int x = b[p + i] & 0xFF;
            sb.append(HEX[x >>> 4]).append(HEX[x & 15]);
        }
        sb.append('"');
    }

    public void uuid(byte[] b, int p) {
        sb.append('"').append(UUID.encodeToString(java.util.Arrays.copyOfRange(b, p, p + 16))).append('"');
    }

    /** Text: its characters when it is UTF-8 (as Python's strict decoder takes it), else its bytes and Kafka's. */
    public void text(byte[] b, int p, int n) {
        boolean ascii = true;
        for (int i = 0; i < n && ascii; i++) ascii = b[p + i] >= 0;
        if (ascii) {
            sb.append('"');
            for (int i = 0; i < n; i++) escape((char) b[p + i]);
            sb.append('"');
            return;
        }
        CharBuffer chars;
        try {
            chars = utf8.reset().decode(ByteBuffer.wrap(b, p, n));
        } catch (CharacterCodingException e) {
            sb.append("{\"hex\": ");
            hex(b, p, n);
            sb.append(", \"kafka\": ");
            quoted(new String(b, p, n, StandardCharsets.UTF_8));
            sb.append('}');
            return;
        }
        quoted(chars);
    }

    private void quoted(CharSequence s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) escape(s.charAt(i));
        sb.append('"');
    }

    /** One UTF-16 unit as Python's json.dumps (ensure_ascii) writes it. */
    private void escape(char c) {
        switch (c) {
            case '"' -> sb.append("\\\"");
            case '\\' -> sb.append("\\\\");
            case '\n' -> sb.append("\\n");
            case '\r' -> sb.append("\\r");
            case '\t' -> sb.append("\\t");
            case '\b' -> sb.append("\\b");
            case '\f' -> sb.append("\\f");
            default -> {
                if (c >= ' ' && c <= '~') sb.append(c);
                else sb.append("\\u").append(HEX[c >>> 12]).append(HEX[(c >>> 8) & 15]).append(HEX[(c >>> 4) & 15]).append(HEX[c & 15]);
            }
        }
    }

    /** A float64 as kfmt.payloads writes it: Python's repr, or Jackson's "NaN", "Infinity", "-Infinity". */
    public void f64(double d) {
        if (Double.isNaN(d)) sb.append("\"NaN\"");
        else if (Double.isInfinite(d)) sb.append(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else sb.append(pyRepr(d));
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
