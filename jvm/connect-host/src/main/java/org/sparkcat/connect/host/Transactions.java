package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.RetriableException;

/**
 * A Java source task's exactly-once writes (KIP-618 on micro-batches): its transactional producer's settings and
 * each batch's commit, with the batch's offsets in the offsets topic as Connect writes them (key
 * {@code ["connector",{partition}]}, value the offset; each to its key's partition, as Connect's producer puts it)
 * and, when the driver leads a group, its lease: the coordinator refuses the commit when that generation is over.
 */
final class Transactions {
    private static final Logger LOG = Logger.getLogger(Transactions.class.getName());
    private static final ObjectMapper SORTED = new ObjectMapper()
            .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private final String connector;
    private final String transactionalId;
    private final String offsetsTopic;
    private final String timeoutMs;

    private Transactions(String connector, JsonNode settings) {
        this.connector = connector;
        this.transactionalId = settings.get("transactional_id").asText();
        this.offsetsTopic = settings.get("offsets_topic").asText();
        this.timeoutMs = settings.get("transaction_timeout_ms").asText();
    }

    /** The request's {@code exactly_once} settings, or null: the task writes at least once. */
    static Transactions of(String connector, JsonNode settings) {
        return settings == null || settings.isNull() ? null : new Transactions(connector, settings);
    }

    void configure(Map<String, Object> props) {
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
    }

    /**
     * The offsets, then the lease, then the commit; a transaction with neither records ({@code sent}) nor offsets is
     * aborted (nothing to keep). Records without a source partition commit with no offset, as in Connect.
     */
    void commit(KafkaProducer<byte[], byte[]> producer, Iterable<Object[]> offsets, JsonNode lease, boolean sent)
            throws Exception {
        boolean any = sent;
        for (Object[] pair : offsets) {
            String key = "[" + SORTED.writeValueAsString(connector) + "," + OffsetsSnapshot.key(pair[0]) + "]";
            producer.send(new ProducerRecord<>(offsetsTopic, key.getBytes(StandardCharsets.UTF_8),
                    SORTED.writeValueAsBytes(pair[1])));
            any = true;
        }
        if (!any) {
            producer.abortTransaction();
            return;
        }
        try {
            if (lease != null && !lease.isNull()) {
                producer.sendOffsetsToTransaction(Map.of(new TopicPartition(lease.get("topic").asText(), 0),
                        new OffsetAndMetadata(0)), groupMetadata(lease));
            }
            producer.commitTransaction();
        } catch (CommitFailedException e) {  // a rebalance of the leader group: its new plan carries the new lease
            throw new RetriableException("the commit carried the leader group's previous generation "
                    + "(ILLEGAL_GENERATION): the batch is planned again under the current one", e);
        }
    }

    private static ConsumerGroupMetadata groupMetadata(JsonNode lease) {
        JsonNode instance = lease.get("instance");
        return new ConsumerGroupMetadata(lease.get("group").asText(), lease.get("generation").asInt(),
                lease.get("member").asText(), Optional.ofNullable(instance == null || instance.isNull()
                        ? null : instance.asText()));
    }

    void abortQuietly(KafkaProducer<byte[], byte[]> producer) {
        try {
            producer.abortTransaction();
        } catch (RuntimeException e) {  // fenced or fatal: the coordinator aborts it, or the fencer did
            LOG.warning("Aborting the transaction of " + transactionalId + " failed: " + e);
        }
    }
}
