"""What runs: one ``ConnectorLifecycle`` per connector, its queries, typed failures, retries and batch accounting."""
