package org.sparkcat.kafka.eos;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The sink's options ({@code writeStream.options(...)}), parsed once on the driver and shipped to the
 * executors inside each writer factory. Options prefixed {@code kafka.} are the producer's settings (Java
 * names, as Spark's own Kafka sink takes them); the {@code sparkcat.*} ones say whose transactions these are.
 */
final class WriterSettings implements Serializable {
  private static final long serialVersionUID = 1L;

  static final String CONNECTOR = "sparkcat.connector";
  static final String CONNECTOR_JSON = "sparkcat.connector.json";
  static final String GROUP_ID = "sparkcat.group.id";
  static final String OFFSETS_TOPIC = "sparkcat.offsets.topic";
  static final String LEASE_KEY = "sparkcat.lease.key";
  static final String REPLAY_THROUGH = "sparkcat.replay.through.epoch";
  static final long TRANSACTION_TIMEOUT_MS = 120_000L;

  final String connector;
  final String connectorJson;
  final String groupId;
  final String offsetsTopic;
  final String leaseKey;          // empty: no leader group (one driver on its own stores)
  final long replayThrough;       // epochs up to this one may repeat a batch an earlier run committed
  final HashMap<String, String> producer;

  private WriterSettings(Map<String, String> options) {
    connector = required(options, CONNECTOR);
    connectorJson = required(options, CONNECTOR_JSON);
    groupId = required(options, GROUP_ID);
    offsetsTopic = required(options, OFFSETS_TOPIC);
    leaseKey = options.getOrDefault(LEASE_KEY, "");
    replayThrough = Long.parseLong(options.getOrDefault(REPLAY_THROUGH, "-1"));
    producer = new HashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().startsWith("kafka.")) {
        producer.put(e.getKey().substring("kafka.".length()), e.getValue());
      }
    }
    if (!producer.containsKey(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG)) {
      throw new IllegalArgumentException("option kafka.bootstrap.servers is required");
    }
  }

  static WriterSettings of(Map<String, String> options) {
    // Spark hands options with lower-cased keys (CaseInsensitiveStringMap): look them up lower-cased.
    Map<String, String> lower = new HashMap<>();
    options.forEach((k, v) -> lower.put(k.toLowerCase(java.util.Locale.ROOT), v));
    Map<String, String> named = new HashMap<>();
    for (String key : new String[] {CONNECTOR, CONNECTOR_JSON, GROUP_ID, OFFSETS_TOPIC, LEASE_KEY, REPLAY_THROUGH}) {
      if (lower.containsKey(key)) {
        named.put(key, lower.get(key));
      }
    }
    options.forEach((k, v) -> {
      if (k.toLowerCase(java.util.Locale.ROOT).startsWith("kafka.")) {
        named.put("kafka." + k.substring("kafka.".length()), v);
      }
    });
    return new WriterSettings(named);
  }

  /** The transactional producer of one connector task: Connect's {@code {group.id}-{connector}-{task}}. */
  Properties producerProperties(int task) {
    Properties props = new Properties();
    props.putAll(producer);
    props.remove(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG); // timestamps are set here, not by the interceptor
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(task));
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    long timeout = Math.max(TRANSACTION_TIMEOUT_MS,
        Long.parseLong(producer.getOrDefault(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "0")));
    props.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Long.toString(timeout));
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return props;
  }

  String transactionalId(int task) {
    return groupId + "-" + connector + "-" + task;
  }

  /** How to connect (bootstrap, security): what a consumer reading the offsets topic needs. */
  Properties connection() {
    Properties props = new Properties();
    producer.forEach((k, v) -> {
      if (k.equals(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) || k.startsWith("security.") || k.startsWith("sasl.")
          || k.startsWith("ssl.") || k.equals("client.dns.lookup")) {
        props.put(k, v);
      }
    });
    return props;
  }

  private static String required(Map<String, String> options, String key) {
    String value = options.get(key);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("option " + key + " is required");
    }
    return value;
  }
}
