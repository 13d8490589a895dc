package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.ConfigKey;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.runtime.AbstractHerder;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConfigKeyInfo;
import org.apache.kafka.connect.runtime.rest.entities.PluginInfo;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * Kafka Connect's Java plugins from {@code plugin.path}, as Connect's own {@link Plugins} finds and isolates them.
 *
 * <p>Lives in the driver JVM in a class loader of its own (connect-runtime and kafka-clients 4.1.1, parent: the
 * platform loader); sparkcat's Python calls it through py4j, so every argument and answer is a JDK type or JSON
 * text in the shapes of Connect's REST entities ({@code PluginInfo}, {@code ConfigKeyInfo}, {@code ConfigInfos}).
 * It lists plugins, describes and validates connector configs, starts connectors on the driver
 * ({@link #startConnector}) and runs source tasks' micro-batches where Spark runs them ({@link #runSourceBatch}:
 * on an executor, one host per executor JVM).
 */
public final class ConnectHost {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Plugins plugins;
    private final WorkerConfig worker;
    private ConnectMetrics metrics;
    private TaskRuns<SourceTaskRun> sourceTasks;
    private TaskRuns<SinkTaskRun> sinkTasks;

    /**
     * {@code workerProps}: Connect's worker keys {@code plugin.path}, {@code plugin.discovery} and
     * {@code topic.creation.enable} (which validation and source tasks' topic creation read). The worker's
     * converters are JSON, sparkcat's default for every connector that names none.
     */
    public ConnectHost(Map<String, String> workerProps) {
        java.util.logging.Logger.getLogger("org.apache.kafka").setLevel(java.util.logging.Level.WARNING);
        Map<String, String> props = new HashMap<>(workerProps);
        props.putIfAbsent(WorkerConfig.KEY_CONVERTER_CLASS_CONFIG, JsonConverter.class.getName());
        props.putIfAbsent(WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG, JsonConverter.class.getName());
        // StandaloneConfig carries the worker's keys for Connect's config enrichment; its offsets file is never opened
        props.putIfAbsent(StandaloneConfig.OFFSET_STORAGE_FILE_FILENAME_CONFIG, "unused");
        this.plugins = new Plugins(props);
        this.worker = inHost(() -> new StandaloneConfig(props));
    }

    /**
     * Runs {@code call} with this host's class loader as the thread's context loader: Kafka's {@code ConfigDef}
     * loads CLASS-typed values through it, and py4j's threads carry Spark's loader (kafka-clients 3.9.2).
     */
    private static <T> T inHost(Callable<T> call) {
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        thread.setContextClassLoader(ConnectHost.class.getClassLoader());
        try {
            return call.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        } finally {
            thread.setContextClassLoader(before);
        }
    }

    /** {@code GET /connector-plugins}: Connect's {@code PluginInfo} of each connector (every plugin when false). */
    public String plugins(boolean connectorsOnly) {
        return inHost(() -> {
            List<PluginInfo> out = new ArrayList<>();
            addAll(out, plugins.sourceConnectors());
            addAll(out, plugins.sinkConnectors());
            if (!connectorsOnly) {
                addAll(out, plugins.transformations());
                addAll(out, plugins.predicates());
                addAll(out, plugins.converters());
                addAll(out, plugins.headerConverters());
            }
            return JSON.writeValueAsString(out);
        });
    }

    private static void addAll(List<PluginInfo> out, Set<? extends PluginDesc<?>> descs) {
        for (PluginDesc<?> desc : descs) {
            out.add(new PluginInfo(desc));
        }
    }

    /** "source" or "sink" when {@code name} (a class name or Connect's alias) is a connector found here, else null. */
    public String connectorType(String name) {
        return inHost(() -> {
            Class<? extends Connector> cls;
            try {
                cls = plugins.connectorClass(name);
            } catch (RuntimeException e) {  // ConnectException: no such connector, or an ambiguous alias
                return null;
            }
            return SinkConnector.class.isAssignableFrom(cls) ? "sink" : "source";
        });
    }

    /** {@code GET /connector-plugins/NAME/config}: the connector's keys, then the framework's, as Connect lists them. */
    public String pluginConfig(String name) {
        return inHost(() -> {
            Class<? extends Connector> cls = plugins.connectorClass(name);
            try (LoaderSwap swap = plugins.withClassLoader(cls.getClassLoader())) {
                Connector connector = plugins.newConnector(name);
                ConfigDef base = connector instanceof SinkConnector ? SinkConnectorConfig.configDef()
                        : SourceConnectorConfig.configDef();
                Map<String, ConfigKey> keys = new LinkedHashMap<>(connector.config().configKeys());
                base.configKeys().forEach(keys::putIfAbsent);
                List<ConfigKeyInfo> out = new ArrayList<>();
                for (ConfigKey key : keys.values()) {
                    out.add(withPluginVersion(AbstractHerder.convertConfigKey(key), connector.version()));
                }
                return JSON.writeValueAsString(out);
            }
        });
    }

    /** Connect 4.1 (KIP-891) shows the plugin's own version as the default of {@code connector.plugin.version}. */
    private static ConfigKeyInfo withPluginVersion(ConfigKeyInfo key, String version) {
        if (!ConnectorConfig.CONNECTOR_VERSION.equals(key.name())) {
            return key;
        }
        return new ConfigKeyInfo(key.name(), key.type(), key.required(), version, key.importance(),
                key.documentation(), key.group(), key.orderInGroup(), key.width(), key.displayName(),
                key.dependents());
    }

    /**
     * {@code PUT /connector-plugins/NAME/config/validate}: the framework's keys (with the transforms' and predicates'
     * own, as Connect enriches them), then the connector's {@code config()} and {@code validate()}, merged by
     * Connect's {@code AbstractHerder.generateResult}. Converter and client-override checks are sparkcat's.
     * {@code exactlyOnce}: the worker writes sources in transactions; {@code exactly.once.support=required} is then
     * checked with the connector's {@code exactlyOnceSupport}, as Connect's distributed herder checks it.
     */
    public String validate(Map<String, String> props, boolean exactlyOnce) {
        return inHost(() -> {
            Map<String, String> config = new HashMap<>(props);
            String name = config.get(ConnectorConfig.CONNECTOR_CLASS_CONFIG);
            Class<? extends Connector> cls = plugins.connectorClass(name);
            try (LoaderSwap swap = plugins.withClassLoader(cls.getClassLoader())) {
                Connector connector = plugins.newConnector(name);
                boolean sink = connector instanceof SinkConnector;
                ConfigDef enriched = ConnectorConfig.enrich(plugins, sink
                        ? SinkConnectorConfig.enrichedConfigDef(plugins, config, worker)
                        : SourceConnectorConfig.enrichedConfigDef(plugins, config, worker), config, false);
                Map<String, ConfigValue> validated = enriched.validateAll(config);
                if (sink) {
                    SinkConnectorConfig.validate(config, validated);
                } else {
                    checkExactlyOnceSupport((SourceConnector) connector, config, validated, exactlyOnce);
                }
                List<ConfigValue> values = new ArrayList<>(validated.values());
                Map<String, ConfigKey> keys = new LinkedHashMap<>(enriched.configKeys());
                Set<String> groups = new LinkedHashSet<>(enriched.groups());
                ConfigDef own = connector.config();
                Config checked = connector.validate(config);
                keys.putAll(own.configKeys());
                groups.addAll(own.groups());
                values.addAll(checked.configValues());
                ConfigInfos infos = AbstractHerder.generateResult(name, keys, values, new ArrayList<>(groups));
                return JSON.writeValueAsString(infos);
            }
        });
    }

    /** Connect's {@code DistributedHerder.validateSourceConnectorExactlyOnceSupport}, with its messages. */
    private static void checkExactlyOnceSupport(SourceConnector connector, Map<String, String> config,
                                                Map<String, ConfigValue> validated, boolean exactlyOnce) {
        ConfigValue support = validated.get(SourceConnectorConfig.EXACTLY_ONCE_SUPPORT_CONFIG);
        if (support == null || !support.errorMessages().isEmpty()
                || !"required".equalsIgnoreCase(String.valueOf(support.value()))) {
            return;
        }
        if (!exactlyOnce) {
            support.addErrorMessage("This worker does not have exactly-once source support enabled.");
        }
        ExactlyOnceSupport answer;
        try {
            answer = connector.exactlyOnceSupport(config);
        } catch (RuntimeException e) {
            support.addErrorMessage("An unexpected error occurred during validation: " + e.getMessage());
            return;
        }
        if (answer == null) {
            support.addErrorMessage("The connector does not implement the API required for preflight validation of "
                    + "exactly-once source support. Please consult the documentation for the connector to determine "
                    + "whether it supports exactly-once semantics, and then consider reconfiguring the connector to "
                    + "use the value \"requested\" for this property (which will disable this preflight check and "
                    + "allow the connector to be created).");
        } else if (answer != ExactlyOnceSupport.SUPPORTED) {
            support.addErrorMessage("The connector does not support exactly-once semantics with the provided "
                    + "configuration.");
        }
    }

    /** Connect's metrics of this JVM's connectors and tasks (error handling, plugin metrics), made once. */
    private synchronized ConnectMetrics metrics() {
        if (metrics == null) {
            metrics = inHost(() -> new ConnectMetrics("sparkcat", worker, Time.SYSTEM, "sparkcat"));
        }
        return metrics;
    }

    /** A Java connector instance for the driver, initialized, not started ({@link HostedConnector#start}). */
    public HostedConnector startConnector(String className) {
        return inHost(() -> new HostedConnector(plugins, className,
                () -> metrics().connectorPluginMetrics(className)));
    }

    private synchronized TaskRuns<SourceTaskRun> sourceTasks() {
        if (sourceTasks == null) {
            sourceTasks = new TaskRuns<>(request -> started(() -> new SourceTaskRun(plugins, worker, metrics(),
                    request)));
        }
        return sourceTasks;
    }

    private synchronized TaskRuns<SinkTaskRun> sinkTasks() {
        if (sinkTasks == null) {
            sinkTasks = new TaskRuns<>(request -> started(() -> new SinkTaskRun(plugins, worker, metrics(), request)));
        }
        return sinkTasks;
    }

    private static <R> R started(Callable<R> start) {
        try {
            return start.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new TaskRuns.WrappedStart(e);
        }
    }

    /**
     * One micro-batch of a Java source task in this JVM: the request and answer are JSON
     * ({@code sparkcat/spark/driver/java_source.py} writes the one, {@code ConnectTaskSource} reads the other).
     * A failure raises with the task named as sparkcat's driver reads it.
     */
    public String runSourceBatch(String request) {
        return inHost(() -> {
            JsonNode parsed = JSON.readTree(request);
            return sourceTasks().with(parsed, parsed.get("task").asInt(), run -> run.batch(
                    parsed.get("max_records").asInt(), parsed.get("max_poll_ms").asLong(), parsed.get("offsets"),
                    parsed.get("lease")));
        });
    }

    /**
     * One chunk of a Java sink task's micro-batch in this JVM ({@code ConnectSinkPartitions} in {@code jvm/sparkcat}
     * sends the rows of the task's Spark partition as columns of JDK types: see {@link SinkTaskRun#put}). The first
     * chunk opens the batch (and the task's partitions when they changed); the last one ends it with the task's
     * {@code preCommit} and answers the batch's report as JSON; other chunks answer null.
     */
    public String runSinkChunk(String request, int task, boolean first, boolean last, Object[] columns) {
        return inHost(() -> {
            ObjectNode parsed = (ObjectNode) JSON.readTree(request);
            parsed.put("task", task);
            return sinkTasks().with(parsed, task, run -> {
                if (first) {
                    run.begin(parsed.get("tasks").get(String.valueOf(task)));
                }
                run.put(columns);
                return last ? run.end() : null;
            });
        });
    }

    /** Stop the Java tasks of {@code connector} running in this JVM (its query ended). */
    public void stopTasks(String connector) {
        inHost(() -> {
            sourceTasks().stopConnector(connector);
            sinkTasks().stopConnector(connector);
            return null;
        });
    }
}
