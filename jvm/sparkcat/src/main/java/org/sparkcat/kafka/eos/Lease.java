package org.sparkcat.kafka.eos;

import java.io.Serializable;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;

/**
 * The planning driver's proof of leadership: its membership (member id, generation) in the cluster's
 * leader group. A transaction that carries it ({@code sendOffsetsToTransaction}) is refused by the group
 * coordinator ({@code ILLEGAL_GENERATION}, {@code UNKNOWN_MEMBER_ID}) once another driver leads, so a
 * driver resumed from a pause cannot commit a batch it planned before (KIP-447's fencing by generation).
 * Made on the driver, serialised to executors inside the writer factory.
 */
public final class Lease implements Serializable {
  private static final long serialVersionUID = 1L;

  final String groupId;
  final int generationId;
  final String memberId;
  final String groupInstanceId; // null without static membership
  final String topic;           // the config topic: partition 0 is what the leader holds

  public Lease(String groupId, int generationId, String memberId, String groupInstanceId, String topic) {
    this.groupId = groupId;
    this.generationId = generationId;
    this.memberId = memberId;
    this.groupInstanceId = groupInstanceId;
    this.topic = topic;
  }

  ConsumerGroupMetadata metadata() {
    return new ConsumerGroupMetadata(groupId, generationId, memberId, Optional.ofNullable(groupInstanceId));
  }

  @Override
  public String toString() {
    return "lease of " + groupId + " (generation " + generationId + ", member " + memberId + ")";
  }
}
