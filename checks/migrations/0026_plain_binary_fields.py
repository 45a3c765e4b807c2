"""The binary columns become PlainBinaryField: the same bytea/BLOB column, so
only the migration state changes. Without SeparateDatabaseAndState SQLite
would copy each table to a new one, as it does for any altered field."""

import checks.models.fields
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0025_mask_old_webhook_addresses"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="capture",
                    name="data",
                    field=checks.models.fields.PlainBinaryField(),
                ),
                migrations.AlterField(
                    model_name="pageresult",
                    name="packed_diff",
                    field=checks.models.fields.PlainBinaryField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="snapshot",
                    name="data",
                    field=checks.models.fields.PlainBinaryField(),
                ),
            ],
            database_operations=[],
        ),
    ]
