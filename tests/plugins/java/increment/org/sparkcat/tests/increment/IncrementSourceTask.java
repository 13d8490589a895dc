package org.sparkcat.tests.increment;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** Counts up each of its increments from the stored position (see {@link IncrementSourceConnector}). */
public class IncrementSourceTask extends SourceTask {
    private final Map<Long, Long> positions = new HashMap<>();
    private String prefix;
    private int perPoll;
    private long interval;
    private long failAt;

    @Override
    public void start(Map<String, String> props) {
        AbstractConfig config = new AbstractConfig(IncrementSourceConnector.CONFIG, props);
        prefix = config.getString("topic.prefix");
        perPoll = config.getInt("records.per.poll");
        interval = config.getLong("poll.interval.ms");
        failAt = config.getLong("fail.at.position");
        for (String k : config.getList("increments")) {
            long increment = Long.parseLong(k.trim());
            Map<String, Object> stored = context.offsetStorageReader().offset(partition(increment));
            positions.put(increment, stored == null ? 0L : (Long) stored.get("position"));
        }
    }

    private static Map<String, Long> partition(long increment) {
        return Map.of("increment", increment);
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        Thread.sleep(interval);
        List<SourceRecord> out = new ArrayList<>();
        for (Map.Entry<Long, Long> entry : positions.entrySet()) {
            long increment = entry.getKey();
            for (int i = 0; i < perPoll; i++) {
                long position = entry.getValue() + 1;
                if (position == failAt) {
                    throw new ConnectException("increment " + increment + " reached position " + position);
                }
                entry.setValue(position);
                out.add(new SourceRecord(partition(increment), Map.of("position", position), prefix + increment,
                        null, Schema.INT64_SCHEMA, (position - 1) * increment));
            }
        }
        return out;
    }

    @Override
    public void stop() {}

    @Override
    public String version() {
        return "1.0";
    }
}
