from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0035_check_notifications_muted"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="pageresult",
            index=models.Index(
                fields=["target_id", "url", "created_at"], name="page_target_url_idx"
            ),
        ),
    ]
