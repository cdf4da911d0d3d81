package kfmt.jvm;

/** A task's failure as kfmt says it: one line saying what, where (file, byte, field) and why, with no stack trace of
 * the reader's (the place is in the message; Spark shows the message as the task's error). The exception is one of
 * the JDK's own classes: a driver whose class loader lacks kfmt's jar (a session that added it with ADD JAR after it
 * started, as {@code kfmt.spark.register} does) cannot read a task's failure of a class of the jar, and Spark then
 * reports only "UnknownReason". */
public final class Damage {
    private Damage() {}

    public static IllegalStateException of(String message) {
        IllegalStateException e = new IllegalStateException(message);
        e.setStackTrace(new StackTraceElement[0]);
        return e;
    }
}
