package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;

/** One Java task kept in this JVM across micro-batches ({@link SourceTaskRun}, {@link SinkTaskRun}). */
interface TaskRun extends AutoCloseable {
    /** The query run it belongs to: a request of another generation replaces it. */
    String generation();

    long lastUsedMs();

    /**
     * Whether this run may serve {@code request}: false when what the driver committed moved on without it (the
     * task ran on another executor meanwhile), so it is replaced by one started from the committed state.
     */
    default boolean current(JsonNode request) {
        return true;
    }

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
