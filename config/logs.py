"""Credentials some addresses carry, kept out of every log.

Whoever reads a log (an operator, a log service, a copy in a backup) could
otherwise read a team's feeds, unsubscribe someone or take an invitation:
feed, e-mail, invitation, password-reset and screenshot links carry their
credential in the path (every route with a `token` parameter), the sign-in
provider's callback in its `code`. gunicorn's access log
(config/gunicorn.py) and Django's own lines ("Not Found: /feeds/teams/…")
both pass through `hidden`."""

from __future__ import annotations

import logging
import re

# The public routes begin the path: at the start of the text, after a space,
# a quote, "=" or "(" (a request line, "Not Found: …", ?next=…) or after the
# host of a whole address. The dashboard's own addresses under them, such as
# /settings/team/invitations/12/revoke/, carry no credential and stay readable.
_CREDENTIALS = re.compile(
    r"((?:^|(?<=[\s\"'=(])|//[^/?#\s\"]+)"
    r"/(?:feeds/monitors|feeds/teams|captures|email/confirm|email/unsubscribe"
    r"|email/channel|invitations|accounts/reset/[^/?#\s]+)/)(?!set-password/)"
    r"[^/?#\s\"]+"
    r"|([?&]code=)[^&#\s\"]+"
)


def hidden(text: str) -> str:
    return _CREDENTIALS.sub(lambda found: (found[1] or found[2]) + "[hidden]", text)


# The console e-mail backend's logger (config/mail.py). Until SMTP is set up
# the log IS the mailbox: the operator trying Pagewatch out copies a
# confirmation or invitation link from it, so its links stay whole.
MAILBOX = "pagewatch.mail"


class WithoutCredentials(logging.Filter):
    """On a handler: the record's message with the credentials masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == MAILBOX:
            return True
        message = record.getMessage()
        masked = hidden(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


class OutageInOneLine(logging.Filter):
    """On the django.request logger: a 503 is an outage, not a bug, and gets
    at most one line. An exception that says the database (or the broker) is
    away, which handler500 answers with a 503, is logged as a WARNING naming
    the part, without the traceback Django attaches: one per request, for as
    long as the outage lasts, buried the rest of the log. A 503 a view
    answered itself (/healthz, /metrics, the API's envelope) was logged by
    that view in its own words, so Django's "Service Unavailable" line after
    it goes. Every other status, and every other exception, stays as is."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) != 503:
            return True
        # Rewritten already: logging.config adds a second copy of this filter
        # each time Django's setup runs again in a process (config.wsgi after
        # the test runner's), and the copy must keep the line, not drop it.
        if getattr(record, "outage_in_one_line", False):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return False
        # Imported here: gunicorn's master reads this module for its log
        # masking, and would otherwise load Django's database layer, redis
        # and kombu it never uses (issue #32: the master's memory).
        from checks import outages

        part = outages.away(exc)
        if part is None:
            return True
        # The args are read before the message changes: "Service Unavailable: /".
        record.args = (record.getMessage(), part, outages.reason(exc))
        record.msg = "%s: %s is not reachable: %s"
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text = None, None
        record.outage_in_one_line = True
        return True
