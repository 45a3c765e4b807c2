"""The benchmark's own environment: a throwaway database, a temporary broker
directory, and Django set up against them.

PostgreSQL by default (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432),
database `pagewatch_bench`, dropped and recreated on every run and migrated from
scratch. When PostgreSQL cannot be reached, a SQLite file under var/ is used
instead and the results say so. The broker is kombu's filesystem transport in a
temporary directory, so `dispatch_due_monitors` really serialises and writes a
Celery message per check, and nothing a developer runs ever consumes them.

Child processes (the memory benchmark) inherit the environment prepared here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "pagewatch_bench"
SQLITE_PATH = ROOT / "var" / "bench.sqlite3"


@dataclass
class BenchEnv:
    engine: str  # "postgresql" or "sqlite"
    database_url: str
    var_dir: Path
    note: str = ""

    @property
    def broker_dir(self) -> Path:
        return self.var_dir / "broker" / "in"


def _admin_url() -> str:
    return os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")


def _recreate_postgres() -> str:
    import psycopg

    admin = _admin_url().rstrip("/")
    with psycopg.connect(admin + "/postgres", autocommit=True, connect_timeout=3) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DB_NAME}")
    return f"{admin}/{DB_NAME}"


def drop_postgres() -> None:
    import psycopg

    admin = _admin_url().rstrip("/")
    with psycopg.connect(admin + "/postgres", autocommit=True, connect_timeout=3) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def prepare() -> BenchEnv:
    """Recreate the database, point the environment at it; call before Django."""
    var_dir = Path(tempfile.mkdtemp(prefix="pagewatch-bench-"))
    try:
        url, engine, note = _recreate_postgres(), "postgresql", ""
    except Exception as exc:  # no server, no rights: fall back, and say so
        SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{SQLITE_PATH}{suffix}").unlink(missing_ok=True)
        url, engine = f"sqlite:///{SQLITE_PATH}", "sqlite"
        reason = (str(exc).strip().splitlines() or [""])[0]
        note = f"PostgreSQL unavailable ({type(exc).__name__}: {reason}); used SQLite."
    env = BenchEnv(engine, url, var_dir, note)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": url,
            "PAGEWATCH_VAR_DIR": str(var_dir),
            "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
            "BENCH_ENGINE": engine,
        }
    )
    os.environ.pop("REDIS_URL", None)  # the filesystem broker in var_dir
    return env


def setup_django(migrate: bool = False) -> None:
    import logging

    import django

    django.setup()
    # kombu warns that the filesystem transport has no host name: it needs none.
    logging.getLogger("kombu.connection").setLevel(logging.ERROR)
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def cleanup(env: BenchEnv, keep_db: bool) -> None:
    from django.db import connections

    connections.close_all()
    shutil.rmtree(env.var_dir, ignore_errors=True)
    if keep_db:
        return
    if env.engine == "postgresql":
        drop_postgres()
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{SQLITE_PATH}{suffix}").unlink(missing_ok=True)
