package kfmt.jvm;

/** kfmt's planner in the driver's Python (kfmt.spark.planner._Callback, through PySpark's Py4J gateway): a JSON
 * request in, a JSON answer out. */
public interface PlanCallback {
    String plan(String request);
}
