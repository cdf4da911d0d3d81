package kfmt.jvm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** {@code java kfmt.jvm.NameCheck}: {@link Names}' answer on rows, for the differential test against
 * kfmt.logdir.names (kfmt.spark.jvm.name_check). Standard input: a line per row, {@code topic<TAB>partition<TAB>offset}
 * (the topic's bytes in hex, {@code -} for null; the partition in decimal, {@code -} for null); standard output: a
 * line each, the refusal, or {@code ok}. */
public final class NameCheck {
    private NameCheck() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] p = line.split("\t", -1);
            byte[] topic = p[0].equals("-") ? null : HexFormat.of().parseHex(p[0]);
            Long partition = p[1].equals("-") ? null : Long.valueOf(p[1]);
            String said = Names.rowProblem(topic, partition, Long.parseLong(p[2]));
            out.println(said == null ? "ok" : said);
        }
        out.flush();
    }
}
