"""Moving connectors between two Kafka Connect REST APIs (a Connect cluster and sparkcat, either way).

For each connector: check the target can run its class, create it STOPPED in the target (or
reconfigure the STOPPED copy a previous move left there), stop it in the source and wait for
STOPPED (Connect commits a source's offsets as its tasks stop), read its committed offsets, write
them to the target, resume it there. The source keeps a STOPPED copy, so the way back is the same
move in the other direction.

A connector the target cannot run is reported and keeps running in the source, never half-moved:
a class the target has no plugin for (``java-only``: with no ``plugin.path``, every Java-only
class), a config it refuses at validation (``invalid``), or a creation it refuses (sparkcat runs
Java connectors from its ``plugin.path`` but not every way of configuring them, e.g.
``transaction.boundary=connector``: ``java-only`` with the target's reason). That is why the STOPPED copy is created before the source is stopped: creation
is the target's last word.

Converters: a connector that names no ``key.converter`` (``value.converter``, ``header.converter``) runs
with its worker's. Connect's REST API does not show a worker's config, so ``worker_converters`` (the source
worker's converter keys, from its properties file: ``--worker-config``) are written into each moved
config on every side it names none for, as ``policy/worker_converters.py`` inherits them, but for a setting
the worker's converter does not take (Connect ignores it, sparkcat would refuse it: left out with a warning);
without them, each such connector is moved with a warning naming it: it runs with the target worker's
converters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sparkcat.client.rest import ApiError, RestClient
from sparkcat.policy.worker_converters import SIDES, inherit, is_converter_key
from sparkcat.redact import HIDDEN

STOP_TIMEOUT_S = 120.0
#: In every 400 sparkcat answers when the class is a Java connector on its plugin.path that it does not run with
#: that config: ``sparkcat.config.validation``'s ``JAVA_*`` messages.
JAVA_REFUSAL = "found on plugin.path"


@dataclass
class MoveResult:
    """What happened to one connector: ``moved``, ``java-only``, ``invalid``, ``secrets`` or ``failed``, with
    details; every outcome but ``moved`` leaves it as it was in the source."""

    name: str
    outcome: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.outcome == "moved"


def move_all(source: RestClient, target: RestClient, names: Sequence[str] = (),
             say: Callable[[str], None] = print,
             worker_converters: Mapping[str, str] | None = None) -> list[MoveResult]:
    """Move ``names`` (default: every connector of ``source``), one at a time; one line per connector.

    ``worker_converters``: the source worker's converter keys (None: unknown, and each connector naming
    no key or value converter is moved with a warning).
    """
    results = []
    for name in names or sorted(source.connectors()):
        try:
            result = move(source, target, name, worker_converters, say)
        except ApiError as e:
            result = MoveResult(name, "failed", e.message)
        say(f"{result.name}: {result.outcome}: {result.detail}")
        results.append(result)
    return results


def move(source: RestClient, target: RestClient, name: str, worker_converters: Mapping[str, str] | None = None,
         say: Callable[[str], None] = print) -> MoveResult:
    """Move one connector; stops it in ``source`` only once ``target`` holds a STOPPED copy of its config."""
    config = with_source_converters(name, source.config(name), worker_converters, say)
    refused = _refusal(target, name, config) or _stopped_copy(target, name, config)
    if refused is not None:
        return refused
    source.stop(name)
    _wait_stopped(source, name)
    offsets = source.offsets(name).get("offsets") or []
    if offsets:
        target.alter_offsets(name, offsets)
    target.resume(name)
    return MoveResult(name, "moved", f"{len(offsets)} offset(s) carried over; stopped in the source")


def with_source_converters(name: str, config: Mapping[str, str], worker_converters: Mapping[str, str] | None,
                           say: Callable[[str], None]) -> dict[str, str]:
    """``config`` with the source worker's converters on each side it names none for; a warning when unknown."""
    if worker_converters is not None:
        carried = {k: v for k, v in worker_converters.items() if is_converter_key(k)}
        for key in sorted(ignored_worker_settings(carried)):
            say(f"{name}: warning: the source worker's {key} is not a setting of its "
                f"{carried.get(key.rsplit('.converter.', 1)[0] + '.converter') or 'JsonConverter'}; Kafka Connect "
                f"ignores it, so it is left out (sparkcat refuses a key it would ignore)")
            del carried[key]
        return inherit(config, carried)
    unnamed = [side for side in SIDES[:2] if not str(config.get(side) or "").strip()]
    if unnamed:
        say(f"{name}: warning: it names no {' or '.join(unnamed)}, so in the source it ran with its worker's, "
            f"which Connect's REST API does not show; in the target it runs with the target worker's. Give the "
            f"Connect worker's properties (--connect-worker-config FILE) to carry them over")
    return dict(config)


