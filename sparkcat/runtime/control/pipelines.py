"""Applies ``pipelines/*.yaml`` through the herder at start and whenever a file there changes."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from sparkcat.errors import SparkcatError
from sparkcat.model.config_state import initial_target_state
from sparkcat.specs import ConnectorSpec, load_file, spec_files

log = logging.getLogger(__name__)

def substitute(config: dict[str, str], variables: dict[str, str]) -> dict[str, str]:
    """Replace ``${state.dir}``-style placeholders, so example specs can write under the state directory."""
    out = {}
    for key, value in config.items():
        for name, replacement in variables.items():
            value = value.replace("${" + name + "}", replacement)
        out[key] = value
    return out


def apply_spec(herder, spec: ConnectorSpec, variables: dict[str, str] | None = None) -> str:
    """Create or update one connector unless its config is already current; returns what happened."""
    if variables:
        spec = ConnectorSpec(spec.name, substitute(spec.config, variables), spec.source, spec.initial_state)
    current = herder.snapshot().connector_config(spec.name)
    if current == spec.config:
        return "unchanged"
    initial = initial_target_state(spec.initial_state or "RUNNING")  # specs.load_file checked the name
    created = herder.put_connector_config(spec.name, spec.config, initial_state=initial)
    return "created" if created else "updated"


class PipelineWatcher:
    """Polls a directory of specs; an invalid file is reported and skipped, the others still apply."""

    def __init__(self, herder, directory: str | Path, interval_s: float = 2.0,
                 variables: dict[str, str] | None = None):
        self.herder = herder
        self.variables = variables or {}
        self.directory = Path(directory)
        self.interval_s = interval_s
        self._mtimes: dict[Path, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def apply_changed(self) -> None:
        if not self.directory.is_dir():
            return
        if not getattr(self.herder, "is_leader", True):  # a standby: the leader applies them; all again once promoted
            self._mtimes.clear()
            return
        for path in spec_files([self.directory]):
            mtime = path.stat().st_mtime
            if self._mtimes.get(path) == mtime:
                continue
            self._mtimes[path] = mtime
            self._apply_file(path)

    def _apply_file(self, path: Path) -> None:
        try:
            specs = load_file(path)
        except SparkcatError as e:
            log.error("Pipeline file rejected: %s", e.message)
            return
        for spec in specs:
            try:
                outcome = apply_spec(self.herder, spec, self.variables)
                if outcome != "unchanged":
                    log.info("Pipeline %s from %s: connector %s", spec.name, path, outcome)
            except SparkcatError as e:
                log.error("Pipeline %s from %s rejected: %s", spec.name, path, e.message)

    def start(self) -> None:
        self.apply_changed()
        self._thread = threading.Thread(target=self._run, name="sparkcat-pipelines", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.apply_changed()
            except Exception:  # a watcher must survive odd files; the error is logged with its trace
                log.exception("Applying pipelines from %s failed", self.directory)

    def stop(self) -> None:
        self._stop.set()
