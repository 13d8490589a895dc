package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.ConnectorContext;
import org.apache.kafka.connect.runtime.TaskConfig;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;

/**
 * One Java {@link Connector} instance in the driver JVM: Connect's {@code WorkerConnector} half that runs it.
 *
 * <p>Python drives it through py4j ({@code sparkcat/spark/driver/java_connectors.py}): start, task configs (as
 * JSON, each completed with {@code task.class} as Connect's Worker does), stop. What the connector asks of the
 * runtime through its {@link ConnectorContext} is kept here and taken by Python, which polls it: no Java-to-Python
 * callback crosses the host's isolated class loader.
 */
public final class HostedConnector {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Plugins plugins;
    private final Connector connector;
    private final ClassLoader loader;
    private final AtomicBoolean reconfigure = new AtomicBoolean();
    private final AtomicReference<String> raised = new AtomicReference<>();

    HostedConnector(Plugins plugins, String className, Supplier<PluginMetrics> metrics) {
        this.plugins = plugins;
        this.loader = plugins.connectorClass(className).getClassLoader();
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            this.connector = plugins.newConnector(className);
            connector.initialize(new ConnectorContext() {
                @Override
                public void requestTaskReconfiguration() {
                    reconfigure.set(true);
                }

                @Override
                public void raiseError(Exception e) {
                    raised.compareAndSet(null, trace(e));
                }

                @Override
                public PluginMetrics pluginMetrics() {
                    return metrics.get();
                }
            });
        }
    }

    /** {@code Connector.start(config)} with the connector's plugin loader as the thread's context loader. */
    public void start(Map<String, String> config) {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            connector.start(new HashMap<>(config));
        }
    }

    /** The connector's task configs as a JSON list, each with {@code task.class} (Connect's Worker adds it too). */
    public String taskConfigs(int maxTasks) throws Exception {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            String taskClass = connector.taskClass().getName();
            List<Map<String, String>> out = new ArrayList<>();
            for (Map<String, String> config : connector.taskConfigs(maxTasks)) {
                Map<String, String> completed = new HashMap<>(config);
                completed.put(TaskConfig.TASK_CLASS_CONFIG, taskClass);
                out.add(completed);
            }
            return JSON.writeValueAsString(out);
        }
    }

    public String version() {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            return connector.version();
        }
    }

    public void stop() {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            connector.stop();
        }
    }

    /** Whether the connector asked for its tasks to be reconfigured since the last call. */
    public boolean takeReconfigurationRequest() {
        return reconfigure.getAndSet(false);
    }

    /** The stack trace of the error the connector raised ({@code raiseError}), once, else null. */
    public String takeRaisedError() {
        return raised.getAndSet(null);
    }

    static String trace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
