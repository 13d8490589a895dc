"""Connectors the benchmarks run that sparkcat does not ship (loaded through the bench worker's ``plugin.packages``)."""
