package org.sparkcat.kafka.eos;

import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What one write task reports to the driver once its transaction committed. */
final class TaskCommit implements WriterCommitMessage {
  private static final long serialVersionUID = 1L;

  final int task;                       // the Connect task; -1 for a Spark partition that had no rows
  final String workerId;                // host:executor id
  final long records;                   // rows written
  final long skipped;                   // rows a replay found committed already
  final Map<String, Long> positions;    // "topic:partition" -> next offset to read
  final double transactionMs;           // producer set-up (init) and commit

  TaskCommit(int task, String workerId, long records, long skipped, Map<String, Long> positions,
      double transactionMs) {
    this.task = task;
    this.workerId = workerId;
    this.records = records;
    this.skipped = skipped;
    this.positions = positions;
    this.transactionMs = transactionMs;
  }
}
