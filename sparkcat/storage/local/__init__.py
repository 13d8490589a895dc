"""Local backends: a directory on the driver's disk, the embedded default that needs no broker."""
