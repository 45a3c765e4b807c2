"""A changed page's packed diff moves out of checks_pageresult into a table of
its own (checks.models.pages.PageDiff), written only for changed pages, so
PostgreSQL bulk-inserts results in one UNNEST statement. Existing diffs are
copied in one statement (the same SQL on PostgreSQL and SQLite), and back."""

import django.db.models.deletion
from django.db import migrations, models

COPY_OUT = """
    INSERT INTO checks_pagediff (page_id, data)
    SELECT id, packed_diff FROM checks_pageresult WHERE packed_diff IS NOT NULL
"""
COPY_BACK = """
    UPDATE checks_pageresult SET packed_diff = (
        SELECT data FROM checks_pagediff WHERE page_id = checks_pageresult.id
    )
    WHERE id IN (SELECT page_id FROM checks_pagediff)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0022_page_visual_change"),
    ]

    operations = [
        migrations.CreateModel(
            name="PageDiff",
            fields=[
                (
                    "page",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="packed",
                        serialize=False,
                        to="checks.pageresult",
                    ),
                ),
                ("data", models.BinaryField()),
            ],
        ),
        migrations.RunSQL(COPY_OUT, COPY_BACK),
        migrations.RemoveField(
            model_name="pageresult",
            name="packed_diff",
        ),
    ]
