"""A team's time zone is empty until the team picks one (UTC meanwhile), so a
team that picked UTC can be told from one that never picked a zone. Every
team at UTC so far is taken as never having picked one, as the dashboard
treated them until now (a new monitor's form offered the browser's zone)."""

from django.db import migrations, models


def utc_as_not_chosen(apps, schema_editor):
    apps.get_model("monitors", "Team").objects.filter(time_zone="UTC").update(
        time_zone=""
    )


def not_chosen_as_utc(apps, schema_editor):
    apps.get_model("monitors", "Team").objects.filter(time_zone="").update(
        time_zone="UTC"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("monitors", "0018_email_recipient_added_by"),
    ]

    operations = [
        migrations.AlterField(
            model_name="team",
            name="time_zone",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.RunPython(utc_as_not_chosen, not_chosen_as_utc),
    ]
