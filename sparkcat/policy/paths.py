"""Paths derived from user input stay under their root; paths a connector opens stay under allowed dirs.

Every directory sparkcat derives from a name (checkpoints) goes through
``safe_join``, and every file a connector config names is checked with
``allowed_path_problem`` against the worker's ``file.allowed.dirs``, after
resolving symlinks and ``..``, so neither can reach outside what the operator allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from sparkcat.errors import ConfigError


def _resolved(path: str | os.PathLike) -> Path:
    return Path(os.path.expanduser(str(path))).resolve()


def is_within(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """True when ``path`` (resolved: symlinks and ``..`` followed) is ``root`` or below it."""
    resolved, base = _resolved(path), _resolved(root)
    return resolved == base or base in resolved.parents


def safe_join(root: str | os.PathLike, part: str) -> Path:
    """``root/part``, resolved, strictly below ``root``; ConfigError when ``part`` would leave it.

    >>> str(safe_join("/srv/state", "orders")) == str(Path("/srv/state/orders").resolve())
    True
    """
    base = _resolved(root)
    target = (base / part).resolve()
    if part in ("", ".", "..") or base not in target.parents:
        raise ConfigError(f"{part!r} does not name a directory inside {base}")
    return target


def allowed_path_problem(path: str, allowed_dirs: Sequence[str], denied_dirs: Sequence[str] = ()) -> str | None:
    """Why ``path`` may not be opened by a connector, or None when it lies under one of ``allowed_dirs``.

    ``denied_dirs`` win over ``allowed_dirs``: sparkcat's own stores and checkpoints live
    inside the state directory, which file connectors may otherwise use.
    """
    if not path:
        return None  # an empty value is the connector's own "required" error
    denied = next((d for d in denied_dirs if is_within(path, d)), None)
    if denied is not None:
        return f"{path} is inside {_resolved(denied)}, which holds sparkcat's own state and is never open to connectors"
    if not allowed_dirs:
        return f"{path} is outside the allowed directories: file.allowed.dirs is empty, so no file may be used"
    if any(is_within(path, d) for d in allowed_dirs):
        return None
    shown = ", ".join(str(_resolved(d)) for d in allowed_dirs)
    return (f"{path} is outside the allowed directories ({shown}); set the worker's file.allowed.dirs to "
            f"allow it")


def check_allowed_path(key: str, path: str, allowed_dirs: Sequence[str]) -> None:
    """ConfigError naming ``key`` and the allowed directories when ``path`` is outside them."""
    problem = allowed_path_problem(path, allowed_dirs)
    if problem is not None:
        raise ConfigError(f"{key}: {problem}", {key: [problem]})


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def scheme(path: str) -> str | None:
    """The URI scheme of ``path`` (``hdfs``, ``file``, ...), or None for a plain path.

    >>> scheme("hdfs://nn:8020/ck"), scheme("file:/tmp/ck"), scheme("/tmp/ck"), scheme("state")
    ('hdfs', 'file', None, None)
    """
    m = _SCHEME.match(path)
    # "C:" (a drive letter) is not a scheme
    return m.group(1).lower() if m and len(m.group(1)) > 1 else None


def local_root(path: str) -> str:
    """``path`` as a root directory: a URI stays as written (without a trailing ``/``), a plain path is made absolute.

    >>> local_root("hdfs://nn/ck/"), local_root("/srv/state/checkpoints")
    ('hdfs://nn/ck', '/srv/state/checkpoints')
    """
    if scheme(path) is not None:
        return path.rstrip("/") or path
    return str(Path(path).resolve())


def child_path(root: str, component: str) -> str:
    """``root/component``, where ``component`` must be one path component (``runtime.names.dir_name``'s output).

    >>> child_path("s3a://bucket/ck", "orders"), child_path("/srv/ck", "_sparkcat-config-log")
    ('s3a://bucket/ck/orders', '/srv/ck/_sparkcat-config-log')
    >>> child_path("/srv/ck", "../x")
    Traceback (most recent call last):
    ...
    sparkcat.errors.ConfigError: '../x' is not one path component below /srv/ck
    """
    if component in ("", ".", "..") or "/" in component or "\\" in component or ":" in component:
        raise ConfigError(f"{component!r} is not one path component below {root}")
    return f"{root.rstrip('/')}/{component}"
