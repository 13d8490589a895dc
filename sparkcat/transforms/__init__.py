"""Kafka Connect's Single Message Transforms and predicates, run as Spark column expressions.

``parse_chain(config)`` reads a connector's ``transforms`` / ``predicates`` keys (Java class
names or short aliases, Connect's keys and defaults); ``chain_errors(config)`` gives Connect's
validation messages per key; ``apply_chain(records, chain)`` applies the chain to a whole
micro-batch (``frame.Records``) as one projection per stage.
"""

from __future__ import annotations

import logging

from sparkcat.transforms.config import Chain, Stage, chain_errors, parse_chain
from sparkcat.transforms.frame import HEADERS_DDL, KEEP, KEY_TYPE, SCHEMA_NAME, SCHEMA_VERSION, DataError, Records
from sparkcat.transforms.keys import key_as_json

__all__ = ["Chain", "Stage", "Records", "DataError", "KEEP", "HEADERS_DDL", "SCHEMA_NAME", "SCHEMA_VERSION", "KEY_TYPE",
           "parse_chain", "chain_errors", "apply_chain"]

log = logging.getLogger(__name__)


def apply_chain(records: Records, chain: Chain) -> Records:
    """``records`` through every stage in order, each only where its predicate (maybe negated) holds.

    A key that held JSON text and was given a schema on the way (``ValueToKey``) is JSON text again
    at the end, as the connector's writer expects it.
    """
    key_json = records.key_json
    for stage in chain.stages:
        where = None
        if stage.predicate is not None:
            where = stage.predicate.predicate.condition(records)
            where = ~where if stage.negate else where
        records = stage.transform.apply(records, stage.alias, where)
    records = key_as_json(records) if key_json and not records.key_json else records
    return records.with_schema_metadata()
