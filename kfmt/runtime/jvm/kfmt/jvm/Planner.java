package kfmt.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** Asks kfmt's planner (kfmt.spark.planner, the one planner of every kfmt reader) for a read's plan, on the driver:
 * through the driver's Python when PySpark installed it ({@link #use}), else by running
 * {@code python -m kfmt.spark.planner} (the interpreter: spark.kfmt.python, $KFMT_PYTHON, else python3). */
public final class Planner {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static volatile PlanCallback callback;

    private Planner() {}

    /** Called by kfmt.spark.register: the driver's Python plans from now on. */
    public static void use(PlanCallback c) {
        callback = c;
    }

    /** The planner's answer: {"plan": ...} or {"python": why}; its error is thrown as the one line it is. */
    static JsonNode ask(CaseInsensitiveStringMap options, StructType userSchema) {
        return ask(options, userSchema, null);
    }

    /** The answer to a stream's call ({@code stream}: its id, the call and its offsets; see kfmt.spark.planner). */
    static JsonNode ask(CaseInsensitiveStringMap options, StructType userSchema, ObjectNode stream) {
        return ask(SparkSession.active(), options, userSchema, stream);
    }

    /** The same, for a session held (a stream's: its thread may outlive the session's being active). */
    static JsonNode ask(SparkSession spark, CaseInsensitiveStringMap options, StructType userSchema, ObjectNode stream) {
        return send(spark, request(spark, options, userSchema, stream));
    }

    /** The answer to a write's call ({@code write}: the call and what it carries; see kfmt.spark.planner). */
    static JsonNode write(CaseInsensitiveStringMap options, ObjectNode write) {
        SparkSession spark = SparkSession.active();
        ObjectNode req = request(spark, options, null, null);
        req.set("write", write);
        return send(spark, req);
    }

    static ObjectNode object() {
        return JSON.createObjectNode();
    }

    static JsonNode parse(byte[] json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("kafka-log: not JSON: " + e.getMessage(), e);
        }
    }

    static byte[] bytes(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode send(SparkSession spark, ObjectNode req) {
        String answer;
        try {
            String request = JSON.writeValueAsString(req);
            PlanCallback c = callback;
            answer = c != null ? c.plan(request) : subprocess(python(spark), request, req.path("jvm_schemes").size() > 0);
        } catch (IOException e) {
            throw new IllegalStateException("kafka-log: kfmt's planner did not answer: " + e.getMessage(), e);
        }
        JsonNode node;
        try {
            node = JSON.readTree(answer);
        } catch (IOException e) {
            throw new IllegalStateException("kafka-log: kfmt's planner answered what is not JSON: " + answer, e);
        }
        if (node.has("error")) throw new IllegalArgumentException(node.get("error").asText());
        return node;
    }

    static ObjectNode request(SparkSession spark, CaseInsensitiveStringMap options, StructType userSchema, ObjectNode stream) {
        ObjectNode req = JSON.createObjectNode();
        if (stream != null) req.set("stream", stream);
        ObjectNode opts = req.putObject("options");
        for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) opts.put(e.getKey(), e.getValue());
        ObjectNode defaults = req.putObject("defaults");
        defaults.put("min_partitions", spark.sparkContext().defaultParallelism());
        SQLConf conf = spark.sessionState().conf();
        defaults.put("split_bytes", conf.filesMaxPartitionBytes());
        defaults.put("open_cost_bytes", conf.filesOpenCostInBytes());
        ArrayNode schemes = req.putArray("jvm_schemes"); // the stores the executors can read here, of those named
        java.util.Set<String> named = schemes(options);
        if (!named.isEmpty()) { // (a Hadoop configuration reads its XML resources: only when a store is named)
            org.apache.hadoop.conf.Configuration hadoop = spark.sessionState().newHadoopConf();
            for (String scheme : named) if (Source.readable(scheme, hadoop)) schemes.add(scheme);
        }
        if (userSchema == null) {
            req.putNull("columns");
        } else {
            ArrayNode cols = req.putArray("columns");
            for (StructField f : userSchema.fields()) cols.addArray().add(f.name()).add(f.dataType().simpleString());
        }
        return req;
    }

    /** The URI schemes of the paths an option names (path, paths: one, a list, comma-separated). */
    static java.util.Set<String> schemes(CaseInsensitiveStringMap options) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        for (String key : new String[] {"path", "paths"}) {
            String v = options.get(key);
            if (v == null) continue;
            java.util.regex.Matcher m = Source.SCHEME.matcher(v);
            while (m.find()) out.add(m.group(1).toLowerCase(java.util.Locale.ROOT));
        }
        return out;
    }

    private static String python(SparkSession spark) {
        String conf = spark.conf().get("spark.kfmt.python", "");
        if (!conf.isEmpty()) return conf;
        String env = System.getenv("KFMT_PYTHON");
        return env != null && !env.isEmpty() ? env : "python3";
    }

    /** Runs the planner as a process. {@code stores}: the read names stores by URI, which the process may need to
     * list and read through this JVM's Hadoop FileSystems (a store only a Hadoop connector reaches): it gets a Py4J
     * gateway on 127.0.0.1 to a {@link Stores} of the session, with a token of its own, for that one request. */
    private static String subprocess(String python, String request, boolean stores) throws IOException {
        java.io.File errors = java.io.File.createTempFile("kfmt-planner", ".err");
        py4j.GatewayServer gateway = null;
        try {
            ProcessBuilder pb = new ProcessBuilder(python, "-m", "kfmt.spark.planner").redirectError(errors);
            if (stores) {
                String token = java.util.UUID.randomUUID().toString();
                gateway = new py4j.GatewayServer.GatewayServerBuilder().entryPoint(Stores.session()).javaPort(0)
                        .javaAddress(java.net.InetAddress.getLoopbackAddress()).authToken(token).build();
                gateway.start(true);
                pb.environment().put("KFMT_STORES_PORT", String.valueOf(gateway.getListeningPort()));
                pb.environment().put("KFMT_STORES_TOKEN", token);
            }
            Process p = pb.start();
            try (OutputStream in = p.getOutputStream()) {
                in.write(request.getBytes(StandardCharsets.UTF_8));
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            int rc = p.waitFor();
            if (rc != 0 || out.isEmpty()) {
                String err = java.nio.file.Files.readString(errors.toPath()).trim();
                String last = err.isEmpty() ? "no output" : err.substring(err.lastIndexOf('\n') + 1);
                throw new IOException(python + " -m kfmt.spark.planner exited " + rc + ": " + last
                        + " (kfmt must be installed for the Python that spark.kfmt.python names)");
            }
            return out.substring(out.lastIndexOf('\n') + 1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            errors.delete();
            if (gateway != null) gateway.shutdown();
        }
    }
}
