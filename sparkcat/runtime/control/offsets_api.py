"""Kafka Connect's offsets API (KIP-875) on the herder: GET, PATCH and DELETE /connectors/NAME/offsets.

Source connectors keep their offsets in the offsets store; sink connectors' positions
use Connect's shape (partition ``{"kafka_topic", "kafka_partition"}``, offset
``{"kafka_offset"}``) in the same store. Altering or resetting drops the query's
checkpoint, so the next start reads its starting positions from the offsets store.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from sparkcat import plugins
from sparkcat.errors import BadRequestError, ConflictError
from sparkcat.model.config_state import ClusterConfigState, TargetState
from sparkcat.config.worker import WorkerConfig
from sparkcat.policy.input_policy import InputPolicy
from sparkcat.runtime.control.status_view import connector_type
from sparkcat.runtime.execution import sink_groups
from sparkcat.storage.factory import Stores
from sparkcat.storage.offsets import partition_key

log = logging.getLogger(__name__)


class OffsetsHerder(Protocol):
    """What the offsets requests need of the herder (``Herder``)."""

    @property
    def ready(self) -> bool: ...

    def require(self, name: str) -> ClusterConfigState: ...

    def run_as_leader(self, fn: Callable[[], Any]) -> Any: ...


class OffsetsExecution(Protocol):
    """What the offsets requests need of the connectors this driver runs (``Reconciler``, herder thread)."""

    worker: WorkerConfig

    @property
    def policy(self) -> InputPolicy: ...

    def halt(self, name: str, state: ClusterConfigState) -> None: ...

    def sink_positions(self, name: str) -> list[tuple[dict, Any]]: ...

    def positions_replaced(self, name: str, positions: list[tuple[dict, Any]] | None) -> None: ...

    def discard_group_commits(self, group: str) -> None: ...

    def resolved_config(self, config: dict[str, str], where: str) -> dict[str, str]: ...

    def drop_checkpoint(self, name: str) -> None: ...


class ConnectorOffsets:
    """Connect's offsets requests, run through the herder (as the leader) on the connectors' execution."""

    def __init__(self, stores: Stores, execution: OffsetsExecution, herder: OffsetsHerder) -> None:
        self.stores, self.execution, self.herder = stores, execution, herder

    def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """``(partition, offset)`` pairs of ``name``, as ``GET /connectors/NAME/offsets`` lists them.

        For a sink connector: positions its query committed while this driver ran, over
        the positions an offsets request stored (NotFoundError for an unknown connector).
        """
        state = self.herder.require(name)
        stored = self.stores.offsets.partitions(name)
        if not self._offsets_of_sink(state, name):
            return stored
        merged = {partition_key(p): (p, o) for p, o in stored}
        merged.update({partition_key(p): (p, o) for p, o in self.execution.sink_positions(name)})
        return sorted(merged.values(), key=lambda po: (str(po[0].get("kafka_topic")), po[0].get("kafka_partition")))

    def alter_connector_offsets(self, name: str, offsets: list[tuple[Any, Any]]) -> None:
        """Write ``(partition, offset)`` pairs (offset None resets that partition); the connector must be STOPPED.

        Raises BadRequestError when the connector is not STOPPED or an entry is malformed
        (Connect's messages), NotFoundError when it does not exist. When the connector is
        resumed its query starts from these offsets.
        """
        if not offsets:
            raise BadRequestError("Partitions / offsets need to be provided for an alter offsets request")

        def act() -> None:
            state = self._stopped_for_offsets(name)
            sink = self._offsets_of_sink(state, name)
            parsed = self._parse_sink_offsets(offsets) if sink else self._parse_source_offsets(offsets)
            self._halt(name, state)
            self.stores.offsets.put(name, parsed)
            if sink:
                self._sync_sink_group(state, name)
                self._tell_sink(state, name, parsed)
                self.execution.positions_replaced(name, parsed)
            self.execution.drop_checkpoint(name)
            log.info("Connector %s: offsets of %d partition(s) altered; it continues from them when resumed",
                     name, len(parsed))

        self.herder.run_as_leader(act)

    def reset_connector_offsets(self, name: str) -> None:
        """Forget every offset of ``name`` (``DELETE /connectors/NAME/offsets``); it must be STOPPED.

        When resumed, the connector starts from the beginning of its source (a sink
        connector from its reader's default starting position).
        """
        def act() -> None:
            state = self._stopped_for_offsets(name)
            self._halt(name, state)
            self.stores.offsets.reset(name)
            if self._offsets_of_sink(state, name):
                self._sync_sink_group(state, name)
                self._tell_sink(state, name, None)
                self.execution.positions_replaced(name, None)
            self.execution.drop_checkpoint(name)
            log.info("Connector %s: offsets reset; it starts from the beginning when resumed", name)

        self.herder.run_as_leader(act)

    def reset_connector_active_topics(self, name: str) -> None:
        """Forget the topics ``name`` used (``PUT /connectors/NAME/topics/reset``, KIP-558).

        Not an offsets request, but a reset of what a connector used, next to the offsets' resets.
        """
        self.herder.require(name)
        self.stores.status.delete_topics(name)

    def _sync_sink_group(self, state: ClusterConfigState, name: str) -> None:
        """The consumer group connect-NAME follows an alter or reset, as in Connect (KIP-875)."""
        worker = self.execution.worker
        if worker.uses_kafka:
            config = state.connector_config(name) or {}
            self.execution.discard_group_commits(sink_groups.sink_group_id(name, config))  # no late batch commit
            sink_groups.replace(worker.bootstrap_servers, worker.kafka, name,
                                state.connector_config(name) or {}, self.stores.offsets.partitions(name))

    def _tell_sink(self, state: ClusterConfigState, name: str, offsets: list | None) -> None:
        """The sink's ``alter_offsets`` hook: positions it keeps itself (a database table) follow the request."""
        config = state.connector_config(name) or {}
        instance = plugins.connector_class(config["connector.class"], self.execution.policy.plugin_packages)()
        if instance.alter_offsets(self.execution.resolved_config(config, f"connector {name}"), offsets):
            log.info("Connector %s: its own stored positions follow the offsets request", name)

    def _offsets_of_sink(self, state: ClusterConfigState, name: str) -> bool:
        return connector_type(state.connector_config(name) or {}, self.execution.policy) == "sink"

    def _stopped_for_offsets(self, name: str) -> ClusterConfigState:
        state = self.herder.require(name)
        if state.target_state(name) != TargetState.STOPPED:
            raise BadRequestError(
                f"Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
                f"for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")
        return state

    def _halt(self, name: str, state: ClusterConfigState) -> None:
        """The STOPPED connector's query is surely gone before its offsets change (herder thread)."""
        if not self.herder.ready:
            raise ConflictError("The driver is still reading the config log; try again shortly")
        self.execution.halt(name, state)

    @staticmethod
    def _check_offset_fields(fields: dict[str, Any]) -> None:
        """Connect's ``OffsetUtils.validateFormat``: string keys and primitive values only."""
        for key, value in fields.items():
            if value is not None and not isinstance(value, (str, int, float, bool)):
                kind = "STRUCT" if isinstance(value, dict) else "ARRAY" if isinstance(value, list) else \
                    type(value).__name__
                raise BadRequestError(f"Offsets may only contain primitive types as values, but field {key} "
                                      f"contains {kind}")

    @classmethod
    def _parse_source_offsets(cls, offsets: list[tuple[Any, Any]]) -> list[tuple[dict[str, Any], Any]]:
        parsed = []
        for partition, offset in offsets:
            if not isinstance(partition, dict):
                raise BadRequestError("The partition for a source connector offset cannot be null or missing")
            if offset is not None and not isinstance(offset, dict):
                raise BadRequestError("Offsets must be specified as a Map")
            cls._check_offset_fields(partition)
            cls._check_offset_fields(offset or {})
            parsed.append((dict(partition), None if offset is None else dict(offset)))
        return parsed

    @staticmethod
    def _parse_sink_offsets(offsets: list[tuple[Any, Any]]) -> list[tuple[dict[str, Any], Any]]:
        """Connect's ``SinkUtils.parseSinkConnectorOffsets``, with its messages."""
        parsed = []
        for partition, offset in offsets:
            if partition is None:
                raise BadRequestError("The partition for a sink connector offset cannot be null or missing")
            if not isinstance(partition, dict) or "kafka_topic" not in partition \
                    or "kafka_partition" not in partition:
                raise BadRequestError("The partition for a sink connector offset must contain the keys "
                                      "'kafka_topic' and 'kafka_partition'")
            topic, number = partition["kafka_topic"], partition["kafka_partition"]
            if topic is None:
                raise BadRequestError("Kafka topic names must be valid strings and may not be null")
            if number is None:
                raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
            number = ConnectorOffsets._java_integer(number)
            if number is None:
                raise BadRequestError(f"Failed to parse the following Kafka partition value in the provided "
                                      f"offsets: '{partition['kafka_partition']}'. Partition values for sink "
                                      f"connectors need to be integers.")
            tp = {"kafka_topic": str(topic), "kafka_partition": number}
            if offset is None:
                parsed.append((tp, None))
                continue
            if not isinstance(offset, dict) or "kafka_offset" not in offset:
                raise BadRequestError("The offset for a sink connector should either be null or contain the key "
                                      "'kafka_offset'")
            value = ConnectorOffsets._java_integer(offset["kafka_offset"])
            if value is None:
                raise BadRequestError(f"Failed to parse the following Kafka offset value in the provided offsets: "
                                      f"'{offset['kafka_offset']}'. Offset values for sink connectors need to be "
                                      f"integers.")
            parsed.append((tp, {"kafka_offset": value}))
        return parsed

    @staticmethod
    def _java_integer(value: Any) -> int | None:
        """``Long.parseLong(String.valueOf(value))``: 10 and "10" parse; 1.5, true and null do not."""
        if isinstance(value, bool) or value is None:
            return None
        text = str(value).strip()
        return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None

