"""confluent-kafka (librdkafka) client plumbing shared by the Kafka stores and the Spark writers, and the
settings of every Kafka client sparkcat creates, Python or Java (``client_settings``).

Just above ``sparkcat.api`` in the layer order: it imports nothing else from sparkcat, so
``sparkcat.storage`` and ``sparkcat.spark`` may both use it.
"""
