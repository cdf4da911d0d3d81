package kfmt.jvm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** {@code java kfmt.jvm.EncodeCheck}: batches encoded by the generated Java encoders, for the differential tests
 * against kfmt.encode_batch (kfmt.spark.jvm.encode_check). Standard input: a line per batch,
 * {@code format<TAB>name=value,...<TAB>records}, records {@code ;}-separated as
 * {@code offset,timestamp,key,value,headers} (bytes in hex, {@code -} for null; headers {@code +}-separated
 * {@code key.value}); standard output: a line each, the batch in hex, or {@code !} and the error. */
public final class EncodeCheck {
    private EncodeCheck() {}

    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        Enc x = new Enc();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] p = line.split("\t", -1);
            Encoder e = kfmt.jvm.gen.Encoders.of(p[0]);
            Fields f = new Fields();
            for (String kv : p[1].split(",")) {
                if (!kv.isEmpty()) f.put(kv.substring(0, kv.indexOf('=')), Long.parseLong(kv.substring(kv.indexOf('=') + 1)));
            }
            Recs r = new Recs();
            for (String rec : p[2].split(";")) if (!rec.isEmpty()) add(r, rec.split(",", -1));
            x.out.clear();
            try {
                e.encode(x, r, 0, r.n, f);
                out.append(HEX.formatHex(x.out.b, 0, x.out.n)).append('\n');
            } catch (IllegalArgumentException err) {
                out.append('!').append(err.getMessage()).append('\n');
            }
        }
        out.flush();
    }

    private static void add(Recs r, String[] c) {
        String[] hs = c[4].isEmpty() ? new String[0] : c[4].split("\\+");
        byte[][] hk = new byte[hs.length][], hv = new byte[hs.length][];
        for (int j = 0; j < hs.length; j++) {
            String[] kv = hs[j].split("\\.", -1);
            hk[j] = bytes(kv[0]);
            hv[j] = bytes(kv[1]);
        }
        r.add(Long.parseLong(c[0]), Long.parseLong(c[1]), bytes(c[2]), bytes(c[3]), hk, hv);
    }

    private static byte[] bytes(String h) {
        return h.equals("-") ? null : HEX.parseHex(h);
    }
}
