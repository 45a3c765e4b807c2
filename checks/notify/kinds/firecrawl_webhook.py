"""A monitor's own Firecrawl `webhook`: monitor.page and monitor.check.completed
events, signed by the team's secret (`webhook-signature`, Standard Webhooks),
with the monitor's own headers.

The channel's settings are the monitor's webhook as the API took it (`url`,
`headers`, `metadata`, `events`); checks.notify.own keeps them in step. The
address policy applies at every attempt (checks.fetch judges the address
actually connected to); redirects are never followed; only 2xx counts.
"""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from checks import shared_clock
from checks.errors import parse_retry_after
from checks.fetch import FetchResult
from checks.models import PageResult
from checks.notify import events
from checks.notify.kinds import http
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, mask
from checks.notify.kinds.outbound import Attempt
from checks.notify.models import Delivery
from checks.notify.signing import signature_headers, signing_secrets
from checks.notify.transports import (
    ANSWERED,
    ANSWERED_GONE,
    ANSWERED_REDIRECT,
    response_excerpt,
    unsendable_header,
)
from monitors.models import Monitor

# The setting that holds the monitor's webhook_pages choice (not on the wire).
PAGES = "pages"
# What "only pages that changed" (Monitor.WebhookPages.CHANGED) sends.
CHANGED_PAGES = frozenset({PageResult.Status.NEW, PageResult.Status.CHANGED})
# Headers Pagewatch sets itself; a monitor's header of the same name is dropped.
OURS = frozenset(
    {
        "content-type",
        "x-firecrawl-signature",
        "x-firecrawl-webhook-id",
        "x-firecrawl-event",
        "x-firecrawl-job-id",
        "x-firecrawl-delivery-mode",
        "x-firecrawl-scrape-id",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)


class FirecrawlWebhookKind(ChannelKind):
    name = Delivery.Kind.WEBHOOK.value
    label = "The monitor's webhook"
    help = (
        "Firecrawl's monitor webhook: monitor.page and monitor.check.completed "
        "events, signed with the team's secret. Set with the monitor."
    )
    own_only = True
    signed = True

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        # Validated by the monitor's API serializer and form (the webhook field).
        return dict(settings)

    def from_monitor(self, monitor: Monitor) -> dict[str, Any]:
        """The webhook as the API took it, and which pages get an event."""
        if not monitor.webhook:
            return {}
        return dict(monitor.webhook) | {PAGES: monitor.webhook_pages}

    def masked(self, settings: dict[str, Any]) -> dict[str, Any]:
        # Header values often carry the receiver's credentials.
        headers = settings.get("headers")
        if not isinstance(headers, dict):
            return dict(settings)
        return settings | {"headers": {k: mask(v) for k, v in headers.items()}}

    @staticmethod
    def wants_page(settings: dict[str, Any], status: str) -> bool:
        """A monitor.page event for a page of this status? Every page but a
        removed one, or only new and changed ones when the monitor asks."""
        if status == PageResult.Status.REMOVED:
            return False
        quiet = settings.get(PAGES) == Monitor.WebhookPages.CHANGED
        if quiet and status not in CHANGED_PAGES:
            return False
        return events.wants(settings, events.PAGE)

    def prepare(self, delivery: Delivery) -> Attempt:
        config = self._current_webhook(delivery)
        body = delivery.body.encode()
        return self._post(delivery, config.get("headers") or {}, body)

    @staticmethod
    def _current_webhook(delivery: Delivery) -> dict[str, Any]:
        """The webhook this row was written for, if the monitor still has it."""
        channel, monitor = delivery.channel, delivery.monitor
        config = channel.settings if channel is not None else {}
        alive = monitor is not None and monitor.deleted_at is None
        if not alive or not config or config.get("url") != delivery.url:
            raise DeliveryError(
                "Not sent: the monitor's webhook was removed or changed.",
                cancel=True,
            )
        return config

    @staticmethod
    def _answer(result: FetchResult) -> Sent:
        code = result.status_code
        excerpt = response_excerpt(result.content)
        if 200 <= code < 300:
            return Sent(code, excerpt)
        if 300 <= code < 400:
            location = result.headers.get("location", "")[:200]
            where = f" to {location}" if location else ""
            raise DeliveryError(
                ANSWERED_REDIRECT.format(code=code, where=where),
                status_code=code,
                response_body=excerpt,
            )
        if code == 410:
            raise DeliveryError(
                ANSWERED_GONE, gone=True, status_code=code, response_body=excerpt
            )
        raise DeliveryError(
            ANSWERED.format(code=code),
            status_code=code,
            response_body=excerpt,
            retry_after=parse_retry_after(
                result.headers.get("retry-after"), timezone.now()
            ),
        )

    @staticmethod
    def _custom_headers(custom: dict[str, str]) -> dict[str, str]:
        """The monitor's own headers, minus the ones we set. One that can never
        be sent (saved before today's rules) fails the delivery for good,
        naming it: every retry would fail the same way."""
        headers = {}
        for name, value in custom.items():
            if name.lower() in OURS:
                continue
            problem = unsendable_header(name, value)
            if problem:
                raise DeliveryError(
                    f"{problem} Change the monitor's webhook headers.",
                    permanent=True,
                )
            headers[name] = value
        return headers

    def _post(
        self, delivery: Delivery, custom: dict[str, str], body: bytes
    ) -> http.Request:
        assert delivery.monitor is not None
        headers = self._custom_headers(custom)
        # Receivers refuse a timestamp minutes from their clock: the
        # database's is the one set right, should this machine's be off.
        now = shared_clock.now()
        secret, *previous = signing_secrets(delivery.monitor.team, now)
        msg_id = str(delivery.webhook_id)
        headers.update(
            {
                "Content-Type": "application/json",
                "X-Firecrawl-Webhook-Id": msg_id,
                "X-Firecrawl-Event": delivery.event,
                "X-Firecrawl-Delivery-Mode": "queued",
                **signature_headers(
                    secret, msg_id, int(now.timestamp()), body, previous=previous
                ),
            }
        )
        if delivery.check_run_id:
            headers["X-Firecrawl-Job-Id"] = str(delivery.check_run_id)
        scrape_id = _scrape_id(delivery)
        if scrape_id:
            headers["X-Firecrawl-Scrape-Id"] = scrape_id
        return http.Request(delivery.url, body, headers, answer=self._answer)


def _scrape_id(delivery: Delivery) -> str | None:
    if delivery.event != events.PAGE:
        return None
    try:
        return json.loads(delivery.body)["data"][0].get("currentScrapeId")
    except (ValueError, KeyError, IndexError, TypeError):
        return None
