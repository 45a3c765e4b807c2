"""The e-mail backend `make run` uses until SMTP is set up: every e-mail as
readable text in one log record.

Django's console backend prints the raw MIME message, quoted-printable, so a
confirmation link comes out broken across `=` soft line breaks, and the
worker's redirected output prefixed every one of those lines: nobody trying
Pagewatch out could click it. Here each e-mail is its recipients, subject and
plain-text part, decoded, links whole on lines of their own."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.backends.console import EmailBackend as ConsoleBackend
from django.core.mail.message import EmailMessage
from django.utils.module_loading import import_string

from config.env import ConfigError
from config.logs import MAILBOX

logger = logging.getLogger(MAILBOX)

RULE = "-" * 72


def readable(message: EmailMessage) -> str:
    lines = [
        f"E-mail to {', '.join(message.to)} (not sent: EMAIL_BACKEND is the console)",
        f"Subject: {message.subject}",
        RULE,
        str(message.body).rstrip(),
        RULE,
    ]
    return "\n".join(lines)


NOT_SENT = (
    "E-mail is not sent: this server writes every e-mail to its log instead. "
    "For the administrator: set EMAIL_BACKEND (and EMAIL_HOST…) to send it."
)


def not_sent_reason() -> str | None:
    """Why no e-mail leaves this server, in words for the dashboard and the
    API, or None when a real backend (SMTP, say) is set: the default backend
    only writes to the log, and every e-mail it "sends" counts as delivered."""

    backend = import_string(settings.MAILERS["default"]["BACKEND"])
    return NOT_SENT if issubclass(backend, (EmailBackend, ConsoleBackend)) else None


class EmailBackend(BaseEmailBackend):
    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        for message in email_messages:
            logger.info("%s", readable(message))
        return len(email_messages)


def require_backend() -> None:
    """Stop the process at start when EMAIL_BACKEND names nothing loadable.
    Django loads the backend only when a message is sent, so a typo sent no
    e-mail at all (sign-up confirmations, password resets, alerts) and said so
    only in a worker's log, each time."""
    backend = settings.MAILERS["default"]["BACKEND"]
    try:
        import_string(backend)
    except ImportError as exc:
        raise ConfigError(
            f"EMAIL_BACKEND must name an e-mail backend class, got {backend!r}: {exc}"
        ) from None
