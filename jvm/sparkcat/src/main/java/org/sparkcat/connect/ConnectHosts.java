package org.sparkcat.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;

/**
 * The Kafka Connect hosts of this JVM ({@code jvm/connect-host}'s {@code ConnectHost}), one per host spec: the
 * host's jars and its worker keys ({@code plugin.path}, {@code plugin.discovery}). A clearly named cache: Connect's
 * plugin scan takes seconds, so the driver's host serves its local-mode executor tasks too, and an executor scans
 * once for all its batches.
 *
 * <p>The host lives in a class loader of its own whose parent is the platform loader (connect-runtime needs
 * kafka-clients 4.1.1; Spark's Kafka connector brings 3.9.2), so it is called by reflection with JDK types only.
 */
public final class ConnectHosts {
  private static final String HOST_CLASS = "org.sparkcat.connect.host.ConnectHost";
  private static final ObjectMapper SORTED =
      new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);
  private static final ConcurrentHashMap<String, Object> HOSTS = new ConcurrentHashMap<>();
  /** One loader per jar list: hosts of other plugin paths are then of one class, which py4j needs (it caches the
   * methods it calls by class name, so a second class of the same name would get the first one's methods). */
  private static final ConcurrentHashMap<List<String>, ClassLoader> LOADERS = new ConcurrentHashMap<>();

  private ConnectHosts() {}

  /** The host of {@code spec} ({@code {"jars": [...], "worker": {...}}}), made and scanned on first use. */
  public static Object host(String spec) {
    String key = canonical(spec);
    return HOSTS.computeIfAbsent(key, k -> newHost(k));
  }

  /** One micro-batch of a Java source task (see {@code ConnectHost.runSourceBatch}); its JSON answer. */
  public static String runSourceBatch(String spec, String request) {
    return (String) call(host(spec), "runSourceBatch", request);
  }

  /** One chunk of a Java sink task's batch (see {@code ConnectHost.runSinkChunk}); its JSON answer on the last. */
  public static String runSinkChunk(String spec, String request, int task, boolean first, boolean last,
                                    Object[] columns) {
    Object host = host(spec);
    try {
      Method m = host.getClass().getMethod("runSinkChunk", String.class, int.class, boolean.class, boolean.class,
          Object[].class);
      return (String) m.invoke(host, request, task, first, last, columns);
    } catch (InvocationTargetException e) {
      throw rethrown(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("the Kafka Connect host has no runSinkChunk", e);
    }
  }

  /** Stop the Java tasks of {@code connector} in this JVM, in every host (its query ended). */
  public static void stopTasks(String connector) {
    for (Object host : HOSTS.values()) {
      call(host, "stopTasks", connector);
    }
  }

  /** {@code host:executor-id}, as sparkcat's Python executors name themselves ({@code host:driver} locally). */
  public static String workerId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = "localhost";
    }
    SparkEnv env = SparkEnv.get();
    return host + ":" + (env == null ? "driver" : env.executorId());
  }

  private static String canonical(String spec) {
    try {
      return SORTED.writeValueAsString(SORTED.readValue(spec, Map.class));
    } catch (Exception e) {
      throw new IllegalArgumentException("a Connect host spec that is not JSON: " + spec, e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Object newHost(String spec) {
    try {
      Map<String, Object> parsed = SORTED.readValue(spec, Map.class);
      ClassLoader loader = LOADERS.computeIfAbsent((List<String>) parsed.get("jars"), ConnectHosts::loaderOf);
      Class<?> cls = Class.forName(HOST_CLASS, true, loader);
      return cls.getConstructor(Map.class).newInstance((Map<String, String>) parsed.get("worker"));
    } catch (InvocationTargetException e) {
      throw rethrown(e.getCause());
    } catch (ReflectiveOperationException | IOException e) {
      throw new IllegalStateException("cannot load the Kafka Connect host from " + spec + ": " + e, e);
    }
  }

  private static ClassLoader loaderOf(List<String> jars) {
    URL[] urls = new URL[jars.size()];
    for (int i = 0; i < urls.length; i++) {
      try {
        urls[i] = new File(jars.get(i)).toURI().toURL();
      } catch (java.net.MalformedURLException e) {
        throw new IllegalArgumentException("not a jar path: " + jars.get(i), e);
      }
    }
    return new URLClassLoader("sparkcat-connect-host", urls, ClassLoader.getPlatformClassLoader());
  }

  private static Object call(Object host, String method, String argument) {
    try {
      Method m = host.getClass().getMethod(method, String.class);
      return m.invoke(host, argument);
    } catch (InvocationTargetException e) {
      throw rethrown(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("the Kafka Connect host has no " + method + "(String)", e);
    }
  }

  private static RuntimeException rethrown(Throwable cause) {
    if (cause instanceof RuntimeException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof Error) {
      throw (Error) cause;
    }
    return new IllegalStateException(cause);
  }
}
