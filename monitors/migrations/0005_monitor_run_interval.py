"""Stores each monitor's run interval with its schedule."""

from django.db import migrations, models
from django.utils import timezone


def fill_intervals(apps, schema_editor):
    """Existing monitors get their interval now; one whose schedule cannot be
    read keeps none and has it worked out when asked, as before."""
    from cronsim import CronSimError

    from monitors.schedule import ScheduleError, shortest_interval_minutes

    Monitor = apps.get_model("monitors", "Monitor")
    now = timezone.now()
    crons = Monitor.objects.order_by().values_list("schedule_cron", flat=True).distinct()
    for cron in crons.iterator():
        try:
            minutes = shortest_interval_minutes(cron, now)
        except (ScheduleError, CronSimError, ValueError):
            continue
        Monitor.objects.filter(schedule_cron=cron).update(run_interval_minutes=minutes)


class Migration(migrations.Migration):

    dependencies = [
        ("monitors", "0004_ignore_lines"),
    ]

    operations = [
        migrations.AddField(
            model_name="monitor",
            name="run_interval_minutes",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(fill_intervals, migrations.RunPython.noop),
    ]
