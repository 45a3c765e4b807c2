"""Activity entries of a webhook turned off, written before such entries kept
the receiver's address in shape only: mask it now. The address is often the
receiver's credential, and read-only API keys read the activity log. (Entries
are otherwise never changed.)"""

from django.db import migrations

from checks.notify.kinds.base import mask_url


def mask_addresses(apps, schema_editor):
    Activity = apps.get_model("teams", "Activity")
    entries = Activity.objects.filter(
        kind="monitor.webhook_disabled", details__has_key="url"
    )
    for entry in entries.iterator():
        masked = mask_url(str(entry.details["url"]))
        if masked != entry.details["url"]:
            entry.details = {**entry.details, "url": masked}
            entry.save(update_fields=["details"])


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0024_delivery_done_with"),
        ("teams", "0003_team_setting_activity"),
    ]

    operations = [
        # The whole address is gone for good: nothing to put back.
        migrations.RunPython(mask_addresses, migrations.RunPython.noop),
    ]
