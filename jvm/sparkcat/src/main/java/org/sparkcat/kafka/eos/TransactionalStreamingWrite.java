package org.sparkcat.kafka.eos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * The driver side of the writes. The writer factory takes the lease current now: a driver that does not
 * lead (no lease under its key) refuses to write, so a batch a paused driver plans on resuming fails
 * instead of fencing the new leader. {@code commit} runs once every task's transaction committed, before
 * Spark records the batch in its checkpoint; it keeps the batch's summary for the query's progress.
 */
final class TransactionalStreamingWrite implements StreamingWrite {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final WriterSettings settings;
  private final Columns columns;
  private final TransactionalKafkaTable table;

  TransactionalStreamingWrite(WriterSettings settings, Columns columns, TransactionalKafkaTable table) {
    this.settings = settings;
    this.columns = columns;
    this.table = table;
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    Lease lease = null;
    if (!settings.leaseKey.isEmpty()) {
      lease = Leases.get(settings.leaseKey);
      if (lease == null) {
        throw new IllegalStateException("sparkcat.LeaseUnavailable: this driver does not lead the group "
            + settings.leaseKey + " now; the batch of connector " + settings.connector + " is left for replay");
      }
    }
    // locals, not fields: the factory is serialised to executors without this driver-side object
    WriterSettings writerSettings = settings;
    Columns rowColumns = columns;
    Lease held = lease;
    return (partitionId, taskId, epochId) -> new TransactionalDataWriter(writerSettings, rowColumns, held, epochId);
  }

  @Override
  public boolean useCommitCoordinator() {
    return false; // each task commits its own transaction; there is nothing for the driver to coordinate
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    ObjectNode summary = JSON.createObjectNode();
    summary.put("epoch", epochId);
    ArrayNode tasks = summary.putArray("tasks");
    for (WriterCommitMessage message : messages) {
      if (!(message instanceof TaskCommit) || ((TaskCommit) message).task < 0) {
        continue;
      }
      TaskCommit commit = (TaskCommit) message;
      ObjectNode node = tasks.addObject();
      node.put("task", commit.task);
      node.put("worker_id", commit.workerId);
      node.put("records", commit.records);
      node.put("skipped", commit.skipped);
      node.put("transaction_ms", commit.transactionMs);
      ObjectNode positions = node.putObject("positions");
      for (Map.Entry<String, Long> p : commit.positions.entrySet()) {
        positions.put(p.getKey(), p.getValue());
      }
    }
    table.committed(summary.toString());
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    // every task aborted or will be fenced: nothing of the batch is visible to read_committed readers
  }
}
