"""Every SMT module imported once, so the registry holds all of Connect's transformations and predicates."""

from __future__ import annotations

from sparkcat.transforms import conversions, fields, keys, routing, schema_metadata, sql  # noqa: F401 - they register themselves
from sparkcat.transforms.registry import PREDICATE_KEYS, PREDICATES, TRANSFORM_KEYS, TRANSFORMS

__all__ = ["TRANSFORMS", "PREDICATES", "TRANSFORM_KEYS", "PREDICATE_KEYS"]
