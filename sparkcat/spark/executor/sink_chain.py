"""A sink connector's ``transforms`` chain on its micro-batch, and the SinkRecords of the transformed rows.

``transformed_records`` runs on executors (its closure, with the converters' ``Side``s, is pickled there);
``chain_of`` and ``transform_batch`` are called by the driver's handler to build the batch's projection.

``chain_of(plan)`` parses the chain once per query; ``transform_batch`` decodes the routed batch in
Spark (``sink_decode``), applies the chain as column expressions (``sparkcat.transforms``) and
keeps ``_task`` and the original coordinates; ``transformed_records`` turns the rows into
``SinkRecord``s on the executors: ``topic``, key, value, timestamp and headers as transformed,
``kafka_offset`` and the ``original_*`` fields from the original coordinates, which are also
what the task's tally reports as positions (Connect commits the original topic-partition
offsets). A row a ``Filter`` dropped is not put, but its offset counts as consumed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from sparkcat.api.records import SinkRecord
from sparkcat.converters import at_topic, converter_for
from sparkcat.policy.input_policy import prepare
from sparkcat.spark.executor.batch_results import Tallies
from sparkcat.spark.executor.error_handling import KEY_CONVERTER, VALUE_CONVERTER, ConsumedRecord, RecordErrors
from sparkcat.spark.query_plan import sink_position, tp_key
from sparkcat.spark.executor.sink_decode import ORIGINAL, Side, decode_batch, sides_of
from sparkcat.transforms import KEEP, Chain, Records, apply_chain, parse_chain

__all__ = ["chain_of", "transform_batch", "transformed_records"]

log = logging.getLogger(__name__)

RecordsOf = Callable[[dict[str, list[Any]], Tallies], dict[int, list[SinkRecord]]]


def chain_of(plan: Any) -> Chain:
    """The sink connector's chain (empty when it has no ``transforms``)."""
    return parse_chain(prepare(plan.connector_config))


def transform_batch(routed: DataFrame, config: dict[str, str], raw: bool, chain: Chain) -> tuple[DataFrame, list[Side]]:
    """The routed batch decoded and through ``chain``: one projection per stage, partitioning kept."""
    decoded, sides = decode_batch(routed, sides_of(config, raw))
    records = Records(decoded, kind="sink", timestamp="timestamp", key_json=False)
    return apply_chain(records, chain).df, sides


@dataclass
class _Row:
    """What ``transformed_records`` needs of one side: its converter and the decoding it had."""

    side: Side
    converter: Any
    stage: str

    def value(self, cols: dict[str, list[Any]], i: int) -> Any:
        """The side of row ``i`` as the sink task gets it (raises the converter's error for a bad row)."""
        current = cols[self.side.name][i]
        bad = cols.get(self.side.bad)
        if bad is not None and bad[i]:
            decoded = self._decode(cols, i, cols[self.side.raw][i])
            if decoded is not None:
                raise ValueError(f"The record's {self.side.name} does not fit the type the other records of its "
                                 f"batch gave it, so the transforms could not apply to it: {decoded!r:.200}")
            return None
        if not self.side.decoded and isinstance(current, (bytes, bytearray)):
            return self._decode(cols, i, current)
        return current

    def _decode(self, cols: dict[str, list[Any]], i: int, data: bytes) -> Any:
        """The converter's ``from_bytes``, told the topic the record was read from (AvroConverter's subject)."""
        return at_topic(self.converter, cols[ORIGINAL["topic"]][i]).from_bytes(data)


def _consumed(cols: dict[str, list[Any]], headers: list[Any], i: int) -> ConsumedRecord:
    """Row ``i`` as it was in Kafka (original coordinates and bytes), for error reports."""
    key = cols["_raw_key"][i] if "_raw_key" in cols else cols["key"][i]
    value = cols["_raw_value"][i] if "_raw_value" in cols else cols["value"][i]
    return ConsumedRecord(cols[ORIGINAL["topic"]][i], cols[ORIGINAL["partition"]][i], cols[ORIGINAL["offset"]][i],
                          key, value, headers[i], cols["timestamp"][i], None)


def _headers(values: list[Any] | None, n: int) -> list[list[tuple[str, bytes | None]]]:
    if values is None:
        return [[] for _ in range(n)]
    return [[] if h is None else [(e["key"], e["value"]) for e in h] for h in values]


def transformed_records(config: dict[str, str], raw: bool, sides: list[Side], errors: RecordErrors) -> RecordsOf:
    """SinkRecords from the transformed rows; positions from the original coordinates."""
    rows = [_Row(s, None if raw else converter_for(config, s.name == "key"),
                 KEY_CONVERTER if s.name == "key" else VALUE_CONVERTER) for s in sides]

    def records_of(cols: dict[str, list[Any]], tallies: Tallies) -> dict[int, list[SinkRecord]]:
        groups: dict[int, list[SinkRecord]] = {}
        tasks = cols["_task"]
        topics, parts, offsets = (cols[ORIGINAL[c]] for c in ("topic", "partition", "offset"))
        headers, keep = _headers(cols.get("headers"), len(tasks)), cols.get(KEEP)
        ends: dict[tuple[int, str, int], int] = {}
        for i, task in enumerate(tasks):
            group = groups.setdefault(task, [])
            ends[task, topics[i], parts[i]] = offsets[i] + 1
            if keep is not None and keep[i] is False:
                continue
            parts_of = []
            for row in rows:
                try:
                    parts_of.append(row.value(cols, i))
                except Exception as e:
                    errors.failed(task, row.stage, row.converter, e, _consumed(cols, headers, i))
                    break
            else:
                key, value = parts_of
                group.append(SinkRecord(cols["topic"][i], cols["partition"][i], offsets[i], value, key,
                                        cols["timestamp"][i], headers[i], topics[i], parts[i], offsets[i]))
        for task, records in groups.items():
            tallies.of(task).records += len(records)
        for (task, topic, kp), end in ends.items():
            tallies.of(task).offsets[tp_key(topic, kp)] = sink_position(topic, kp, end)
        return groups
    return records_of
