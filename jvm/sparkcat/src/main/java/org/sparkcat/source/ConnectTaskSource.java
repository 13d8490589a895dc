package org.sparkcat.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.sparkcat.connect.ConnectHosts;

/**
 * {@code readStream.format("sparkcat-connect-source").option("planner", id)}: a Java source connector's
 * micro-batches. Planned like {@link PlannedSource} by a {@link Planner} in the driver's Python; each task's
 * partition carries a JSON request, and its reader runs one batch of that Java {@code SourceTask} in this JVM
 * ({@link ConnectHosts}): poll, transform, convert, send to Kafka. The row it returns is the batch's report in
 * the shape of sparkcat's source result rows: {@code (task, worker_id, records, offsets, errors, topics)}, where
 * {@code topics} lists the topics the batch's acknowledged records went to (KIP-558's active topics).
 */
public final class ConnectTaskSource implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "sparkcat-connect-source";
  static final StructType SCHEMA = new StructType()
      .add("task", DataTypes.IntegerType, false)
      .add("worker_id", DataTypes.StringType, false)
      .add("records", DataTypes.LongType, false)
      .add("offsets", DataTypes.StringType, false)
      .add("errors", DataTypes.StringType, true)
      .add("topics", DataTypes.StringType, true);

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new PlannedSource.PlannedTable(SHORT_NAME, properties.get("planner"), -1, SCHEMA, new TaskBatches());
  }

  /** Runs each task partition's batch (its payload: {@code {"host": spec, "request": {...}}}). */
  static final class TaskBatches implements PartitionReaderFactory, Serializable {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      PlannedStream.TaskPartition part = (PlannedStream.TaskPartition) partition;
      return new PartitionReader<InternalRow>() {
        private InternalRow row;

        @Override
        public boolean next() throws IOException {
          if (row != null) {
            return false;
          }
          JsonNode payload = JSON.readTree(new String(part.payload, StandardCharsets.UTF_8));
          JsonNode transactional = payload.get("request").get("exactly_once");
          TaskContext context = TaskContext.get();
          if (context != null && context.attemptNumber() > 0 && transactional != null && !transactional.isNull()) {
            // The payload's committed offsets are those of the batch's planning: a retry after a committed
            // transaction would write it again. The query replans the batch instead (a retriable failure).
            throw new IllegalStateException("sparkcat task failed: " + payload.get("request").get("connector").asText()
                + "-" + part.task + ": RetriableException: attempt " + context.attemptNumber() + " of an exactly-once "
                + "batch; the batch is planned again from the committed offsets");
          }
          String answer = ConnectHosts.runSourceBatch(payload.get("host").toString(), payload.get("request").toString());
          JsonNode result = JSON.readTree(answer);
          JsonNode errors = result.get("errors");
          JsonNode topics = result.get("topics");
          row = new GenericInternalRow(new Object[] {part.task,
              UTF8String.fromString(ConnectHosts.workerId()),
              result.get("records").asLong(), UTF8String.fromString(result.get("offsets").toString()),
              errors == null || errors.isNull() ? null : UTF8String.fromString(errors.toString()),
              topics == null || topics.isNull() ? null : UTF8String.fromString(topics.toString())});
          return true;
        }

        @Override
        public InternalRow get() {
          return row;
        }

        @Override
        public void close() {}
      };
    }
  }
}
