"""Tiny, strict readers for settings taken from the environment.

A typo in a deployment's environment should stop the process at start-up with a
message naming the variable, not surface later as a confusing runtime error.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit


class ConfigError(SystemExit):
    """Ends the process with its message alone, whichever command loaded the
    settings (manage.py, gunicorn, celery): a traceback would bury the one
    line the operator needs, which names the variable to fix. A SystemExit,
    so no `except Exception` on the way can swallow it either."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Configuration error: {message}")


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_optional_int(name: str, *, minimum: int) -> int | None:
    """A whole number, or None when NAME is unset or empty (no limit)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return env_int(name, minimum, minimum=minimum)


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str, default: str = "") -> str:
    """Read NAME, or the file named by NAME_FILE (Docker/Kubernetes secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigError(
                f"{name}_FILE points to an unreadable file: {exc}"
            ) from None
    return os.environ.get(name, default)


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def env_log_level(name: str, default: str) -> str:
    """A logging level's name, in any case: logging's own error for a wrong
    one is a traceback that does not name the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if raw.upper() not in _LOG_LEVELS:
        raise ConfigError(
            f"{name} must be one of {', '.join(_LOG_LEVELS)}, got {raw!r}"
        )
    return raw.upper()


def env_url(name: str, default: str = "") -> str:
    """An http(s) address without its trailing slash; empty stays empty."""
    value = os.environ.get(name, default).strip().rstrip("/")
    if value and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{name} must start with http:// or https://, got {value!r}")
    return value


# dj_database_url knows many more schemes; Pagewatch runs on these two engines.
_DATABASE_SCHEMES = {"sqlite", "postgres", "postgresql", "pgsql"}


def _require_numeric_port(name: str, value: str) -> None:
    """Raise ConfigError unless the address's port, if any, is a number."""
    try:
        urlsplit(value).port  # noqa: B018 - reading it validates it
    except ValueError:
        raise ConfigError(
            f"{name} has a port that is not a number (characters such as "
            "@ : / in the password must be percent-encoded)"
        ) from None


def env_database_url(name: str, default: str) -> str:
    """A database address Pagewatch can use, or the default when unset or
    empty. The error names the scheme only: the rest holds the password."""
    value = os.environ.get(name, "").strip() or default
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in _DATABASE_SCHEMES:
        got = f"a {scheme}:// address" if sep else "an address without a scheme"
        raise ConfigError(
            f"{name} must be postgres://user:password@host:5432/name or "
            f"sqlite:///path, got {got}"
        )
    if scheme.lower() != "sqlite":
        _require_numeric_port(name, value)
    return value


def env_redis_url(name: str) -> str:
    """A Redis address (redis://, rediss:// or unix://), or empty. Celery takes
    anything else for an AMQP host and retries it for ever, saying nothing
    of this variable."""
    value = os.environ.get(name, "").strip()
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("redis", "rediss", "unix") or "://" not in value:
        got = f"a {parts.scheme}:// address" if "://" in value else "no scheme"
        raise ConfigError(
            f"{name} must be redis://host:6379/0, rediss://… or "
            f"unix:///path/to/redis.sock, got {got}"
        )
    _require_numeric_port(name, value)
    return value
