package org.sparkcat.tests.increment;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.util.ConnectorUtils;

/**
 * The source-connector tutorial's connector, in Java as its users wrote it: each increment {@code k} of
 * {@code increments} (e.g. {@code 1,100}) is one source partition {@code {"increment": k}} counting up into topic
 * {@code <topic.prefix><k>}; the record at position {@code p} (1, 2, ...) has the value {@code (p - 1) * k}, and the
 * stored offset {@code {"position": p}} is how many records of that increment were written.
 *
 * <p>For the tests: {@code fail.at.position} makes a task throw when an increment reaches that position.
 */
public class IncrementSourceConnector extends SourceConnector {
    static final ConfigDef CONFIG = new ConfigDef()
            .define("increments", ConfigDef.Type.LIST, ConfigDef.Importance.HIGH, "The increments, e.g. 1,100.")
            .define("topic.prefix", ConfigDef.Type.STRING, "seq_", ConfigDef.Importance.MEDIUM,
                    "Records of increment k go to topic <topic.prefix><k>.")
            .define("records.per.poll", ConfigDef.Type.INT, 100, ConfigDef.Importance.LOW,
                    "Records of each increment one poll returns.")
            .define("poll.interval.ms", ConfigDef.Type.LONG, 50L, ConfigDef.Importance.LOW,
                    "How long each poll waits before it returns its records.")
            .define("fail.at.position", ConfigDef.Type.LONG, -1L, ConfigDef.Importance.LOW,
                    "A task throws when an increment reaches this position (-1: never).");

    private Map<String, String> props;
    private List<String> increments;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
        this.increments = new AbstractConfig(CONFIG, props).getList("increments");
    }

    @Override
    public Class<? extends Task> taskClass() {
        return IncrementSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> out = new ArrayList<>();
        for (List<String> group : ConnectorUtils.groupPartitions(increments, Math.min(maxTasks, increments.size()))) {
            Map<String, String> config = new HashMap<>(props);
            config.put("increments", String.join(",", group));
            out.add(config);
        }
        return out;
    }

    /** Its records follow from the stored position alone, so a task restarted there writes the same records. */
    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1.0";
    }
}
