# Written by hand to hold only the runner's PageState fields: other work in this
# app adds its own migration on top.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("checks", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="pagestate",
            name="cached_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="pagestate",
            name="metadata",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
