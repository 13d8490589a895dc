package org.sparkcat.source;

/**
 * The planning side of a source connector's stream, implemented in the driver's Python process (through
 * py4j's callback server): sparkcat's source connectors are Python, and their driver-side calls
 * ({@code partitions}, {@code latest_offsets}) run there, with no Python process of the query's own.
 * Offsets are JSON texts; {@link #planPartitions} returns a JSON list of {@code [task, base64 payload]}, the
 * payload being what the executors' Python reads the task's records with (a pickled range list).
 */
public interface Planner {
  String initialOffset();

  /** The end of the next batch from {@code start}, at most {@code maxRows} records per task (-1: no limit). */
  String latestOffset(String start, long maxRows);

  /** The newest offsets the tasks reported before admission control (query progress), or null. */
  String reportLatestOffset();

  String planPartitions(String start, String end);

  void commit(String end);

  /**
   * The source metrics of the trigger ending now, for the query's progress ({@code sources[].metrics}): a JSON
   * object of strings, or null for none. Spark asks once per trigger, after its batch was written.
   */
  String metrics();

  void stop();
}
