package org.sparkcat.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;

/**
 * The driver side of one query run: every planning call goes to the connector's {@link Planner}. Offsets
 * are the planner's JSON texts ({@code {"offsets": {partition key: source offset}}}), kept as they are, so
 * a checkpoint written by sparkcat's earlier Python data source reads back unchanged.
 */
final class PlannedStream implements MicroBatchStream, SupportsAdmissionControl, ReportsSourceMetrics {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String plannerId;
  private final long maxRows;
  private final PartitionReaderFactory readers;

  PlannedStream(String plannerId, long maxRows, PartitionReaderFactory readers) {
    this.plannerId = plannerId;
    this.maxRows = maxRows;
    this.readers = readers;
  }

  private Planner planner() {
    return Planners.get(plannerId);
  }

  @Override
  public Offset initialOffset() {
    return new JsonOffset(planner().initialOffset());
  }

  @Override
  public Offset deserializeOffset(String json) {
    return new JsonOffset(json);
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return maxRows > 0 ? ReadLimit.maxRows(maxRows) : ReadLimit.allAvailable();
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(start, limit) is the one Spark calls for this source");
  }

  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    long rows = limit instanceof ReadMaxRows ? ((ReadMaxRows) limit).maxRows() : -1;
    return new JsonOffset(planner().latestOffset(start.json(), rows));
  }

  @Override
  public Offset reportLatestOffset() {
    String latest = planner().reportLatestOffset();
    return latest == null ? null : new JsonOffset(latest);
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    List<InputPartition> out = new ArrayList<>();
    try {
      for (JsonNode item : JSON.readTree(planner().planPartitions(start.json(), end.json()))) {
        out.add(new TaskPartition(item.get(0).asInt(), Base64.getDecoder().decode(item.get(1).asText())));
      }
    } catch (IOException e) {
      throw new IllegalStateException("the planner of " + plannerId + " returned partitions that are not JSON", e);
    }
    return out.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return readers;
  }

  @Override
  public void commit(Offset end) {
    planner().commit(end.json());
  }

  /** The planner's metrics of the trigger ending now (a shared query's records per connector), if it has any. */
  @Override
  public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
    Planner planner;
    try {
      planner = planner();
    } catch (IllegalStateException gone) {
      return Collections.emptyMap();
    }
    String json = planner.metrics();
    if (json == null) {
      return Collections.emptyMap();
    }
    Map<String, String> out = new TreeMap<>();
    try {
      JSON.readTree(json).fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
    } catch (IOException e) {
      throw new IllegalStateException("the planner of " + plannerId + " returned metrics that are not JSON", e);
    }
    return out;
  }

  @Override
  public void stop() {
    Planner planner;
    try {
      planner = planner();
    } catch (IllegalStateException gone) {
      return; // the driver forgot it already (its query was stopped)
    }
    planner.stop();
  }

  /** A planner's offset text. */
  static final class JsonOffset extends Offset {
    private final String json;

    JsonOffset(String json) {
      this.json = json;
    }

    @Override
    public String json() {
      return json;
    }
  }

  /** One connector task's share of a batch: its id and what its executor reads the records with. */
  static final class TaskPartition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final int task;
    final byte[] payload;

    TaskPartition(int task, byte[] payload) {
      this.task = task;
      this.payload = payload;
    }
  }

  /** Reads a task partition as its one row. */
  static final class OneRowReaderFactory implements PartitionReaderFactory, Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      TaskPartition part = (TaskPartition) partition;
      return new PartitionReader<InternalRow>() {
        private boolean done;

        @Override
        public boolean next() {
          boolean more = !done;
          done = true;
          return more;
        }

        @Override
        public InternalRow get() {
          return new GenericInternalRow(new Object[] {part.task, part.payload});
        }

        @Override
        public void close() {}
      };
    }
  }
}
