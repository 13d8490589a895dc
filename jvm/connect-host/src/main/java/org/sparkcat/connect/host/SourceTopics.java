package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.logging.Logger;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.apache.kafka.connect.util.TopicAdmin;
import org.apache.kafka.connect.util.TopicCreation;
import org.apache.kafka.connect.util.TopicCreationGroup;

/**
 * A Java source task's topics: created before the first record goes to them (KIP-158), and noted as each batch's
 * records to them are acknowledged, for the driver to record as the connector's active topics (KIP-558).
 *
 * <p>Creation is Connect's own: {@link TopicCreation} over {@link TopicCreationGroup#configuredGroups} and a
 * {@link TopicAdmin} of the request's admin settings (the worker's, then {@code admin.override.*}), used as
 * {@code AbstractWorkerSourceTask.maybeCreateTopic} uses them, with its log lines and failure message. The driver
 * asks for it ({@code topic_creation} in the request) when its worker has {@code topic.creation.enable} and the
 * connector sets {@code topic.creation.*} keys; otherwise nothing is created. The active topics are reported with
 * each batch's answer; the driver writes the status-topic records it does not have yet (as for Python sources).
 */
final class SourceTopics implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SourceTopics.class.getName());

    private final ConnectorTaskId id;
    private final TopicCreation creation;
    private final TopicAdmin admin;
    /** The topics this batch's acknowledged records went to (the send callbacks add to it). */
    private final Set<String> used = new ConcurrentSkipListSet<>();

    private SourceTopics(ConnectorTaskId id, TopicCreation creation, TopicAdmin admin) {
        this.id = id;
        this.creation = creation;
        this.admin = admin;
    }

    /** The task's topics: with Connect's topic creation when {@code request.topic_creation} asks for it. */
    static SourceTopics of(ConnectorTaskId id, SourceConnectorConfig config, WorkerConfig worker, JsonNode request) {
        JsonNode enabled = request.get("topic_creation");
        if (enabled == null || !enabled.asBoolean() || !config.usesTopicCreation()) {
            return new SourceTopics(id, TopicCreation.empty(), null);
        }
        Map<String, TopicCreationGroup> groups = TopicCreationGroup.configuredGroups(config);
        TopicCreation creation = TopicCreation.newTopicCreation(worker, groups);
        return new SourceTopics(id, creation, creation.isTopicCreationEnabled() ? admin(request.get("admin")) : null);
    }

    private static TopicAdmin admin(JsonNode settings) {
        Map<String, Object> props = new HashMap<>(SourceTaskRun.strings(settings));
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        thread.setContextClassLoader(SourceTopics.class.getClassLoader());  // the clients' classes are the host's
        try {
            return new TopicAdmin(props);
        } finally {
            thread.setContextClassLoader(before);
        }
    }

    /** Connect's {@code maybeCreateTopic}: before the first record to {@code topic}, find or create it. */
    void beforeSend(String topic) {
        if (!creation.isTopicCreationRequired(topic)) {
            return;
        }
        LOG.info("Task " + id + ": the task will send records to topic '" + topic + "' for the first time. "
                + "Checking whether topic exists");
        if (!admin.describeTopics(topic).isEmpty()) {
            LOG.info("Task " + id + ": topic '" + topic + "' already exists.");
            creation.addTopic(topic);
            return;
        }
        TopicCreationGroup group = creation.findFirstGroup(topic);
        NewTopic newTopic = group.newTopic(topic);
        TopicAdmin.TopicCreationResponse response = admin.createOrFindTopics(newTopic);
        if (response.isCreated(topic)) {
            creation.addTopic(topic);
            LOG.info("Task " + id + ": created topic '" + newTopic + "' using creation group " + group);
        } else if (response.isExisting(topic)) {
            creation.addTopic(topic);
            LOG.info("Task " + id + ": found existing topic '" + newTopic + "'");
        } else {
            throw new ConnectException("Task failed to create new topic " + newTopic + ". Ensure that the task is "
                    + "authorized to create topics or that the topic exists and restart the task");
        }
    }

    /** A record to {@code topic} was acknowledged by Kafka (a send callback's thread). */
    void sent(String topic) {
        used.add(topic);
    }

    /** The topics this batch's records went to, sorted; the next batch starts a new list. */
    List<String> drainUsed() {
        Set<String> out = new TreeSet<>(used);
        used.removeAll(out);
        return List.copyOf(out);
    }

    @Override
    public void close() {
        if (admin != null) {
            TaskRun.quietly("Task " + id, admin::close);
        }
    }
}
