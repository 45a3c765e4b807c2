"""manage.py backup: a copy of the embedded SQLite database that opens as the
same installation, and a plain refusal where it cannot help."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def manage(var_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """manage.py as `make run` sets it up: SQLite and the key under var/."""
    unset = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "SECRET_KEY_FILE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["PAGEWATCH_VAR_DIR"] = str(var_dir)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_backup_of_the_embedded_database_holds_its_teams_accounts_and_keys(
    tmp_path,
):
    var_dir, copy = tmp_path / "var", tmp_path / "pagewatch-backup.sqlite3"
    assert manage(var_dir, "migrate", "--noinput").returncode == 0
    assert manage(var_dir, "bootstrap").returncode == 0

    done = manage(var_dir, "backup", str(copy))

    assert done.returncode == 0, done.stderr
    assert f"Copied the database to {copy}" in done.stdout
    assert "var/secret_key" in done.stdout
    with sqlite3.connect(copy) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT slug FROM monitors_team").fetchall() == [("demo",)]
        assert db.execute("SELECT username FROM auth_user").fetchall() == [("admin",)]
        assert db.execute("SELECT count(*) FROM monitors_apikey").fetchone() == (1,)
    # Restored in place of the original, it is the same installation.
    (var_dir / "pagewatch.sqlite3").unlink()
    copy.rename(var_dir / "pagewatch.sqlite3")
    again = manage(var_dir, "bootstrap")
    assert "Pagewatch is set up" in again.stdout


def test_a_backup_never_overwrites_a_file(tmp_path, db, monkeypatch):
    monkeypatch.setattr(connection, "vendor", "sqlite")  # CI's is PostgreSQL
    existing = tmp_path / "backup.sqlite3"
    existing.write_bytes(b"an older backup")

    with pytest.raises(CommandError, match="exists already"):
        call_command("backup", str(existing))

    assert existing.read_bytes() == b"an older backup"


def test_with_postgresql_the_backup_names_pg_dump_and_writes_nothing(
    tmp_path, db, monkeypatch
):
    monkeypatch.setattr(connection, "vendor", "postgresql")

    with pytest.raises(CommandError, match="pg_dump --format=custom"):
        call_command("backup", str(tmp_path / "backup.sqlite3"))

    assert not (tmp_path / "backup.sqlite3").exists()


def test_a_backup_is_readable_by_its_owner_alone_whatever_the_umask(tmp_path):
    """It holds password hashes, sessions and webhook secrets; var/ is made
    for this user alone, and the copy was readable by everyone."""
    var_dir, copy = tmp_path / "var", tmp_path / "pagewatch-backup.sqlite3"
    assert manage(var_dir, "migrate", "--noinput").returncode == 0
    old_umask = os.umask(0o022)  # the usual one; the child inherits it
    try:
        done = manage(var_dir, "backup", str(copy))
    finally:
        os.umask(old_umask)

    assert done.returncode == 0, done.stderr
    assert copy.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(copy) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
