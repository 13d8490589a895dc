"""The driver side: herder, reconciliation, query plans, validation, worker config and status views."""
