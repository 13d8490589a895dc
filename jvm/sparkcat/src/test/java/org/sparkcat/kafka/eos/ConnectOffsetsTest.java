package org.sparkcat.kafka.eos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Positions written by the JVM writer must be byte-identical to what sparkcat's Python side and Connect write. */
class ConnectOffsetsTest {
  @Test
  void keysAndValuesAreConnectsSinkPositionFormat() {
    // Python: record_key("orders", partition_key({"kafka_topic": "t.1", "kafka_partition": 3}))
    assertEquals("[\"orders\",{\"kafka_partition\":3,\"kafka_topic\":\"t.1\"}]",
        new String(ConnectOffsets.key("\"orders\"", "t.1", 3), StandardCharsets.UTF_8));
    assertEquals("{\"kafka_offset\":42}", new String(ConnectOffsets.value(42), StandardCharsets.UTF_8));
  }

  @Test
  void positionRecordsAreReadBack() {
    byte[] key = ConnectOffsets.key("\"a \\\"quoted\\\" name\"", "orders", 7);
    assertEquals("orders:7", ConnectOffsets.topicPartition(key));
    assertEquals(99, ConnectOffsets.nextOffset("{\"kafka_offset\":99}".getBytes(StandardCharsets.UTF_8)));
    assertEquals(-1, ConnectOffsets.nextOffset(null));
    assertNull(ConnectOffsets.topicPartition("[\"x\",{\"increment\":1}]".getBytes(StandardCharsets.UTF_8)));
  }
}
