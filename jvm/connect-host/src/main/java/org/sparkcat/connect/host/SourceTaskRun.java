package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.TaskConfig;
import org.apache.kafka.connect.runtime.TransformationChain;
import org.apache.kafka.connect.runtime.TransformationStage;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.errors.ErrorHandlingMetrics;
import org.apache.kafka.connect.runtime.errors.LogReporter;
import org.apache.kafka.connect.runtime.errors.ProcessingContext;
import org.apache.kafka.connect.runtime.errors.RetryWithToleranceOperator;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.runtime.errors.ToleranceType;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.apache.kafka.connect.util.ConnectUtils;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * One Java {@link SourceTask} on an executor, kept across micro-batches: each {@link #batch} polls it, applies the
 * connector's transformations and converters (Connect's own {@link TransformationChain},
 * {@link RetryWithToleranceOperator} and converter loading), sends to Kafka and answers the last source offset of
 * each source partition once every record is acknowledged, which the driver stores as Connect stores offsets.
 *
 * <p>As in Connect's {@code AbstractWorkerSourceTask}: {@code commitRecord} when Kafka acknowledged a record (or it
 * was filtered or skipped), {@code commit} once its offsets are stored (at the next batch: the driver stores a
 * batch's offsets before it plans the next one). A topic is created before its first record and reported once a
 * record to it is acknowledged ({@link SourceTopics}: KIP-158 and KIP-558).
 *
 * <p>Exactly once (KIP-618, the request's {@code exactly_once}): the producer is transactional with Connect's
 * {@code transactional.id} ({@code group.id-connector-task}; initialising it fences every earlier instance), and
 * each batch is one transaction holding the records and, in the offsets topic with Connect's key and value, the
 * batch's offsets, committed under the driver's lease when it has one (the leader group's generation, which the
 * coordinator checks). {@code commit} follows the transaction's commit. One batch at a time ({@link TaskRuns}).
 */
final class SourceTaskRun implements TaskRun {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger LOG = Logger.getLogger(SourceTaskRun.class.getName());

    private final String generation;
    private final ConnectorTaskId id;
    private final Plugins plugins;
    private final ClassLoader loader;
    private SourceTask task;
    private Converter keyConverter;
    private Converter valueConverter;
    private HeaderConverter headerConverter;
    private RetryWithToleranceOperator<SourceRecord> retry;
    private ErrorHandlingMetrics errorMetrics;
    private TransformationChain<SourceRecord, SourceRecord> chain;
    private KafkaProducer<byte[], byte[]> producer;
    private SourceTopics topics;
    private volatile long lastUsedMs = System.currentTimeMillis();
    private boolean uncommitted;
    private OffsetsSnapshot committed;
    /** The offsets this run last reported, by partition key: what the driver's store holds if no one else ran. */
    private final Map<String, String> reported = new HashMap<>();
    private final Transactions transactions;

    SourceTaskRun(Plugins plugins, WorkerConfig worker, ConnectMetrics metrics, JsonNode request) throws Exception {
        this.generation = request.get("generation").asText();
        this.id = new ConnectorTaskId(request.get("connector").asText(), request.get("task").asInt());
        this.plugins = plugins;
        this.transactions = Transactions.of(id.connector(), request.get("exactly_once"));
        Map<String, String> connectorConfig = strings(request.get("connector_config"));
        Map<String, String> taskConfig = strings(request.get("task_config"));
        this.loader = plugins.connectorClass(connectorConfig.get("connector.class")).getClassLoader();
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            JsonNode creation = request.get("topic_creation");
            SourceConnectorConfig config = new SourceConnectorConfig(plugins, connectorConfig,
                    creation != null && creation.asBoolean());
            TaskConverters converters = TaskConverters.of(plugins, config, worker);
            this.keyConverter = converters.key();
            this.valueConverter = converters.value();
            this.headerConverter = converters.header();
            this.errorMetrics = new ErrorHandlingMetrics(id, metrics);
            this.retry = new RetryWithToleranceOperator<>(config.errorRetryTimeout(), config.errorMaxDelayInMillis(),
                    config.errorToleranceType(), Time.SYSTEM, errorMetrics);
            if (config.enableErrorLog()) {
                retry.reporters(List.of(new LogReporter.Source(id, config, errorMetrics)));
            }
            List<TransformationStage<SourceRecord>> stages = config.transformationStages(plugins, id, metrics);
            this.chain = new TransformationChain<>(stages, retry);
            this.producer = producer(request.get("producer"), transactions);
            this.topics = SourceTopics.of(id, config, worker, request);
            Class<?> taskClass = Class.forName(taskConfig.get(TaskConfig.TASK_CLASS_CONFIG), true, loader);
            this.task = (SourceTask) plugins.newTask(taskClass.asSubclass(SourceTask.class));
            this.committed = new OffsetsSnapshot(request.get("offsets"));
            OffsetStorageReader offsets = committed;
            task.initialize(new SourceTaskContext() {
                @Override
                public Map<String, String> configs() {
                    return taskConfig;
                }

                @Override
                public OffsetStorageReader offsetStorageReader() {
                    return offsets;
                }

                @Override
                public PluginMetrics pluginMetrics() {
                    return metrics.connectorPluginMetrics(id.connector());
                }
            });
            task.start(taskConfig);
        } catch (Exception | Error e) {
            closeQuietly();
            throw e;
        }
    }

    /** Connect's source producer defaults (acks=all, idempotent, in order), then the request's settings. */
    private static KafkaProducer<byte[], byte[]> producer(JsonNode settings, Transactions transactions) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.putAll(strings(settings));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        if (transactions != null) {
            transactions.configure(props);
        }
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        thread.setContextClassLoader(SourceTaskRun.class.getClassLoader());  // the clients' classes are the host's
        try {
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
            if (transactions != null) {
                producer.initTransactions();  // fences every earlier instance of this task
            }
            return producer;
        } finally {
            thread.setContextClassLoader(before);
        }
    }

    @Override
    public String generation() {
        return generation;
    }

    @Override
    public long lastUsedMs() {
        return lastUsedMs;
    }

    /**
     * Poll until {@code maxRecords} records, {@code maxMillis}, or a poll that returns nothing; send them; answer
     * {@code {"records": n, "offsets": [[partition, offset], ...], "errors": {...}, "topics": [...]}} once Kafka
     * acknowledged all.
     */
    synchronized String batch(int maxRecords, long maxMillis, JsonNode offsets, JsonNode lease) throws Exception {
        lastUsedMs = System.currentTimeMillis();
        committed.update(offsets);  // what the driver stored before it planned this batch, before commit() below
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (uncommitted) {  // the previous batch's offsets are stored: the driver planned this one after that
                commitTask();
                uncommitted = false;
            }
            if (transactions != null) {
                producer.beginTransaction();
            }
            try {
                return pollAndSend(maxRecords, maxMillis, lease);
            } catch (Exception | Error e) {
                if (transactions != null) {
                    transactions.abortQuietly(producer);
                }
                throw e;
            }
        }
    }

    private String pollAndSend(int maxRecords, long maxMillis, JsonNode lease) throws Exception {
        Map<String, Object[]> offsets = new LinkedHashMap<>();
        AtomicReference<Exception> sendFailure = new AtomicReference<>();
        AtomicInteger sendSkipped = new AtomicInteger();
        int sent = 0;
        int skipped = 0;
        long deadline = System.currentTimeMillis() + maxMillis;
        while (sent + skipped < maxRecords && System.currentTimeMillis() < deadline) {
            List<SourceRecord> polled;
            try {
                polled = task.poll();
            } catch (RetriableException e) {  // as Connect's WorkerSourceTask: poll again, next batch
                LOG.warning("Task " + id + ": poll failed, to be retried: " + e);
                break;
            }
            if (polled == null || polled.isEmpty()) {
                break;
            }
            for (SourceRecord record : polled) {
                if (record.sourcePartition() != null) {
                    offsets.put(OffsetsSnapshot.key(record.sourcePartition()),
                            new Object[] {record.sourcePartition(), record.sourceOffset()});
                }
                ProcessingContext<SourceRecord> context = new ProcessingContext<>(record);
                ProducerRecord<byte[], byte[]> out = convert(context, chain.apply(context, record));
                if (out == null) {  // filtered by a transformation, or failed and tolerated
                    skipped += context.failed() ? 1 : 0;
                    task.commitRecord(record, null);
                    continue;
                }
                topics.beforeSend(out.topic());
                producer.send(out, (metadata, error) -> acknowledged(record, out.topic(), metadata, error,
                        sendFailure, sendSkipped));
                sent++;
            }
        }
        producer.flush();
        if (sendFailure.get() != null) {
            throw sendFailure.get();
        }
        if (transactions != null) {  // records and offsets commit together, then the task hears of it
            transactions.commit(producer, offsets.values(), lease, sent > 0);
            if (!offsets.isEmpty()) {
                task.commit();
            }
        } else {
            uncommitted = !offsets.isEmpty();
        }
        lastUsedMs = System.currentTimeMillis();
        reported.putAll(reportedOffsets(offsets.values()));  // an empty batch keeps what it reported before
        int acknowledged = sent - sendSkipped.get();
        return answer(acknowledged, offsets.values(), skipped + sendSkipped.get(), topics.drainUsed());
    }

    private static Map<String, String> reportedOffsets(Iterable<Object[]> offsets) throws Exception {
        Map<String, String> out = new HashMap<>();
        for (Object[] pair : offsets) {
            out.put(OffsetsSnapshot.key(pair[0]), OffsetsSnapshot.key(pair[1]));
        }
        return out;
    }

    /**
     * False when the driver's committed offsets differ from what this run last reported for one of its partitions:
     * another instance of the task (on another executor) ran since, or this run's last batch was not committed;
     * either way this run's position is not the committed one, and its task restarts from the committed offsets.
     */
    @Override
    public boolean current(JsonNode request) {
        if (reported.isEmpty()) {
            return true;
        }
        Map<String, String> committed = new HashMap<>();
        for (JsonNode pair : request.get("offsets")) {
            committed.put(OffsetsSnapshot.key(pair.get(0)), OffsetsSnapshot.key(pair.get(1)));
        }
        for (Map.Entry<String, String> e : reported.entrySet()) {
            if (!e.getValue().equals(committed.get(e.getKey()))) {
                LOG.info("Task " + id + ": the committed offset of " + e.getKey() + " is not the one this executor "
                        + "reported last; the task restarts from the committed offsets");
                return false;
            }
        }
        return true;
    }

    /** {@code SourceTask.commitRecord}; a failure is logged, as Connect's {@code commitTaskRecord} logs it. */
    private void commitRecord(SourceRecord record, RecordMetadata metadata) {
        try {
            task.commitRecord(record, metadata);
        } catch (Throwable t) {
            LOG.warning("Task " + id + ": commitRecord threw, which Connect ignores too: " + t);
        }
    }

    /** {@code SourceTask.commit}; a failure is logged, as Connect's {@code commitSourceTask} logs it. */
    private void commitTask() {
        try {
            task.commit();
        } catch (Throwable t) {
            LOG.warning("Task " + id + ": commit threw, which Connect ignores too: " + t);
        }
    }

    private void acknowledged(SourceRecord record, String topic, RecordMetadata metadata, Exception error,
                              AtomicReference<Exception> failure, AtomicInteger skipped) {
        // exactly once: a record Kafka refuses fails the task whatever errors.tolerance says, as in Connect
        if (error != null && (transactions != null || retry.getErrorToleranceType() != ToleranceType.ALL)) {
            failure.compareAndSet(null, error);
            return;
        }
        if (error != null) {  // errors.tolerance=all: Connect skips a record Kafka refuses (KIP-779)
            skipped.incrementAndGet();
        } else {  // Connect's recordActiveTopic: a topic is active once a record to it is acknowledged
            topics.sent(topic);
        }
        commitRecord(record, error == null ? metadata : null);
    }

    /** Connect's {@code convertTransformedRecord}: headers, key and value through the connector's converters. */
    private ProducerRecord<byte[], byte[]> convert(ProcessingContext<SourceRecord> context, SourceRecord record) {
        if (record == null || context.failed()) {
            return null;
        }
        RecordHeaders headers = retry.execute(context, () -> headers(record), Stage.HEADER_CONVERTER,
                headerConverter.getClass());
        byte[] key = retry.execute(context, () -> keyConverter.fromConnectData(record.topic(), headers,
                record.keySchema(), record.key()), Stage.KEY_CONVERTER, keyConverter.getClass());
        byte[] value = retry.execute(context, () -> valueConverter.fromConnectData(record.topic(), headers,
                record.valueSchema(), record.value()), Stage.VALUE_CONVERTER, valueConverter.getClass());
        if (context.failed()) {
            return null;
        }
        return new ProducerRecord<>(record.topic(), record.kafkaPartition(),
                ConnectUtils.checkAndConvertTimestamp(record.timestamp()), key, value, headers);
    }

    private RecordHeaders headers(SourceRecord record) {
        RecordHeaders out = new RecordHeaders();
        if (record.headers() != null) {
            for (Header header : record.headers()) {
                out.add(header.key(), headerConverter.fromConnectHeader(record.topic(), header.key(),
                        header.schema(), header.value()));
            }
        }
        return out;
    }

    private static String answer(int records, Iterable<Object[]> offsets, int skipped, List<String> topics)
            throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", records);
        List<Object[]> pairs = new ArrayList<>();
        offsets.forEach(pairs::add);
        out.put("offsets", pairs);
        out.put("topics", topics);
        if (skipped > 0) {
            out.put("errors", Map.of("record_failures", skipped, "record_errors", skipped, "records_skipped",
                    skipped, "last_error_ms", System.currentTimeMillis()));
        }
        return JSON.writeValueAsString(out);
    }

    static Map<String, String> strings(JsonNode object) {
        Map<String, String> out = new HashMap<>();
        if (object != null) {
            object.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        }
        return out;
    }

    @Override
    public synchronized void close() {
        closeQuietly();
    }

    private void closeQuietly() {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (task != null) {
                TaskRun.quietly("Task " + id, task::stop);
            }
            if (producer != null) {
                TaskRun.quietly("Task " + id, producer::close);
            }
            if (topics != null) {
                TaskRun.quietly("Task " + id, topics::close);
            }
            if (chain != null) {
                TaskRun.quietly("Task " + id, chain::close);
            }
            if (errorMetrics != null) {
                TaskRun.quietly("Task " + id, errorMetrics::close);
            }
        }
    }
}
