"""`manage.py backup FILE`: a consistent copy of the embedded SQLite database,
taken while Pagewatch runs.

Everything Pagewatch keeps is in its database (monitors, checks, snapshots,
screenshots, accounts, channels, keys); the queue holds only work in flight,
which the sweepers queue again. Copying the file itself while the service
writes it can catch a write half done, and misses what still sits in the WAL
file beside it: SQLite's `VACUUM INTO` writes a copy as of one moment instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection
from django.template.defaultfilters import filesizeformat

POSTGRES_ADVICE = (
    "The database is not the embedded SQLite one: back it up with its own tools "
    '(PostgreSQL: pg_dump --format=custom --file=pagewatch.dump "$DATABASE_URL"), '
    "and keep SECRET_KEY with it."
)


class Command(BaseCommand):
    help = (
        "Copy the embedded SQLite database to FILE while Pagewatch runs (every "
        "monitor, check, snapshot, account, channel and key). With PostgreSQL, "
        "use pg_dump."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Where to write the copy (a new file)")

    def handle(self, *args: Any, file: str, **options: Any) -> None:
        if connection.vendor != "sqlite":
            raise CommandError(POSTGRES_ADVICE)
        target = Path(file).expanduser().absolute()
        if not target.parent.is_dir():
            raise CommandError(f"{target.parent} is not a folder that exists.")
        try:
            # Made empty first, for this user alone, as var/ is: the copy holds
            # password hashes, sessions and webhook secrets, and SQLite would
            # make it readable by everyone (umask 022). VACUUM INTO takes an
            # empty file; O_EXCL keeps a file made meanwhile from being written.
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            raise CommandError(f"{target} exists already: name a new file.") from None
        except OSError as exc:
            raise CommandError(f"Cannot write {target}: {exc.strerror}.") from None
        try:
            with connection.cursor() as cursor:
                cursor.execute("VACUUM INTO %s", [str(target)])
        except DatabaseError as exc:
            target.unlink(missing_ok=True)  # a copy cut short is no backup
            raise CommandError(f"Could not write the copy: {exc}.") from None
        size = filesizeformat(target.stat().st_size)
        self.stdout.write(
            f"Copied the database to {target} ({size}). Keep the secret key with "
            "it (var/secret_key, or your SECRET_KEY): sessions, e-mail links and "
            "screenshot links are signed with it."
        )
