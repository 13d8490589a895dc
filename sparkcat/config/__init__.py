"""Settings and validation: the worker config, the framework's connector keys (typed once), REST security,
connector names; what the CLI and REST check without a runtime."""
