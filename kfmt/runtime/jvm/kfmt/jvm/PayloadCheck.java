package kfmt.jvm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** {@code java kfmt.jvm.PayloadCheck}: records of Kafka's own topics decoded as option decode_payloads decodes
 * them in the JVM (kfmt.jvm.Internal), for the differential tests against kfmt.payloads. Standard input: a line
 * per record, {@code topic<TAB>key hex<TAB>value hex} ({@code -}: null); standard output: a line each,
 * {@code key_decoded<TAB>value_decoded<TAB>payload_error}, {@code \N} for null. */
public final class PayloadCheck {
    private PayloadCheck() {}

    public static void main(String[] args) throws Exception {
        Internal in = new Internal(new Limits());
        HexFormat hex = HexFormat.of();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = r.readLine()) != null; ) {
            String[] f = line.split("\t", -1);
            byte[] k = f[1].equals("-") ? null : hex.parseHex(f[1]);
            byte[] v = f[2].equals("-") ? null : hex.parseHex(f[2]);
            in.decode(f[0], k, 0, k == null ? -1 : k.length, v, 0, v == null ? -1 : v.length);
            String key = in.key == null ? null : new String(in.key, 0, in.keyLen, StandardCharsets.US_ASCII);
            String value = in.value == null ? null : new String(in.value, 0, in.valueLen, StandardCharsets.US_ASCII);
            out.append(cell(key)).append('\t').append(cell(value)).append('\t').append(cell(in.error)).append('\n');
        }
        out.flush();
    }

    private static String cell(String s) {
        return s == null ? "\\N" : s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
    }
}
