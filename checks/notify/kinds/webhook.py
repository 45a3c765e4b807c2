"""A team's webhook channel: the message as signed JSON to a URL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checks import shared_clock
from checks.notify.kinds import http
from checks.notify.kinds.base import ChannelKind, SettingsError
from checks.notify.kinds.outbound import Attempt
from checks.notify.signing import signature_headers, signing_secrets
from checks.targets.options import url_problem

if TYPE_CHECKING:
    from checks.notify.models import Delivery


class WebhookKind(ChannelKind):
    name = "webhook"
    label = "Webhook"
    signed = True
    help = (
        "Sends each message to an address your developers set up, signed "
        "with the team's secret so the receiver can tell it came from Pagewatch."
    )
    fields = {
        "url": (
            "URL",
            "The address that receives the messages, e.g. "
            "https://example.com/hooks/pagewatch",
        )
    }

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = super().clean(settings)
        # The address policy too, as for a monitor's webhook: a URL that can
        # never be posted to is refused now, not on every delivery.
        if problem := url_problem(cleaned["url"]):
            raise SettingsError({"url": problem[1]})
        return cleaned

    def prepare(self, delivery: Delivery) -> Attempt:
        channel = delivery.channel
        assert channel is not None
        body = delivery.body.encode()
        # Receivers refuse a timestamp minutes from their clock: the
        # database's is the one set right, should this machine's be off.
        now = shared_clock.now()
        secret, *previous = signing_secrets(channel.team, now)
        headers = signature_headers(
            secret,
            str(delivery.webhook_id),
            int(now.timestamp()),
            body,
            previous=previous,
        )
        headers["X-Pagewatch-Event"] = delivery.event
        return http.post_json(channel.settings["url"], body, headers)
