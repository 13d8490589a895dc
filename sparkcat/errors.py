"""sparkcat's own exception types; each carries the message a user sees.

The REST layer maps them once to Kafka Connect's status codes (see ``http_status``).
"""

from __future__ import annotations


class SparkcatError(Exception):
    """Base of every error sparkcat raises on purpose."""

    http_status = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ConfigError(SparkcatError):
    """A connector or worker configuration is invalid.

    ``errors`` maps each offending key to its messages, so callers can name them all.
    """

    http_status = 400

    def __init__(self, message: str, errors: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.errors = errors or {}


class BadRequestError(SparkcatError):
    """A request is malformed (bad JSON, wrong field types, wrong state for the call)."""

    http_status = 400


class ForbiddenError(SparkcatError):
    """The worker's settings forbid the request (Connect's 403, e.g. topic tracking turned off)."""

    http_status = 403


class NotFoundError(SparkcatError):
    """An unknown connector, task or plugin."""

    http_status = 404


class ConflictError(SparkcatError):
    """The connector already exists, or a reconfiguration is in progress."""

    http_status = 409


class ConnectorError(SparkcatError):
    """A connector or task failed while running (its trace goes to the status store)."""

    http_status = 500


class RetriableError(ConnectorError):
    """A transient failure a task may raise (Connect's ``RetriableException``): its batch is retried
    with backoff for the connector's ``errors.retry.timeout`` before the task is FAILED."""


class StorageError(SparkcatError):
    """A backing store could not be read or written (broker down, lock held, corrupt file)."""

    http_status = 500


class StorageUnavailable(StorageError):
    """A store could not be reached in time (transport errors, timeouts, a coordinator or leader moving): retried
    with backoff. Every other StorageError (authorization, a locked or corrupt local log) fails with its reason."""


class LogRewound(StorageError):
    """A log ends before a position already read from it: its topic was deleted and created again (or truncated).
    A reader starts over from the beginning; what it read before no longer describes the log."""


class FencedError(StorageError):
    """This driver is no longer the leader: a newer one took over the config log."""


class NotLeaderError(ConflictError):
    """A write reached a standby driver: only the leader writes the config log (REST forwards it there)."""

    def __init__(self, message: str, leader_url: str | None = None):
        super().__init__(message)
        self.leader_url = leader_url