def ignored_worker_settings(worker: Mapping[str, str]) -> list[str]:
    """The worker's ``key.converter.*``/``value.converter.*`` settings its converter does not take, which Connect
    passes to the converter and the converter never reads (e.g. StringConverter's ``schemas.enable``)."""
    from sparkcat.config.converter_keys import converter_setting_errors
    from sparkcat.plugins import DEFAULT_PACKAGES
    return [e.name for e in converter_setting_errors(worker, DEFAULT_PACKAGES)
            if any(m.startswith("Unknown configuration key") for m in e.errors)]


def _refusal(target: RestClient, name: str, config: dict[str, str]) -> MoveResult | None:
    """Why ``target`` cannot run the connector, or None: secrets it cannot read back, a class it has no plugin for
    (a Java connector, with no plugin.path holding it in sparkcat), or an invalid config."""
    cls = config.get("connector.class", "")
    hidden = sorted(k for k, v in config.items() if v == HIDDEN)
    if hidden:
        # sparkcat answers GET config with secrets hidden; copying would make "[hidden]" the real secret.
        return MoveResult(name, "secrets", f"{', '.join(hidden)} cannot be read back from the source (shown as "
                                           f"{HIDDEN}); give them as config providers (${{file:...}}, ${{env:...}}) "
                                           "and move it again")
    try:
        answer = target.validate(cls, config)
    except ApiError as e:
        # Connect's (and sparkcat's) answer for a class it has no plugin for: 400 "Failed to find any class ..."
        if e.http_status == 404 or "Failed to find any class" in e.message:
            return MoveResult(name, "java-only", f"{cls} has no plugin in the target (a class that exists only "
                                                 f"in Java stays in Kafka Connect)")
        raise
    if answer.get("error_count"):
        errors = [f"{c['value']['name']}: {'; '.join(c['value']['errors'])}" for c in answer.get("configs", [])
                  if c.get("value", {}).get("errors")]
        return MoveResult(name, "invalid", "the target refuses its config: " + ", ".join(errors))
    return None


def _stopped_copy(target: RestClient, name: str, config: dict[str, str]) -> MoveResult | None:
    """Create the connector STOPPED in ``target`` (or stop and reconfigure the copy an earlier move left there);
    None when done, else why ``target`` refuses it (a 400: its config passed validation, but the target will not
    run it as configured, as sparkcat refuses ``transaction.boundary=connector`` for a Java connector)."""
    try:
        if _exists(target, name):
            if target.status(name)["connector"]["state"] != "STOPPED":
                target.stop(name)
                _wait_stopped(target, name)
            target.put_config(name, config)
        else:
            target.create(name, config, initial_state="STOPPED")
    except ApiError as e:
        if e.http_status != 400:
            raise
        if JAVA_REFUSAL in e.message:
            return MoveResult(name, "java-only", f"the target has its Java class but does not run it: {e.message}; "
                                                 "it stays in the source")
        return MoveResult(name, "invalid", f"the target refuses it: {e.message}")
    return None


def _exists(client: RestClient, name: str) -> bool:
    try:
        client.connector(name)
        return True
    except ApiError as e:
        if e.http_status == 404:
            return False
        raise


def _wait_stopped(client: RestClient, name: str) -> None:
    """Poll the status until the connector is STOPPED with no task left running (Connect drops them, sparkcat
    shows them STOPPED or UNASSIGNED)."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while True:
        status = client.status(name)
        if status["connector"]["state"] == "STOPPED" and \
                all(t["state"] in ("STOPPED", "UNASSIGNED") for t in status.get("tasks") or []):
            return
        if time.monotonic() > deadline:
            raise ApiError(504, f"connector {name} not STOPPED after {STOP_TIMEOUT_S:.0f}s: {status}")
        time.sleep(0.25)
