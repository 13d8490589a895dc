"""What the ``sparkcat`` CLI uses to talk to a driver: a REST client, apply planning and output rendering.

Nothing here changes the cluster on its own: every write is one call of Kafka Connect's
REST API, so the CLI and any Connect client see the same behaviour.
"""
