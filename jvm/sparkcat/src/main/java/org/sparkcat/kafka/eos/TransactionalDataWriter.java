package org.sparkcat.kafka.eos;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One Connect task's share of one micro-batch, written in one Kafka transaction (on an executor).
 *
 * <p>On the first row: a producer with the task's transactional id, whose {@code initTransactions} fences
 * every earlier instance of the task (a killed driver's, an earlier attempt's) and aborts its open
 * transaction; on a possible replay (the query's first batch, a retried task) the committed positions are
 * read once no older transaction is open, and rows below them (committed by the earlier run) are skipped.
 * At commit: the task's new positions to the offsets topic in Connect's format, the driver's lease (an
 * offset commit to the leader group the coordinator checks), then {@code commitTransaction}: the records
 * and the positions become visible together, or neither does.
 */
final class TransactionalDataWriter implements DataWriter<InternalRow> {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private final WriterSettings settings;
  private final Columns columns;
  private final Lease lease;
  private final boolean replay;
  private final AtomicReference<Exception> failed = new AtomicReference<>();
  private final Map<String, Long> ends = new HashMap<>();
  private KafkaProducer<byte[], byte[]> producer;
  private Map<String, Long> floors = Collections.emptyMap();
  private int task = -1;
  private long records;
  private long skipped;
  private long transactionNanos;

  TransactionalDataWriter(WriterSettings settings, Columns columns, Lease lease, long epochId) {
    this.settings = settings;
    this.columns = columns;
    this.lease = lease;
    TaskContext context = TaskContext.get();
    this.replay = epochId <= settings.replayThrough || (context != null && context.attemptNumber() > 0);
  }

  @Override
  public void write(InternalRow row) {
    int rowTask = row.getInt(columns.task);
    if (producer == null) {
      begin(rowTask);
    } else if (rowTask != task) {
      throw new IllegalStateException("one Spark partition holds rows of tasks " + task + " and " + rowTask
          + "; exactly-once needs one task per partition");
    }
    String srcTopic = row.getUTF8String(columns.srcTopic).toString();
    int srcPartition = row.getInt(columns.srcPartition);
    long srcOffset = row.getLong(columns.srcOffset);
    String tp = srcTopic + ":" + srcPartition;
    Long floor = floors.get(tp);
    if (floor != null && srcOffset < floor) {
      skipped++;
      return;
    }
    producer.send(record(row), (metadata, error) -> {
      if (error != null) {
        failed.compareAndSet(null, error);
      }
    });
    ends.merge(tp, srcOffset + 1, Math::max);
    records++;
    if (failed.get() != null) {
      throw new IllegalStateException("sending to Kafka failed: " + failed.get(), failed.get());
    }
  }

  private void begin(int rowTask) {
    long started = System.nanoTime();
    task = rowTask;
    producer = new KafkaProducer<>(settings.producerProperties(task));
    producer.initTransactions();
    if (replay) {
      floors = CommittedPositions.read(settings, TIMEOUT.multipliedBy(3));
    }
    producer.beginTransaction();
    transactionNanos += System.nanoTime() - started;
  }

  private ProducerRecord<byte[], byte[]> record(InternalRow row) {
    Integer partition = row.isNullAt(columns.partition) ? null : row.getInt(columns.partition);
    Long timestamp = row.isNullAt(columns.timestamp) ? null : row.getLong(columns.timestamp);
    if (timestamp != null && timestamp <= 0) {
      timestamp = null;
    }
    if (partition != null && partition < 0) {
      partition = null;
    }
    byte[] key = row.isNullAt(columns.key) ? null : row.getBinary(columns.key);
    byte[] value = row.isNullAt(columns.value) ? null : row.getBinary(columns.value);
    String topic = row.getUTF8String(columns.topic).toString();
    return new ProducerRecord<>(topic, partition, timestamp, key, value, headers(row));
  }

  private RecordHeaders headers(InternalRow row) {
    RecordHeaders out = new RecordHeaders();
    if (row.isNullAt(columns.headers)) {
      return out;
    }
    ArrayData array = row.getArray(columns.headers);
    for (int i = 0; i < array.numElements(); i++) {
      InternalRow header = array.getStruct(i, 2);
      String name = header.isNullAt(0) ? "" : header.getUTF8String(0).toString();
      out.add(name, header.isNullAt(1) ? null : header.getBinary(1));
    }
    return out;
  }

  @Override
  public WriterCommitMessage commit() {
    if (producer == null) {
      return new TaskCommit(-1, workerId(), 0, 0, Collections.emptyMap(), 0.0);
    }
    producer.flush();
    if (failed.get() != null) {
      throw new IllegalStateException("sending to Kafka failed: " + failed.get(), failed.get());
    }
    for (Map.Entry<String, Long> end : ends.entrySet()) {
      int colon = end.getKey().lastIndexOf(':');
      String topic = end.getKey().substring(0, colon);
      int partition = Integer.parseInt(end.getKey().substring(colon + 1));
      producer.send(new ProducerRecord<>(settings.offsetsTopic,
          ConnectOffsets.key(settings.connectorJson, topic, partition), ConnectOffsets.value(end.getValue())));
    }
    long committing = System.nanoTime();
    if (lease != null) {
      producer.sendOffsetsToTransaction(
          Collections.singletonMap(new TopicPartition(lease.topic, 0), new OffsetAndMetadata(0)), lease.metadata());
    }
    producer.commitTransaction();
    transactionNanos += System.nanoTime() - committing;
    return new TaskCommit(task, workerId(), records, skipped, new HashMap<>(ends), transactionNanos / 1e6);
  }

  @Override
  public void abort() {
    if (producer == null) {
      return;
    }
    try {
      producer.abortTransaction();
    } catch (RuntimeException e) {
      // fenced or fatal: the coordinator aborts it, or the next instance's initTransactions does
    }
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close(Duration.ofSeconds(5));
      producer = null;
    }
  }

  private static String workerId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      host = "unknown";
    }
    SparkEnv env = SparkEnv.get();
    return host + ":" + (env == null ? "driver" : env.executorId());
  }
}
