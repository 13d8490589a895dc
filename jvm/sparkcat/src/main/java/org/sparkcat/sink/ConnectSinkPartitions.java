package org.sparkcat.sink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.sparkcat.connect.ConnectHosts;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * A Java sink connector's micro-batch on the executors: {@code batch.mapPartitions(new ConnectSinkPartitions(...))}
 * over Spark's Kafka rows routed so that each task's rows meet in one Spark partition (column {@code _task}). Each
 * partition's rows go to that task's Java {@code SinkTask} in this JVM ({@link ConnectHosts}) in chunks of columns;
 * the one string it returns is the batch's report: {@code task \t worker_id \t answer JSON}.
 *
 * <p>A Scala function itself, not Java's {@code MapPartitionsFunction}: Spark wraps the latter in a lambda of its own,
 * which an executor cannot deserialise when the function's class comes from {@code --jars} (measured on a standalone
 * cluster: "cannot assign instance of SerializedLambda to field MapPartitionsExec.func").
 */
public final class ConnectSinkPartitions extends AbstractFunction1<scala.collection.Iterator<Row>,
    scala.collection.Iterator<String>> implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int CHUNK = 10_000;

  private final String spec;
  private final String request;

  /** {@code spec}: the Connect host's; {@code request}: the batch's JSON (connector, generation, tasks, ...). */
  public ConnectSinkPartitions(String spec, String request) {
    this.spec = spec;
    this.request = request;
  }

  @Override
  public scala.collection.Iterator<String> apply(scala.collection.Iterator<Row> rows) {
    return CollectionConverters.asScala(call(CollectionConverters.asJava(rows)));
  }

  private Iterator<String> call(Iterator<Row> rows) {
    if (!rows.hasNext()) {
      return Collections.emptyIterator();
    }
    Chunk chunk = new Chunk();
    int task = -1;
    boolean first = true;
    while (rows.hasNext()) {
      Row row = rows.next();
      int rowTask = row.getInt(row.fieldIndex("_task"));
      if (task >= 0 && rowTask != task) {
        throw new IllegalStateException("one Spark partition holds tasks " + task + " and " + rowTask
            + "; a Java sink task's rows must meet in one partition");
      }
      task = rowTask;
      chunk.add(row);
      if (chunk.size() >= CHUNK && rows.hasNext()) {
        ConnectHosts.runSinkChunk(spec, request, task, first, false, chunk.columns());
        first = false;
        chunk = new Chunk();
      }
    }
    String answer = ConnectHosts.runSinkChunk(spec, request, task, first, true, chunk.columns());
    return Collections.singletonList(task + "\t" + ConnectHosts.workerId() + "\t" + answer).iterator();
  }

  /** Rows as the columns {@code ConnectHost.runSinkChunk} takes. */
  private static final class Chunk {
    private final List<String> topics = new ArrayList<>();
    private final List<Integer> partitions = new ArrayList<>();
    private final List<Long> offsets = new ArrayList<>();
    private final List<Long> timestamps = new ArrayList<>();
    private final List<byte[]> keys = new ArrayList<>();
    private final List<byte[]> values = new ArrayList<>();
    private final List<String[]> headerKeys = new ArrayList<>();
    private final List<byte[][]> headerValues = new ArrayList<>();

    int size() {
      return topics.size();
    }

    void add(Row row) {
      topics.add(row.getString(row.fieldIndex("topic")));
      partitions.add(row.getInt(row.fieldIndex("partition")));
      offsets.add(row.getLong(row.fieldIndex("offset")));
      int ts = row.fieldIndex("timestamp");
      timestamps.add(row.isNullAt(ts) ? -1L : row.getLong(ts));
      keys.add(row.getAs("key"));
      values.add(row.getAs("value"));
      int h = row.fieldIndex("headers");
      if (row.isNullAt(h)) {
        headerKeys.add(null);
        headerValues.add(null);
        return;
      }
      List<Row> headers = row.getList(h);
      String[] names = new String[headers.size()];
      byte[][] bytes = new byte[headers.size()][];
      for (int i = 0; i < names.length; i++) {
        names[i] = headers.get(i).getString(0);
        bytes[i] = headers.get(i).getAs(1);
      }
      headerKeys.add(names);
      headerValues.add(bytes);
    }

    Object[] columns() {
      int n = size();
      int[] parts = new int[n];
      long[] offs = new long[n];
      long[] stamps = new long[n];
      for (int i = 0; i < n; i++) {
        parts[i] = partitions.get(i);
        offs[i] = offsets.get(i);
        stamps[i] = timestamps.get(i);
      }
      return new Object[] {topics.toArray(new String[0]), parts, offs, stamps, keys.toArray(new byte[0][]),
          values.toArray(new byte[0][]), headerKeys.toArray(new String[0][]), headerValues.toArray(new byte[0][][])};
    }
  }
}
