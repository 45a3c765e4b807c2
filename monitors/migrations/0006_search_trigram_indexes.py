"""Trigram indexes for the dashboard's search by name, address or search
words (monitors.dashboard.monitors._filtered_monitors), on PostgreSQL only.

The search is a case-insensitive "contains" (`UPPER(x) LIKE UPPER('%q%')`),
which no B-tree index can serve: with pg_trgm's GIN indexes on exactly those
expressions, a search among 10,000 monitors reads a few index pages instead
of every row and every JSON list of URLs. SQLite (the embedded default, for
small installs) has no such index and keeps scanning.

pg_trgm ships with PostgreSQL and is a trusted extension, so the database's
owner may create it; where even that is not allowed, the search keeps
working without these indexes and the migration says so.
"""

import logging

from django.db import DatabaseError, migrations, transaction

logger = logging.getLogger(__name__)

INDEXES = {
    "monitor_name_trgm_idx": ("monitors_monitor", 'UPPER("name"::text)'),
    "target_urls_trgm_idx": ("monitors_target", 'UPPER(("urls")::text)'),
    "target_url_trgm_idx": ("monitors_target", 'UPPER("url"::text)'),
    "target_queries_trgm_idx": ("monitors_target", 'UPPER(("queries")::text)'),
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as exc:
        logger.warning(
            "pg_trgm could not be enabled (%s): monitor search works, without"
            " its indexes.",
            exc,
        )
        return
    for name, (table, expression) in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {table}"
            f" USING gin (({expression}) gin_trgm_ops)"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ("monitors", "0005_monitor_run_interval"),
    ]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
