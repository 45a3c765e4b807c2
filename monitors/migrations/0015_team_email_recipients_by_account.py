"""E-mail to team members keeps the people it sends to by account (user id),
not by address, so someone who changes their address still gets the mail.

Each stored address becomes the accounts of the channel's team's members with
that address (switched-off accounts too: they get nothing while switched off,
and their mail again once switched back on); an address no member has any
more is dropped, as a send would skip it. Backwards, each account becomes its
address. Entries already in the other shape are left as they are, so running
either way twice changes nothing."""

from django.db import migrations

KIND = "team_email"


def _channels(apps):
    Channel = apps.get_model("monitors", "Channel")
    return Channel.objects.filter(kind=KIND)


def forward(apps, schema_editor):
    Membership = apps.get_model("monitors", "Membership")
    for channel in _channels(apps):
        stored = (channel.settings or {}).get("recipients") or []
        addresses = {a.strip().lower() for a in stored if isinstance(a, str)}
        accounts = {a for a in stored if isinstance(a, int)}
        for user_id, email in Membership.objects.filter(
            team_id=channel.team_id
        ).values_list("user_id", "user__email"):
            if email and email.lower() in addresses:
                accounts.add(user_id)
        channel.settings = {**(channel.settings or {}), "recipients": sorted(accounts)}
        channel.save(update_fields=["settings"])


def backward(apps, schema_editor):
    Membership = apps.get_model("monitors", "Membership")
    for channel in _channels(apps):
        stored = (channel.settings or {}).get("recipients") or []
        accounts = {a for a in stored if isinstance(a, int)}
        addresses = {a for a in stored if isinstance(a, str)}
        addresses |= {
            email.lower()
            for email in Membership.objects.filter(
                team_id=channel.team_id, user_id__in=accounts
            ).values_list("user__email", flat=True)
            if email
        }
        channel.settings = {
            **(channel.settings or {}),
            "recipients": sorted(addresses),
        }
        channel.save(update_fields=["settings"])


class Migration(migrations.Migration):
    dependencies = [
        ("monitors", "0014_target_type_from_registry"),
    ]

    operations = [migrations.RunPython(forward, backward)]
