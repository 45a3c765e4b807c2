"""Every monitor's Firecrawl `webhook` and `notification.email` become its own
channels (checks.notify.own), and their delivery rows point at them.

The monitor's fields stay as they are (the API reads and writes them); its
e-mail recipients (EmailRecipient, with their confirmation state) belong to the
monitor and are not touched. A monitor whose webhook is gone but whose old
deliveries remain gets a webhook channel with empty settings, so every row
keeps its history. Kinds and names are spelled out: a migration must not
follow later code.
"""

from django.db import migrations
from django.db.models import Q

OLD_WEBHOOK = "webhook"
WEBHOOK = "firecrawl_webhook"
EMAIL = "email"
NAMES = {WEBHOOK: "The monitor's webhook", EMAIL: "E-mail"}


def _own(Channel, monitor, kind, settings):
    channel, _ = Channel.objects.get_or_create(
        owner_monitor=monitor,
        kind=kind,
        defaults={
            "team_id": monitor.team_id,
            "name": NAMES[kind],
            "settings": settings,
            "events": [],
        },
    )
    return channel


def forward(apps, schema_editor):
    Monitor = apps.get_model("monitors", "Monitor")
    Channel = apps.get_model("monitors", "Channel")
    Delivery = apps.get_model("checks", "Delivery")
    legacy = Delivery.objects.filter(channel__isnull=True)
    hooks = legacy.filter(kind=OLD_WEBHOOK)
    mails = legacy.filter(kind=EMAIL)
    with_rows = set(
        legacy.filter(kind__in=(OLD_WEBHOOK, EMAIL), monitor__isnull=False)
        .values_list("monitor_id", flat=True)
        .distinct()
    )
    wanted = Monitor.objects.filter(
        Q(pk__in=with_rows)
        | Q(webhook__isnull=False)
        | Q(notification__has_key="email")
    )
    for monitor in wanted.iterator():
        webhook = monitor.webhook or {}
        if webhook:  # as FirecrawlWebhookKind.from_monitor has it
            webhook = webhook | {"pages": monitor.webhook_pages}
        if webhook or hooks.filter(monitor=monitor).exists():
            channel = _own(Channel, monitor, WEBHOOK, webhook)
            hooks.filter(monitor=monitor).update(kind=WEBHOOK, channel=channel)
        email = (monitor.notification or {}).get("email") or {}
        if email or mails.filter(monitor=monitor).exists():
            channel = _own(Channel, monitor, EMAIL, email)
            mails.filter(monitor=monitor).update(channel=channel)
    # Rows without a monitor (none are made, but none may be lost either).
    hooks.update(kind=WEBHOOK)


def backward(apps, schema_editor):
    Channel = apps.get_model("monitors", "Channel")
    Delivery = apps.get_model("checks", "Delivery")
    Delivery.objects.filter(kind=WEBHOOK).update(kind=OLD_WEBHOOK, channel=None)
    Delivery.objects.filter(kind=EMAIL).update(channel=None)
    Channel.objects.filter(
        owner_monitor__isnull=False, kind__in=(WEBHOOK, EMAIL)
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0020_delivery_to_channels"),
        ("monitors", "0013_own_channel_per_kind"),
    ]

    operations = [migrations.RunPython(forward, backward)]
