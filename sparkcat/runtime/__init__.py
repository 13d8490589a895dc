"""The driver side: herder, cluster config state, reconciliation and status."""
