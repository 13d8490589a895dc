package org.sparkcat.source;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code readStream.format("sparkcat-planned-source").option("planner", id).option("max.rows", n)}: a
 * source connector's micro-batches, planned by its {@link Planner} in the driver's Python process. Each
 * micro-batch has one row per connector task, {@code (task INT, payload BINARY)}; the executors' Python
 * (a {@code mapInArrow} over these rows, in Spark's reused Python workers) reads the records.
 */
public final class PlannedSource implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "sparkcat-planned-source";
  static final StructType SCHEMA = new StructType()
      .add("task", DataTypes.IntegerType, false)
      .add("payload", DataTypes.BinaryType, false);

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    String planner = properties.get("planner");
    long maxRows = Long.parseLong(properties.getOrDefault("max.rows", "-1"));
    return new PlannedTable(SHORT_NAME, planner, maxRows, SCHEMA, new PlannedStream.OneRowReaderFactory());
  }

  /** A planned stream's table: its planner, batch limit, row schema and what reads a task's partition. */
  static final class PlannedTable implements SupportsRead {
    private final String format;
    private final String planner;
    private final long maxRows;
    private final StructType schema;
    private final PartitionReaderFactory readers;

    PlannedTable(String format, String planner, long maxRows, StructType schema, PartitionReaderFactory readers) {
      this.format = format;
      this.planner = planner;
      this.maxRows = maxRows;
      this.schema = schema;
      this.readers = readers;
    }

    @Override
    public String name() {
      return format + ":" + planner;
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Collections.unmodifiableSet(EnumSet.of(TableCapability.MICRO_BATCH_READ));
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new Scan() {
        @Override
        public StructType readSchema() {
          return schema;
        }

        @Override
        public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
          return new PlannedStream(planner, maxRows, readers);
        }
      };
    }
  }
}
