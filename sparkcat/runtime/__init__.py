"""The driver's runtime: ``control`` decides what should run (herder, config log, leadership, offsets API),
``execution`` runs it (a lifecycle per connector, its queries, failures and batches)."""
