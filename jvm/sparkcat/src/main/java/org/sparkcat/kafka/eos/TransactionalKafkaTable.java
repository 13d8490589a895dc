package org.sparkcat.kafka.eos;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.StructType;

/**
 * The sink of one query run (driver). It keeps the summary of the last committed micro-batch, which Spark
 * puts into the query's progress ({@code StreamingQueryProgress.sink.metrics}, key {@value #LAST_BATCH}):
 * that is how sparkcat's Python side learns each task's records, positions and executor.
 */
final class TransactionalKafkaTable implements SupportsWrite, ReportsSinkMetrics {
  static final String LAST_BATCH = "sparkcat.lastBatch";

  private final WriterSettings settings;
  private volatile String lastBatch = "";

  TransactionalKafkaTable(WriterSettings settings) {
    this.settings = settings;
  }

  @Override
  public String name() {
    return TransactionalKafkaSink.SHORT_NAME + ":" + settings.connector;
  }

  @Override
  public StructType schema() {
    return new StructType();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.STREAMING_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    Columns columns = new Columns(info.schema());
    return new WriteBuilder() {
      @Override
      public Write build() {
        return new Write() {
          @Override
          public StreamingWrite toStreaming() {
            return new TransactionalStreamingWrite(settings, columns, TransactionalKafkaTable.this);
          }
        };
      }
    };
  }

  void committed(String summary) {
    lastBatch = summary;
  }

  @Override
  public Map<String, String> metrics() {
    return Collections.singletonMap(LAST_BATCH, lastBatch);
  }
}
