package org.sparkcat.kafka;

import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Gives a record the timestamp carried in its last {@value #HEADER} header and removes that header.
 *
 * <p>Why: Spark's Kafka writer has no timestamp column (it sends records with a null timestamp, so
 * the producer stamps "now"). sparkcat's kafka copy sink appends the source record's timestamp as
 * this header (8 bytes, big-endian epoch milliseconds); set as {@code interceptor.classes} of the
 * writer's producer, this class turns it back into the record's timestamp before it is sent.
 *
 * <p>Only the last header of that name is taken and removed (the one sparkcat appended); any
 * earlier header of the same name, which the source record itself carried, is copied unchanged.
 * A record without the header, or with a malformed or negative value, is sent as it is.
 */
public class HeaderTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {

  /** The reserved header name; sparkcat's Python side uses the same text. */
  public static final String HEADER = "sparkcat.timestamp";

  @Override
  public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
    Header[] headers = record.headers().toArray();
    int last = -1;
    for (int i = headers.length - 1; i >= 0; i--) {
      if (HEADER.equals(headers[i].key())) {
        last = i;
        break;
      }
    }
    if (last < 0) {
      return record;
    }
    byte[] raw = headers[last].value();
    Long timestamp = null;
    if (raw != null && raw.length == Long.BYTES) {
      long ms = ByteBuffer.wrap(raw).getLong();
      timestamp = ms >= 0 ? ms : null;
    }
    RecordHeaders kept = new RecordHeaders();
    for (int i = 0; i < headers.length; i++) {
      if (i != last) {
        kept.add(headers[i]);
      }
    }
    return new ProducerRecord<>(record.topic(), record.partition(),
        timestamp != null ? timestamp : record.timestamp(), record.key(), record.value(), kept);
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

  @Override
  public void close() {}

  @Override
  public void configure(Map<String, ?> configs) {}
}
