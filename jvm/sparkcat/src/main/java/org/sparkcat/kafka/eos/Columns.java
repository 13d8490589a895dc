package org.sparkcat.kafka.eos;

import java.io.Serializable;
import org.apache.spark.sql.types.StructType;

/**
 * Where each column of the rows to write is. The Python side builds the frame: {@code _task} (the Connect
 * task owning the row's source partition), the target {@code topic} and {@code partition} (null: the
 * producer's partitioner), {@code key}, {@code value}, {@code headers} (array of key/value structs),
 * {@code timestamp} (epoch ms; null or 0: the producer's now) and the source position {@code src_topic},
 * {@code src_partition}, {@code src_offset}.
 */
final class Columns implements Serializable {
  private static final long serialVersionUID = 1L;

  final int task;
  final int topic;
  final int partition;
  final int key;
  final int value;
  final int headers;
  final int timestamp;
  final int srcTopic;
  final int srcPartition;
  final int srcOffset;

  Columns(StructType schema) {
    task = index(schema, "_task");
    topic = index(schema, "topic");
    partition = index(schema, "partition");
    key = index(schema, "key");
    value = index(schema, "value");
    headers = index(schema, "headers");
    timestamp = index(schema, "timestamp");
    srcTopic = index(schema, "src_topic");
    srcPartition = index(schema, "src_partition");
    srcOffset = index(schema, "src_offset");
  }

  private static int index(StructType schema, String name) {
    for (int i = 0; i < schema.fields().length; i++) {
      if (schema.fields()[i].name().equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException("the rows to write have no column " + name + " (schema " + schema.simpleString() + ")");
  }
}
