package org.sparkcat.kafka.eos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;

/**
 * A sink connector's positions in Kafka Connect's offsets-topic format, as sparkcat's Python side writes
 * them: key {@code ["NAME",{"kafka_partition":P,"kafka_topic":"T"}]} (partition keys sorted, compact JSON),
 * value {@code {"kafka_offset":N}} (the next offset to read). {@code connectorJson} is the connector's name
 * already encoded as a JSON string by the Python side, so both sides write byte-identical keys.
 */
final class ConnectOffsets {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ConnectOffsets() {}

  static byte[] key(String connectorJson, String topic, int partition) {
    String text = "[" + connectorJson + ",{\"kafka_partition\":" + partition + ",\"kafka_topic\":"
        + quote(topic) + "}]";
    return text.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(long nextOffset) {
    return ("{\"kafka_offset\":" + nextOffset + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** The key prefix of every position record of the connector. */
  static String prefix(String connectorJson) {
    return "[" + connectorJson + ",";
  }

  /** {@code "topic:partition"} of a position record's key, or null for a key that is not one. */
  static String topicPartition(byte[] key) {
    try {
      JsonNode node = JSON.readTree(key);
      JsonNode partition = node.get(1);
      if (partition == null || !partition.has("kafka_topic") || !partition.has("kafka_partition")) {
        return null;
      }
      return partition.get("kafka_topic").asText() + ":" + partition.get("kafka_partition").asInt();
    } catch (java.io.IOException | RuntimeException e) {
      return null;
    }
  }

  /** The next offset of a position record's value; -1 for a tombstone or a value that is not a position. */
  static long nextOffset(byte[] value) {
    if (value == null) {
      return -1;
    }
    try {
      JsonNode node = JSON.readTree(value);
      return node != null && node.has("kafka_offset") ? node.get("kafka_offset").asLong() : -1;
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
  }

  private static String quote(String text) {
    try {
      return JSON.writeValueAsString(text);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }
}
