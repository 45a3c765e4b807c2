"""Every team's time zone was UTC because nothing could set it until now; the
History page read the zone most of the team's monitors run in instead. Start
each such team at that zone, so its History keeps the clock it showed and its
digests go at their time of day where the team is. A digest already planned
goes once more at its old time; the next is planned in the new zone."""

from collections import Counter

from django.db import migrations


def from_its_monitors(apps, schema_editor):
    Team = apps.get_model("monitors", "Team")
    Monitor = apps.get_model("monitors", "Monitor")
    for team in Team.objects.filter(time_zone="UTC"):
        zones = Counter(
            Monitor.objects.filter(team=team, deleted_at__isnull=True).values_list(
                "schedule_timezone", flat=True
            )
        )
        if zones:
            zone = zones.most_common(1)[0][0]
            if zone and zone != "UTC":
                Team.objects.filter(pk=team.pk).update(time_zone=zone)


class Migration(migrations.Migration):
    dependencies = [
        ("monitors", "0016_import_run_api_key"),
    ]

    operations = [
        migrations.RunPython(from_its_monitors, migrations.RunPython.noop),
    ]
