"""Check.notifications_muted: the mute a check started with. Checks already
recorded as muted (notificationStatus.email.reason "muted") are marked so,
so digests still leave their changes out."""

from django.db import migrations, models


def mark_muted(apps, schema_editor):
    Check = apps.get_model("checks", "Check")
    Check.objects.filter(notification_status__email__reason="muted").update(
        notifications_muted=True
    )


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0034_check_updated_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="check",
            name="notifications_muted",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_muted, migrations.RunPython.noop),
    ]
