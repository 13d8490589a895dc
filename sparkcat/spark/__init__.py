"""Python data sources and batch writers that run connectors inside Spark streaming queries."""
