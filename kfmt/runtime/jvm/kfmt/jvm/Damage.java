package kfmt.jvm;

/** A corrupt entry, as the task's failure: one line saying what, where (file, byte, field) and why, with no
 * stack trace of the reader's (the place is in the message; Spark shows the message as the task's error). */
public final class Damage extends RuntimeException {
    public Damage(String message) {
        super(message, null, false, false);
    }
}
