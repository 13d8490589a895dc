"""Stores backed by Kafka topics (any Kafka-protocol broker), as Kafka Connect keeps them."""
