package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.InternalSinkRecord;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.TaskConfig;
import org.apache.kafka.connect.runtime.TransformationChain;
import org.apache.kafka.connect.runtime.TransformationStage;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter;
import org.apache.kafka.connect.runtime.errors.ErrorHandlingMetrics;
import org.apache.kafka.connect.runtime.errors.ErrorReporter;
import org.apache.kafka.connect.runtime.errors.LogReporter;
import org.apache.kafka.connect.runtime.errors.ProcessingContext;
import org.apache.kafka.connect.runtime.errors.RetryWithToleranceOperator;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.runtime.errors.WorkerErrantRecordReporter;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.util.ConnectUtils;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * One Java {@link SinkTask} on an executor, kept across micro-batches. Each batch ({@link #begin}, {@link #put} per
 * chunk of rows, {@link #end}) converts Spark's Kafka rows to {@code SinkRecord}s with the connector's converters and
 * transformations (Connect's own {@link TransformationChain} and {@link RetryWithToleranceOperator}, with the log and
 * dead letter queue reporters, and {@code errantRecordReporter} as KIP-610 has it), hands them to {@code put}, and
 * ends with {@code preCommit} (which flushes by default): the offsets it answers are what the driver commits, to the
 * {@code connect-NAME} group and the offsets store, as Connect commits them.
 *
 * <p>{@code open}/{@code close} follow the task's topic-partitions as the driver assigns them each batch. The
 * context's {@code offset} (rewinding), {@code pause} and {@code resume} are not supported: Spark reads the input,
 * so a task that calls them fails with that reason rather than have them ignored.
 */
final class SinkTaskRun implements TaskRun {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How long a put that throws Connect's RetriableException is retried, with the task's timeout between tries. */
    private static final long RETRY_PUT_FOR_MS = 300_000;

    private final String generation;
    private final ConnectorTaskId id;
    private final Plugins plugins;
    private final ClassLoader loader;
    private SinkTask task;
    private Converter keyConverter;
    private Converter valueConverter;
    private HeaderConverter headerConverter;
    private RetryWithToleranceOperator<ConsumerRecord<byte[], byte[]>> retry;
    private ErrorHandlingMetrics errorMetrics;
    private TransformationChain<ConsumerRecord<byte[], byte[]>, SinkRecord> chain;
    private WorkerErrantRecordReporter errantReporter;
    private final Set<TopicPartition> assigned = new HashSet<>();
    private final Map<TopicPartition, OffsetAndMetadata> consumed = new LinkedHashMap<>();
    private final List<SinkRecord> pending = new ArrayList<>();
    private volatile long lastUsedMs = System.currentTimeMillis();
    private long timeoutMs = 1000;
    private int records;
    private int skipped;
    private boolean inBatch;

    SinkTaskRun(Plugins plugins, WorkerConfig worker, ConnectMetrics metrics, JsonNode request) throws Exception {
        this.generation = request.get("generation").asText();
        int taskId = request.get("task").asInt();
        this.id = new ConnectorTaskId(request.get("connector").asText(), taskId);
        this.plugins = plugins;
        Map<String, String> connectorConfig = SourceTaskRun.strings(request.get("connector_config"));
        Map<String, String> taskConfig = SourceTaskRun.strings(request.get("tasks").get(String.valueOf(taskId))
                .get("task_config"));
        this.loader = plugins.connectorClass(connectorConfig.get("connector.class")).getClassLoader();
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            SinkConnectorConfig config = new SinkConnectorConfig(plugins, connectorConfig);
            TaskConverters converters = TaskConverters.of(plugins, config, worker);
            this.keyConverter = converters.key();
            this.valueConverter = converters.value();
            this.headerConverter = converters.header();
            this.errorMetrics = new ErrorHandlingMetrics(id, metrics);
            this.retry = new RetryWithToleranceOperator<>(config.errorRetryTimeout(), config.errorMaxDelayInMillis(),
                    config.errorToleranceType(), Time.SYSTEM, errorMetrics);
            retry.reporters(reporters(config, request.get("producer")));
            List<TransformationStage<SinkRecord>> stages = config.transformationStages(plugins, id, metrics);
            this.chain = new TransformationChain<>(stages, retry);
            this.errantReporter = new WorkerErrantRecordReporter(retry, keyConverter, valueConverter, headerConverter);
            Class<?> taskClass = Class.forName(taskConfig.get(TaskConfig.TASK_CLASS_CONFIG), true, loader);
            this.task = (SinkTask) plugins.newTask(taskClass.asSubclass(SinkTask.class));
            task.initialize(new Context(taskConfig, metrics));
            task.start(taskConfig);
        } catch (Exception | Error e) {
            close();
            throw e;
        }
    }

    private List<ErrorReporter<ConsumerRecord<byte[], byte[]>>> reporters(SinkConnectorConfig config,
                                                                         JsonNode producer) {
        List<ErrorReporter<ConsumerRecord<byte[], byte[]>>> out = new ArrayList<>();
        if (!config.dlqTopicName().isEmpty()) {  // Connect's own reporter: creates the topic if missing, then sends
            Map<String, Object> props = new HashMap<>(SourceTaskRun.strings(producer));
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            out.add(DeadLetterQueueReporter.createAndSetup(new HashMap<>(props), id, config, props, errorMetrics));
        }
        if (config.enableErrorLog()) {
            out.add(new LogReporter.Sink(id, config, errorMetrics));
        }
        return out;
    }

    @Override
    public String generation() {
        return generation;
    }

    @Override
    public long lastUsedMs() {
        return lastUsedMs;
    }

    /** A batch begins: {@code close} what the task no longer owns and {@code open} what is new to it. */
    synchronized void begin(JsonNode taskRequest) {
        lastUsedMs = System.currentTimeMillis();
        Set<TopicPartition> now = new HashSet<>();
        for (JsonNode tp : taskRequest.get("assignment")) {
            now.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        }
        consumed.clear();
        pending.clear();
        records = 0;
        skipped = 0;
        inBatch = true;
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            Set<TopicPartition> gone = new HashSet<>(assigned);
            gone.removeAll(now);
            Set<TopicPartition> added = new HashSet<>(now);
            added.removeAll(assigned);
            if (!gone.isEmpty()) {
                task.close(gone);
            }
            assigned.clear();
            assigned.addAll(now);
            if (!added.isEmpty()) {
                task.open(added);
            }
        }
    }

    /**
     * A chunk of Kafka rows as columns: {@code String[] topics, int[] partitions, long[] offsets, long[] timestamps,
     * byte[][] keys, byte[][] values, String[][] header keys, byte[][][] header values} (JDK types: they cross from
     * Spark's class loader into this one). Converted, transformed and handed to {@code put}.
     */
    synchronized void put(Object[] columns) throws Exception {
        lastUsedMs = System.currentTimeMillis();  // a long batch's run is in use: the idle reaper leaves it
        if (!inBatch) {
            throw new IllegalStateException("rows for task " + id + " outside a batch: its run was replaced while the "
                    + "batch ran");
        }
        String[] topics = (String[]) columns[0];
        int[] partitions = (int[]) columns[1];
        long[] offsets = (long[]) columns[2];
        long[] timestamps = (long[]) columns[3];
        byte[][] keys = (byte[][]) columns[4];
        byte[][] values = (byte[][]) columns[5];
        String[][] headerKeys = (String[][]) columns[6];
        byte[][][] headerValues = (byte[][][]) columns[7];
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            for (int i = 0; i < topics.length; i++) {
                RecordHeaders headers = new RecordHeaders();
                if (headerKeys[i] != null) {
                    for (int h = 0; h < headerKeys[i].length; h++) {
                        headers.add(headerKeys[i][h], headerValues[i][h]);
                    }
                }
                ConsumerRecord<byte[], byte[]> message = new ConsumerRecord<>(topics[i], partitions[i], offsets[i],
                        timestamps[i], TimestampType.CREATE_TIME, -1, -1, keys[i], values[i], headers,
                        Optional.empty());
                consumed.put(new TopicPartition(topics[i], partitions[i]), new OffsetAndMetadata(offsets[i] + 1));
                records++;
                SinkRecord record = convertAndTransform(message);
                if (record != null) {
                    pending.add(record);
                }
            }
            deliver();
        }
    }

    /** Connect's {@code WorkerSinkTask.convertAndTransformRecord}; null when tolerated failures or a filter drop it. */
    private SinkRecord convertAndTransform(ConsumerRecord<byte[], byte[]> message) {
        ProcessingContext<ConsumerRecord<byte[], byte[]>> context = new ProcessingContext<>(message);
        SchemaAndValue key = retry.execute(context, () -> keyConverter.toConnectData(message.topic(),
                message.headers(), message.key()), Stage.KEY_CONVERTER, keyConverter.getClass());
        SchemaAndValue value = retry.execute(context, () -> valueConverter.toConnectData(message.topic(),
                message.headers(), message.value()), Stage.VALUE_CONVERTER, valueConverter.getClass());
        Headers headers = retry.execute(context, () -> headers(message), Stage.HEADER_CONVERTER,
                headerConverter.getClass());
        if (context.failed()) {
            skipped++;
            return null;
        }
        SinkRecord record = new SinkRecord(message.topic(), message.partition(), key.schema(), key.value(),
                value.schema(), value.value(), message.offset(),
                ConnectUtils.checkAndConvertTimestamp(message.timestamp()), message.timestampType(), headers);
        SinkRecord transformed = chain.apply(context, record);
        if (context.failed()) {
            skipped++;
        }
        return transformed == null || context.failed() ? null : new InternalSinkRecord(context, transformed);
    }

    private Headers headers(ConsumerRecord<byte[], byte[]> message) {
        Headers out = new ConnectHeaders();
        message.headers().forEach(h -> out.add(h.key(), headerConverter.toConnectHeader(message.topic(), h.key(),
                h.value())));
        return out;
    }

    /** {@code put} what is pending; a RetriableException is retried after the task's timeout, as Connect does. */
    private void deliver() throws Exception {
        long giveUp = System.currentTimeMillis() + RETRY_PUT_FOR_MS;
        while (true) {
            try {
                task.put(new ArrayList<>(pending));
                pending.clear();
                errantReporter.maybeThrowAsyncError();
                return;
            } catch (RetriableException e) {
                if (System.currentTimeMillis() > giveUp) {
                    throw e;
                }
                Thread.sleep(timeoutMs);
            }
        }
    }

    /** The batch ends: {@code preCommit} with what was consumed; answers the offsets it commits, as JSON. */
    synchronized String end() throws Exception {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            errantReporter.awaitFutures(consumed.keySet());
            Map<TopicPartition, OffsetAndMetadata> committed = task.preCommit(new HashMap<>(consumed));
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : consumed.entrySet()) {
                OffsetAndMetadata given = committed.get(e.getKey());
                if (given == null || given.offset() < e.getValue().offset()) {
                    // Spark's checkpoint moves past every record it handed over: what preCommit holds back would be
                    // skipped after a restart, so such a sink is refused rather than losing records.
                    throw new UnsupportedOperationException("preCommit held back the offset of " + e.getKey()
                            + " (" + (given == null ? "none" : given.offset()) + " of " + e.getValue().offset()
                            + "): sparkcat commits every record of a batch at its end, and does not run sinks that "
                            + "commit later (buffering across batches) yet");
                }
            }
            List<Object[]> offsets = new ArrayList<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                offsets.add(new Object[] {Map.of("kafka_topic", e.getKey().topic(), "kafka_partition",
                        e.getKey().partition()), Map.of("kafka_offset", e.getValue().offset())});
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("records", records - skipped);
            out.put("offsets", offsets);
            if (skipped > 0) {
                out.put("errors", Map.of("record_failures", skipped, "record_errors", skipped, "records_skipped",
                        skipped, "last_error_ms", System.currentTimeMillis()));
            }
            lastUsedMs = System.currentTimeMillis();
            inBatch = false;
            return JSON.writeValueAsString(out);
        }
    }

    @Override
    public synchronized void close() {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (task != null) {
                TaskRun.quietly("Task " + id, () -> task.close(new HashSet<>(assigned)));
                TaskRun.quietly("Task " + id, task::stop);
            }
            if (chain != null) {
                TaskRun.quietly("Task " + id, chain::close);
            }
            if (retry != null) {
                TaskRun.quietly("Task " + id, retry::close);
            }
            if (errorMetrics != null) {
                TaskRun.quietly("Task " + id, errorMetrics::close);
            }
        }
    }

    /** The task's {@link SinkTaskContext}: what sparkcat supports, and a clear refusal of what it does not. */
    private final class Context implements SinkTaskContext {
        private final Map<String, String> configs;
        private final ConnectMetrics metrics;

        Context(Map<String, String> configs, ConnectMetrics metrics) {
            this.configs = configs;
            this.metrics = metrics;
        }

        @Override
        public Map<String, String> configs() {
            return configs;
        }

        @Override
        public void offset(Map<TopicPartition, Long> offsets) {
            throw new UnsupportedOperationException("SinkTaskContext.offset (rewinding " + offsets.keySet()
                    + "): sparkcat does not let a Java sink task move its input yet; Spark's Kafka source reads it");
        }

        @Override
        public void offset(TopicPartition partition, long offset) {
            offset(Map.of(partition, offset));
        }

        @Override
        public void timeout(long ms) {
            timeoutMs = ms;
        }

        @Override
        public Set<TopicPartition> assignment() {
            return new HashSet<>(assigned);
        }

        @Override
        public void pause(TopicPartition... partitions) {
            throw new UnsupportedOperationException("SinkTaskContext.pause: sparkcat does not pause a Java sink "
                    + "task's partitions yet; Spark's Kafka source reads them");
        }

        @Override
        public void resume(TopicPartition... partitions) {
            throw new UnsupportedOperationException("SinkTaskContext.resume: sparkcat does not pause a Java sink "
                    + "task's partitions yet");
        }

        @Override
        public void requestCommit() {
            // every micro-batch ends with preCommit and a commit: a requested one comes at this batch's end
        }

        @Override
        public ErrantRecordReporter errantRecordReporter() {
            return errantReporter;
        }

        @Override
        public PluginMetrics pluginMetrics() {
            return metrics.connectorPluginMetrics(id.connector());
        }
    }
}
