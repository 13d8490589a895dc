package org.sparkcat.connect.host;

/** One Java task kept in this JVM across micro-batches ({@link SourceTaskRun}, {@link SinkTaskRun}). */
interface TaskRun extends AutoCloseable {
    /** The query run it belongs to: a request of another generation replaces it. */
    String generation();

    long lastUsedMs();

    /** Stop the task and release what it holds; never throws. */
    @Override
    void close();

    /** Run a step of stopping a task; its failure is logged, not raised (the task goes either way). */
    static void quietly(String what, Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            java.util.logging.Logger.getLogger(TaskRun.class.getName()).warning(what + ": stopping failed: " + e);
        }
    }
}
