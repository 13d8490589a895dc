package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * A source task's {@link OffsetStorageReader} over the connector's committed offsets, as the driver read them from
 * sparkcat's offsets store when it planned the batch (the same records a Connect worker keeps in
 * {@code connect-offsets}, so offsets one wrote carry over to the other).
 *
 * <p>Offsets are decoded as Connect's {@code OffsetStorageReaderImpl} decodes them, with a schemaless
 * {@link JsonConverter}: whole numbers come back as {@code Long}, which tasks such as FileStreamSource insist on.
 * Partitions match by their JSON with keys sorted, so {@code 0} as Integer or Long is the same partition.
 *
 * <p>Each batch brings the offsets committed when it was planned ({@link #update}): a task that reads its committed
 * offsets after {@code commit} (Debezium confirms them to PostgreSQL's replication slot so) sees them move.
 */
final class OffsetsSnapshot implements OffsetStorageReader {
    private static final ObjectMapper SORTED = new ObjectMapper()
            .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private volatile Map<String, Map<String, Object>> byPartition = Map.of();

    /** {@code pairs}: the JSON list {@code [[partition, offset], ...]}. */
    OffsetsSnapshot(JsonNode pairs) throws Exception {
        update(pairs);
    }

    /** The committed offsets are now {@code pairs} (the JSON list {@code [[partition, offset], ...]}). */
    void update(JsonNode pairs) throws Exception {
        JsonConverter decoder = new JsonConverter();
        decoder.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), false);
        Map<String, Map<String, Object>> byPartition = new HashMap<>();
        for (JsonNode pair : pairs) {
            JsonNode offset = pair.get(1);
            if (offset == null || offset.isNull()) {
                continue;
            }
            byte[] bytes = SORTED.writeValueAsBytes(offset);
            Object decoded = decoder.toConnectData("", bytes).value();
            if (decoded instanceof Map) {
                @SuppressWarnings("unchecked")
                Map<String, Object> map = (Map<String, Object>) decoded;
                byPartition.put(key(SORTED.treeToValue(pair.get(0), Object.class)), map);
            }
        }
        this.byPartition = byPartition;
    }

    /** Canonical JSON (keys sorted) of a partition or offset, a Java map or a JSON tree: equal values, equal keys. */
    static String key(Object partition) {
        try {
            return SORTED.writeValueAsString(SORTED.convertValue(partition, Object.class));
        } catch (Exception e) {
            throw new IllegalArgumentException("a source partition or offset that is not JSON: " + partition, e);
        }
    }

    @Override
    public <T> Map<String, Object> offset(Map<String, T> partition) {
        return byPartition.get(key(partition));
    }

    @Override
    public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
        Map<Map<String, T>, Map<String, Object>> out = new HashMap<>();
        for (Map<String, T> partition : partitions) {
            out.put(partition, offset(partition));
        }
        return out;
    }
}
