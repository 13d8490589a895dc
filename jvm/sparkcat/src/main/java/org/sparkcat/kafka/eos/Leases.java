package org.sparkcat.kafka.eos;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The driver JVM's current leases, by key (the leader group's name): the Python driver puts the lease of
 * each new generation here as the group assigns it, and removes it when the driver stops leading. Each
 * micro-batch's writer factory takes the lease current when the batch is planned. A clearly named cache:
 * the only mutable static state of this module.
 */
public final class Leases {
  private static final ConcurrentHashMap<String, Lease> CURRENT = new ConcurrentHashMap<>();

  private Leases() {}

  /** This driver leads under {@code lease} (called through py4j on every assignment of partition 0). */
  public static void put(String key, Lease lease) {
    CURRENT.put(key, lease);
  }

  /** This driver does not lead (any more): batches planned from now on cannot commit. */
  public static void remove(String key) {
    CURRENT.remove(key);
  }

  static Lease get(String key) {
    return CURRENT.get(key);
  }
}
