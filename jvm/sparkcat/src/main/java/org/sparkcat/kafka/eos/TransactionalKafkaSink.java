package org.sparkcat.kafka.eos;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The exactly-once Kafka sink of sparkcat's {@code kafka} copy: {@code writeStream.format("sparkcat-kafka-eos")}.
 * Streaming writes only; each Spark partition of a micro-batch is one Connect task's rows, written in one
 * Kafka transaction together with the task's positions ({@link TransactionalDataWriter}).
 */
public final class TransactionalKafkaSink implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "sparkcat-kafka-eos";

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return new StructType(); // a sink: the rows' schema comes with each write
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new TransactionalKafkaTable(WriterSettings.of(properties));
  }
}
