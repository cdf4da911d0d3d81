package kfmt.jvm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** {@code java kfmt.jvm.ProtocolCheck}: bodies and headers of Kafka's protocol decoded in the JVM by the generated
 * decoders (kfmt.jvm.gen.Protocol, kfmt.jvm.gen.ProtocolProposals), for the differential tests against
 * kfmt.protocol. Standard input: a line per part of a frame, {@code schema<TAB>version<TAB>frame hex<TAB>start}
 * (the version: the API's for a body, the header's for a header); standard output: a line each, {@code
 * end<TAB>json} (where the part ends, and its JSON as kfmt.protocol's to_json() writes it), or {@code !<TAB>error}. */
public final class ProtocolCheck {
    private ProtocolCheck() {}

    public static void main(String[] args) throws Exception {
        Ctx cx = new Ctx(null, new Limits());
        Js j = new Js();
        HexFormat hex = HexFormat.of();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = r.readLine()) != null; ) {
            String[] f = line.split("\t", -1);
            Payload d = kfmt.jvm.gen.Protocol.of(f[0]);
            if (d == null) d = kfmt.jvm.gen.ProtocolProposals.of(f[0]);
            byte[] b = hex.parseHex(f[2]);
            j.reset();
            try {
                if (d == null) throw new Bad(f[0], Bad.NOWHERE, "no decoder of " + f[0] + " in this jar");
                int end = d.decode(cx, j, b, Integer.parseInt(f[3]), b.length, Long.parseLong(f[1]));
                out.append(Integer.toString(end)).append('\t').append(new String(j.buf, 0, j.len, StandardCharsets.UTF_8));
            } catch (Bad e) {
                out.append("!\t").append(e.text(null).replace("\n", "\\n"));
            }
            out.append('\n');
        }
        out.flush();
    }
}
