package org.sparkcat.connect.host;

/** One Java task kept in this JVM across micro-batches ({@link SourceTaskRun}, {@link SinkTaskRun}). */
interface TaskRun extends AutoCloseable {
    /** The query run it belongs to: a request of another generation replaces it. */
    String generation();

    long lastUsedMs();

    /** Stop the task and release what it holds; never throws. */
    @Override
    void close();
}
