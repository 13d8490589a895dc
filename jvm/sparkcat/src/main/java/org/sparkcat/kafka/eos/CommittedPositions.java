package org.sparkcat.kafka.eos;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The positions a connector committed, read from the offsets topic once no transaction opened before now
 * is still open: what a possible replay skips. Read on an executor, only for a batch that may repeat one
 * an earlier run or attempt committed (the query's first batch, a retried task).
 */
final class CommittedPositions {
  private CommittedPositions() {}

  /** {@code "topic:partition" -> next offset} of every position of the connector. */
  static Map<String, Long> read(WriterSettings settings, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (KafkaConsumer<byte[], byte[]> committed = consumer(settings, "read_committed");
         KafkaConsumer<byte[], byte[]> raw = consumer(settings, "read_uncommitted")) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (PartitionInfo info : raw.partitionsFor(settings.offsetsTopic, timeout)) {
        partitions.add(new TopicPartition(info.topic(), info.partition()));
      }
      Map<TopicPartition, Long> highs = raw.endOffsets(partitions, timeout);
      waitStable(committed, highs, deadline);
      return scan(committed, settings, highs, deadline);
    }
  }

  /** Until each partition's last stable offset (a read_committed end) reaches the high watermark taken first. */
  private static void waitStable(KafkaConsumer<byte[], byte[]> committed, Map<TopicPartition, Long> highs,
      long deadline) {
    while (true) {
      Map<TopicPartition, Long> stable = committed.endOffsets(highs.keySet(), remaining(deadline));
      boolean done = highs.entrySet().stream().allMatch(e -> stable.get(e.getKey()) >= e.getValue());
      if (done) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("a transaction on the offsets topic stayed open past the timeout");
      }
      sleep(100);
    }
  }

  private static Map<String, Long> scan(KafkaConsumer<byte[], byte[]> consumer, WriterSettings settings,
      Map<TopicPartition, Long> ends, long deadline) {
    byte[] prefix = ConnectOffsets.prefix(settings.connectorJson).getBytes(StandardCharsets.UTF_8);
    Map<String, Long> out = new HashMap<>();
    consumer.assign(ends.keySet());
    consumer.seekToBeginning(ends.keySet());
    while (ends.entrySet().stream().anyMatch(e -> consumer.position(e.getKey()) < e.getValue())) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("reading the offsets topic did not finish before the timeout");
      }
      for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
        if (record.key() == null || !startsWith(record.key(), prefix)) {
          continue;
        }
        String tp = ConnectOffsets.topicPartition(record.key());
        if (tp == null) {
          continue;
        }
        long next = ConnectOffsets.nextOffset(record.value());
        if (next < 0) {
          out.remove(tp);
        } else {
          out.put(tp, next);
        }
      }
    }
    return out;
  }

  private static KafkaConsumer<byte[], byte[]> consumer(WriterSettings settings, String isolation) {
    Properties props = settings.connection();
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return new KafkaConsumer<>(props);
  }

  private static boolean startsWith(byte[] bytes, byte[] prefix) {
    if (bytes.length < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (bytes[i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  private static Duration remaining(long deadline) {
    return Duration.ofNanos(Math.max(1_000_000L, deadline - System.nanoTime()));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the offsets topic", e);
    }
  }
}
