"""Secrets stay secret: the one place that decides what is masked, and how.

Two mechanisms, used by every output (REST responses, CLI output, log records,
status traces):

- ``mask_config``: values of sensitive keys become ``[hidden]``. A key is sensitive
  when its plugin declares it PASSWORD-typed, or when its name matches Connect's
  usual secret names (``password``, ``secret``, ``sasl.jaas.config``, ``ssl.*password``,
  also under ``producer.override.`` and the like). A value that is only a config
  provider placeholder (``${file:/etc/app.properties:db.password}``) is shown as it
  is: it names where the secret is, not the secret.
- ``scrub``: every secret value sparkcat has seen (resolved from a provider, or the
  value of a sensitive key) is replaced by ``[hidden]`` in free text. A log record
  factory applies it to every log record of the process, so a connector that
  prints its password in an exception message does not leak it either.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Collection, Mapping
from typing import Any

HIDDEN = "[hidden]"

#: Key names that hold secrets whatever their declared type (matched anywhere in the key, any case).
SENSITIVE_KEY = re.compile(
    r"password|passwd|secret|sasl\.jaas\.config|basic\.auth\.user\.info|credentials?\b|"
    r"(^|\.)token$|api\.key|private\.key|access\.key", re.IGNORECASE)

#: Spark's ``spark.redaction.regex`` (option and conf keys whose values the Spark UI, logs and ``explain``
#: hide): Spark's default plus Connect's secret keys, and the options through which sparkcat hands
#: connector configs to its data sources (``plan``, ``sink``), which hold them whole.
SPARK_REDACTION_REGEX = (r"(?i)secret|password|token|access[.]key|sasl[.]jaas[.]config|basic[.]auth[.]user[.]info"
                         r"|^plan$|^sink$")

_PLACEHOLDERS_ONLY = re.compile(r"^(\s*\$\{[^}]*\}\s*)+$")
_MIN_SECRET = 4  # shorter values would scrub ordinary words and numbers
_secrets: set[str] = set()
_lock = threading.Lock()


def is_sensitive(key: str, password_keys: Collection[str] = ()) -> bool:
    """True when ``key``'s value must never be shown."""
    return key in password_keys or SENSITIVE_KEY.search(key) is not None


def mask_value(key: str, value: Any, password_keys: Collection[str] = ()) -> Any:
    """``value``, or ``[hidden]`` when ``key`` is sensitive (placeholders and empty values stay visible)."""
    if value is None or value == "" or not is_sensitive(key, password_keys):
        return value
    if isinstance(value, str) and _PLACEHOLDERS_ONLY.match(value):
        return value
    return HIDDEN


def mask_config(config: Mapping[str, Any], password_keys: Collection[str] = ()) -> dict[str, Any]:
    """A copy of ``config`` with every sensitive value masked and known secrets scrubbed from the rest."""
    return {k: scrub(mask_value(k, v, password_keys)) if isinstance(v, str) else mask_value(k, v, password_keys)
            for k, v in config.items()}


def keep_hidden_secrets(config: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """A ``[hidden]`` value (a config read back from the API and sent again) keeps the stored secret."""
    return {k: current[k] if v == HIDDEN and k in current else v for k, v in config.items()}


def remember_secret(value: Any) -> None:
    """Scrub ``value`` from every later log record, trace and response text of this process."""
    if isinstance(value, str) and len(value.strip()) >= _MIN_SECRET and value != HIDDEN:
        with _lock:
            _secrets.add(value.strip())
    _install_record_factory()


def remember_config_secrets(config: Mapping[str, Any], password_keys: Collection[str] = ()) -> None:
    """Remember the values of ``config``'s sensitive keys (called where a config is resolved and started)."""
    for key, value in config.items():
        if is_sensitive(key, password_keys):
            remember_secret(value)


def scrub(text: Any) -> Any:
    """``text`` with every remembered secret replaced by ``[hidden]`` (non-strings come back as they are)."""
    if not isinstance(text, str) or not _secrets:
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, HIDDEN)
    return text


_installed = False


def _install_record_factory() -> None:
    """Wrap the log record factory once, so every record's message and exception text are scrubbed."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()
    formatter = logging.Formatter()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if not _secrets:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the handler to report
            return record
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(formatter.formatException(record.exc_info))
            record.exc_info = _scrubbed_exc_info(record.exc_info)
        return record

    logging.setLogRecordFactory(factory)


def _scrubbed_exc_info(exc_info: Any) -> Any:
    """``exc_info`` with a copy of the exception whose message is scrubbed.

    Formatters that read the exception itself rather than ``exc_text`` (pyspark's JSONFormatter,
    which loggers created while pyspark's PySparkLogger class is set get) would otherwise print it.
    """
    if not isinstance(exc_info, tuple) or len(exc_info) != 3 or exc_info[1] is None:
        return exc_info
    kind, error, trace = exc_info
    text = str(error)
    clean = scrub(text)
    if clean == text:
        return exc_info
    try:
        copy = kind.__new__(kind)
        copy.__dict__.update(getattr(error, "__dict__", {}))
        copy.args = (clean,)
    except Exception:  # an exception type that cannot be copied: a plain one with the scrubbed text
        copy = RuntimeError(clean)
    return (type(copy), copy, trace)
