package org.sparkcat.source;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The driver JVM's planners by id, registered by the Python driver before it starts a query (option
 * {@code planner}) and removed when the query ends. A clearly named cache: the registry is the only way a
 * stream Spark creates from options reaches the Python object that plans it.
 */
public final class Planners {
  private static final ConcurrentHashMap<String, Planner> REGISTERED = new ConcurrentHashMap<>();

  private Planners() {}

  public static void register(String id, Planner planner) {
    REGISTERED.put(id, planner);
  }

  public static void remove(String id) {
    REGISTERED.remove(id);
  }

  static Planner get(String id) {
    Planner planner = REGISTERED.get(id);
    if (planner == null) {
      throw new IllegalStateException("no planner " + id + " is registered in this driver: the query of a source "
          + "connector is started by sparkcat's driver only");
    }
    return planner;
  }
}
