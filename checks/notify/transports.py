"""One class per way of delivering a notification, looked up by kind.

`send(delivery)` either returns what the destination answered or raises
`DeliveryError(message, permanent=...)`; checks.notify.deliveries claims the row
before, and records the attempt and schedules the retry after. Transports do
no bookkeeping of their own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import smtplib
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, ClassVar

from django.utils import timezone

from checks.errors import ErrorKind
from checks.fetch import FetchError, FetchResult, afetch
from checks.models import DeliveryAttempt
from checks.notify import emails, events
from checks.notify.signing import signature_headers, signing_secrets
from monitors import rules

if TYPE_CHECKING:
    from checks.models import Delivery

logger = logging.getLogger(__name__)

_NEVER_RETRIED = frozenset({ErrorKind.BLOCKED_ADDRESS, ErrorKind.INVALID_URL})


# A receiver's answers, as a delivery records them (the API's
# notificationStatus shows them too), and in plain words for the dashboard.
ANSWERED = "Answered {code}."
ANSWERED_REDIRECT = "Answered {code}{where}; redirects are not followed."
ANSWERED_GONE = "Answered 410 Gone; the monitor's webhook was disabled."
_ANSWERED = re.compile(r"Answered (\d{3})\.")
_ANSWERED_REDIRECT = re.compile(
    r"Answered (3\d\d)(?: to (.+))?; redirects are not followed\.", re.DOTALL
)


def answer_in_plain_words(error: str) -> str:
    """A delivery's error for the dashboard: "Answered 501." -> "The receiving
    server answered with error 501."; any other text as it is."""
    text = error.strip()
    if text == ANSWERED_GONE:
        return (
            "The receiving server answered that this address is gone (410), "
            "so the monitor's webhook was turned off."
        )
    if match := _ANSWERED.fullmatch(text):
        return f"The receiving server answered with error {match[1]}."
    if match := _ANSWERED_REDIRECT.fullmatch(text):
        where = f" to {match[2]}" if match[2] else ""
        return (
            f"The receiving server sent the message on{where} ({match[1]}); "
            "messages are not forwarded, so check the webhook address."
        )
    return text


class DeliveryError(Exception):
    """An attempt that did not deliver.

    permanent: retrying cannot help (blocked address, 410 Gone, consent gone).
    cancel: the destination went away before we could send; not a failure of
        the receiver, shown as "cancelled".
    gone: the receiver answered 410 Gone; the monitor's webhook is disabled.
    retry_after: the receiver asked us to wait at least this long.
    """

    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        cancel: bool = False,
        gone: bool = False,
        status_code: int | None = None,
        response_body: str = "",
        retry_after: timedelta | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent or cancel or gone
        self.cancel = cancel
        self.gone = gone
        self.status_code = status_code
        self.response_body = response_body
        self.retry_after = retry_after


@dataclass
class Sent:
    status_code: int | None = None
    response_body: str = ""


class Transport:
    kind: ClassVar[str]

    def send(self, delivery: Delivery) -> Sent:
        raise NotImplementedError


