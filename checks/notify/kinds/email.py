"""A monitor's own Firecrawl `notification.email`: change reports to the
addresses that confirmed (double opt-in), each with its unsubscribe link, and
the consent e-mails themselves, through Django's mail framework (the MAILERS
default: console in development, SMTP in production).

The channel's settings are the monitor's `notification.email` as the API took
it; who may get mail is EmailRecipient rows (checks.notify.emails). Which
checks send is decided when the rows are written (checks.notify.deliveries):
a check whose every change the judge called noise writes none."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend

from checks.notify import emails
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent
from checks.notify.kinds.outbound import Attempt, Blocking
from checks.notify.models import Delivery
from monitors.models import Monitor

# Above the SMTP connection's own time-out (settings' MAILERS): the backend's
# error is the better message, this only bounds a send that never ends.
SEND_TIMEOUT_SECONDS = 60.0


class EmailKind(ChannelKind):
    name = Delivery.Kind.EMAIL.value
    label = "E-mail"
    help = (
        "Firecrawl's monitor e-mail: the monitor's recipients confirm first, "
        "and every message has an unsubscribe link. Set with the monitor."
    )
    own_only = True

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        # Validated by the monitor's API serializer and form (notification.email).
        return dict(settings)

    def from_monitor(self, monitor: Monitor) -> dict[str, Any]:
        return dict(monitor.email_settings)

    def prepare(self, delivery: Delivery) -> Attempt:
        # Consent and the message are read here; the SMTP conversation, which
        # blocks, runs in the drain's thread pool.
        reason = emails.consent_problem(delivery)
        if reason:
            raise DeliveryError(f"Not sent: {reason}", cancel=True)
        message = emails.build(delivery)
        return Blocking(lambda: send_one(message), SEND_TIMEOUT_SECONDS)


@contextmanager
def mail_errors() -> Iterator[None]:
    """The mail server's trouble as a DeliveryError: a refused address is
    permanent, anything else (a connection, a time-out) worth retrying."""
    try:
        yield
    except smtplib.SMTPRecipientsRefused as exc:
        raise DeliveryError(
            f"The mail server refused the address: {exc.recipients}"[:500],
            permanent=True,
        ) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"Could not send: {exc}"[:500]) from exc


def send_one(message: EmailMessage, connection: BaseEmailBackend | None = None) -> Sent:
    """Send one e-mail now, over `connection` when one is open."""
    with mail_errors():
        if connection is None:
            message.send()
        else:
            connection.send_messages([message])
    return Sent()
