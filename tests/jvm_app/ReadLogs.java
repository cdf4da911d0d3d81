import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** The README's Java recipe: kafka-log from a JVM application with only kfmt's jar on the classpath
 * (spark-submit --jars kfmt-jvm.jar), no PySpark. Prints topic, partition, records and the highest offset; counts
 * through SQL; then writes the log directory again (zstd) to the second argument and counts what it wrote. */
public final class ReadLogs {
    public static void main(String[] args) {
        SparkSession spark = SparkSession.builder().appName("kfmt-java").getOrCreate();
        Dataset<Row> df = spark.read().format("kafka-log").load(args[0]);
        df.groupBy("topic", "partition").agg(
                org.apache.spark.sql.functions.count("offset").alias("records"),
                org.apache.spark.sql.functions.max("offset").alias("last"))
            .orderBy("topic", "partition")
            .collectAsList()
            .forEach(r -> System.out.println(r.getString(0) + "\t" + r.getInt(1) + "\t" + r.getLong(2) + "\t" + r.getLong(3)));
        spark.sql("CREATE TABLE logs USING `kafka-log` OPTIONS (path '" + args[0] + "')");
        System.out.println("sql\t" + spark.sql("SELECT count(*) FROM logs").first().getLong(0));
        System.out.println("plan\t" + spark.sql("SELECT offset FROM logs").queryExecution().executedPlan().toString().contains("jvm engine"));
        df.write().format("kafka-log").mode("overwrite").option("codec", "zstd").save(args[1]);
        System.out.println("copy\t" + spark.read().format("kafka-log").load(args[1]).count());
        spark.stop();
    }
}
