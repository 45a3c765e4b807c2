from django.db import migrations, models


class Migration(migrations.Migration):
    """A changed page's diff is stored compressed (packed_diff) and its HTML
    rendered when someone looks; rows written before keep their JSON diff in
    the same column, read as it is, and their pre-rendered HTML goes."""

    dependencies = [
        ("checks", "0016_check_found_changes"),
    ]

    operations = [
        migrations.RenameField(
            model_name="pageresult", old_name="diff", new_name="stored_diff"
        ),
        migrations.AlterField(
            model_name="pageresult",
            name="stored_diff",
            field=models.JSONField(blank=True, db_column="diff", null=True),
        ),
        migrations.AddField(
            model_name="pageresult",
            name="packed_diff",
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.RemoveField(model_name="pageresult", name="diff_html"),
    ]
