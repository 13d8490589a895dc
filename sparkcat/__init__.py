"""sparkcat: Kafka Connect's distributed runtime as a Spark Structured Streaming application."""

__version__ = "0.1.0"
