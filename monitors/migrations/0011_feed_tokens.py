"""Atom feeds of changes: a feed link token for every team and monitor, and a
team-wide switch (on by default). Existing rows each get their own random
token before the column becomes unique."""

import secrets

from django.db import migrations, models

import monitors.models


def fill_tokens(apps, schema_editor):
    for name in ("Team", "Monitor"):
        model = apps.get_model("monitors", name)
        rows = list(model.objects.only("pk"))
        for row in rows:
            row.feed_token = secrets.token_urlsafe(32)
        model.objects.bulk_update(rows, ["feed_token"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("monitors", "0010_roles_and_key_scopes"),
    ]

    operations = [
        migrations.AddField(
            model_name="team",
            name="feeds_enabled",
            field=models.BooleanField(default=True, verbose_name="feeds on"),
        ),
        migrations.AddField(
            model_name="team",
            name="feed_token",
            field=models.CharField(default="", editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="monitor",
            name="feed_token",
            field=models.CharField(default="", editable=False, max_length=64),
        ),
        migrations.RunPython(fill_tokens, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="team",
            name="feed_token",
            field=models.CharField(
                default=monitors.models.new_feed_token, editable=False, max_length=64
            ),
        ),
        migrations.AlterField(
            model_name="monitor",
            name="feed_token",
            field=models.CharField(
                default=monitors.models.new_feed_token, editable=False, max_length=64
            ),
        ),
        migrations.AddConstraint(
            model_name="team",
            constraint=models.UniqueConstraint(
                fields=("feed_token",), name="team_feed_token_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="monitor",
            constraint=models.UniqueConstraint(
                fields=("feed_token",), name="monitor_feed_token_unique"
            ),
        ),
    ]