def _excerpt(body: bytes) -> str:
    return body[: DeliveryAttempt.RESPONSE_MAX_CHARS * 4].decode(
        "utf-8", errors="replace"
    )[: DeliveryAttempt.RESPONSE_MAX_CHARS]


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """Retry-After as seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return timedelta(seconds=int(value))
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return max(moment - now, timedelta(0))


def unsendable_header(name: str, value: str) -> str | None:
    """Why a header can never go out, by the monitor rules and what HTTP
    (and httpx) can carry: a token name, a value of ASCII without breaks."""
    problem = rules.header_name_error(name) or rules.header_value_error(name, value)
    if problem:
        return f"Header '{name}' cannot be sent. {problem}"
    return None


class WebhookTransport(Transport):
    """POST the stored JSON to the monitor's webhook URL through checks.fetch.

    The address policy applies at every attempt (checks.fetch judges the address
    actually connected to); redirects are never followed; only 2xx counts.
    """

    kind = "webhook"
    TIMEOUT_SECONDS = 10.0
    # A receiver's answer is only shown as a 1 KB excerpt; more is a mistake.
    MAX_RESPONSE_BYTES = 256 * 1024
    _OURS = (
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
    )

    def send(self, delivery: Delivery) -> Sent:
        monitor = delivery.monitor
        config = monitor.webhook if monitor.deleted_at is None else None
        if not config or config.get("url") != delivery.url:
            raise DeliveryError(
                "Not sent: the monitor's webhook was removed or changed.",
                cancel=True,
            )
        body = delivery.body.encode()
        result = self._post(delivery, config.get("headers") or {}, body)
        code = result.status_code
        excerpt = _excerpt(result.content)
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
                ANSWERED_GONE,
                gone=True,
                status_code=code,
                response_body=excerpt,
            )
        raise DeliveryError(
            ANSWERED.format(code=code),
            status_code=code,
            response_body=excerpt,
            retry_after=parse_retry_after(
                result.headers.get("retry-after"), timezone.now()
            ),
        )

    def _custom_headers(self, custom: dict[str, str]) -> dict[str, str]:
        """The monitor's own headers, minus the ones we set. One that can never
        be sent (saved before today's rules) fails the delivery for good,
        naming it: every retry would fail the same way."""
        headers = {}
        for name, value in custom.items():
            if name.lower() in self._OURS:
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
    ) -> FetchResult:
        headers = self._custom_headers(custom)
        now = timezone.now()
        secret, *previous = signing_secrets(delivery.monitor.team, now)
        timestamp = int(now.timestamp())
        msg_id = str(delivery.webhook_id)
        headers.update(
            {
                "Content-Type": "application/json",
                "X-Firecrawl-Webhook-Id": msg_id,
                "X-Firecrawl-Event": delivery.event,
                "X-Firecrawl-Delivery-Mode": "queued",
                **signature_headers(secret, msg_id, timestamp, body, previous=previous),
            }
        )
        if delivery.check_run_id:
            headers["X-Firecrawl-Job-Id"] = str(delivery.check_run_id)
        scrape_id = self._scrape_id(delivery)
        if scrape_id:
            headers["X-Firecrawl-Scrape-Id"] = scrape_id
        post = afetch(
            delivery.url,
            method="POST",
            headers=headers,
            content=body,
            timeout=self.TIMEOUT_SECONDS,
            max_bytes=self.MAX_RESPONSE_BYTES,
            follow_redirects=False,
        )
        try:
            # A Celery task is synchronous: one short event loop per attempt.
            return asyncio.run(post)
        except FetchError as exc:
            # A refused address or URL stays refused: retrying cannot help.
            permanent = exc.kind in _NEVER_RETRIED
            raise DeliveryError(exc.message, permanent=permanent) from exc

    @staticmethod
    def _scrape_id(delivery: Delivery) -> str | None:
        if delivery.event != events.PAGE:
            return None
        try:
            return json.loads(delivery.body)["data"][0].get("currentScrapeId")
        except (ValueError, KeyError, IndexError, TypeError):
            return None


class EmailTransport(Transport):
    """Send one message built by checks.notify.emails through Django's mail framework
    (the MAILERS default: console in development, SMTP in production)."""

    kind = "email"

    def send(self, delivery: Delivery) -> Sent:
        reason = emails.consent_problem(delivery)
        if reason:
            raise DeliveryError(f"Not sent: {reason}", cancel=True)
        message = emails.build(delivery)
        try:
            message.send()
        except smtplib.SMTPRecipientsRefused as exc:
            raise DeliveryError(
                f"The mail server refused the address: {exc.recipients}"[:500],
                permanent=True,
            ) from exc
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryError(f"Could not send: {exc}"[:500]) from exc
        return Sent()


TRANSPORTS: dict[str, Transport] = {
    transport.kind: transport for transport in (WebhookTransport(), EmailTransport())
}


def transport_for(kind: str) -> Transport:
    return TRANSPORTS[kind]
