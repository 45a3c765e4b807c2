"""The benchmark's own environment: a throwaway PostgreSQL database, a flushed
Redis database as the broker, and a temporary var/ directory.

PostgreSQL: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432), database
BENCH_DB_NAME (default `pagewatch_bench`), dropped and recreated on every run,
migrated from scratch and dropped at the end. Redis: BENCH_REDIS_URL (default redis://127.0.0.1:6379/14),
flushed first and last. Both must run: the workers are real Celery processes,
which need a database and a broker shared with this process.

Everything started from here (workers, the service, the dispatcher's child)
inherits the environment prepared by `prepare()`.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# BENCH_DB_NAME: so two people benchmarking on one server do not drop each
# other's database.
DB_NAME = os.environ.get("BENCH_DB_NAME", "pagewatch_bench")
if not re.fullmatch(r"[a-z_][a-z0-9_]*", DB_NAME):  # it is spliced into SQL
    raise SystemExit(f"BENCH_DB_NAME must be a plain lower-case name: {DB_NAME!r}")


class BenchError(RuntimeError):
    """The bench cannot go on: a service is missing, a worker did not start,
    a check did not finish in time."""


@dataclass
class BenchEnv:
    database_url: str
    redis_url: str
    var_dir: Path


def _admin_url() -> str:
    return os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")


def db_name() -> str:
    """The bench's database: two runs on one server need two names."""
    return DB_NAME


def _redis_url() -> str:
    return os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def _postgres(statements: list[str]) -> None:
    import psycopg

    admin = _admin_url().rstrip("/") + "/postgres"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=3) as c:
            for statement in statements:
                c.execute(statement)
    except psycopg.OperationalError as exc:
        raise BenchError(f"PostgreSQL at {_admin_url()} (BENCH_PG_URL): {exc}") from exc


def _flush_redis(url: str) -> None:
    import redis

    try:
        with redis.Redis.from_url(url, socket_timeout=3) as client:
            client.flushdb()
    except redis.RedisError as exc:
        raise BenchError(f"Redis at {url} (BENCH_REDIS_URL): {exc}") from exc


def prepare() -> BenchEnv:
    """Recreate the database, flush the broker, point the environment at them;
    call before Django is set up."""
    name = db_name()
    _postgres(
        [
            f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
            f"CREATE DATABASE {name}",
        ]
    )
    redis_url = _redis_url()
    _flush_redis(redis_url)
    env = BenchEnv(
        database_url=f"{_admin_url().rstrip('/')}/{name}",
        redis_url=redis_url,
        var_dir=Path(tempfile.mkdtemp(prefix="pagewatch-bench-")),
    )
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": env.database_url,
            "REDIS_URL": redis_url,
            # With Redis, settings require one key for every process.
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "PAGEWATCH_VAR_DIR": str(env.var_dir),
            # The pages are served on loopback addresses.
            "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
        }
    )
    return env


def setup_django(migrate: bool = False) -> None:
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def cleanup(env: BenchEnv, keep_db: bool) -> None:
    from django.db import connections

    connections.close_all()
    shutil.rmtree(env.var_dir, ignore_errors=True)
    _flush_redis(env.redis_url)
    if not keep_db:
        _postgres([f"DROP DATABASE IF EXISTS {db_name()} WITH (FORCE)"])
