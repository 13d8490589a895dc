"""Config log, offsets and status stores, each on a keyed log backend (Kafka, local or memory)."""
