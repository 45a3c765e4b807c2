"""PostgreSQL storage settings for the large columns a check writes.

- Snapshot.data is compressed by Pagewatch already (Zstandard): EXTERNAL
  storage keeps PostgreSQL from trying to compress it again on every insert.
- Diffs and their rendered HTML compress well: LZ4 (PostgreSQL 14+, when the
  server was built with it) costs a fraction of the default pglz's CPU time.

Other databases have no such settings; on them this migration does nothing.
"""

from django.db import migrations

EXTERNAL = "ALTER TABLE checks_snapshot ALTER COLUMN data SET STORAGE EXTERNAL"
LZ4 = (
    "ALTER TABLE checks_pageresult"
    " ALTER COLUMN diff SET COMPRESSION lz4,"
    " ALTER COLUMN diff_html SET COMPRESSION lz4"
)


def apply(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    schema_editor.execute(EXTERNAL)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('server_version_num')::int >= 140000"
            " AND EXISTS (SELECT 1 FROM pg_settings WHERE name ="
            " 'default_toast_compression' AND 'lz4' = ANY(enumvals))"
        )
        (has_lz4,) = cursor.fetchone()
    if has_lz4:
        schema_editor.execute(LZ4)


def revert(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "ALTER TABLE checks_snapshot ALTER COLUMN data SET STORAGE EXTENDED"
    )


class Migration(migrations.Migration):
    dependencies = [("checks", "0004_snapshot_format")]

    operations = [migrations.RunPython(apply, revert)]
