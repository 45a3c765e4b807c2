"""What one delivery attempt comes to, for every kind of channel
(checks.notify.kinds): `Sent`, or `DeliveryError(message, permanent=...)`, and
the receiver's answers in the words deliveries record and the dashboard shows.

checks.notify.deliveries claims the row before a kind's `send`, and records
the attempt and schedules the retry after; kinds do no bookkeeping of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from checks.notify.models import Delivery, DeliveryAttempt
from monitors import rules
from monitors.time_words import relative

# A receiver's answers, as a delivery records them (the API's
# notificationStatus shows them too), and in plain words for the dashboard.
ANSWERED = "Answered {code}."
ANSWERED_REDIRECT = "Answered {code}{where}; redirects are not followed."
ANSWERED_GONE = "Answered 410 Gone; the monitor's webhook was disabled."
# A kind that needs a setting this server lacks: stored and given to the API
# naming it; the dashboard names it only for the administrator.
NOT_SET = "Not sent: {setting} is not set."
NOT_SET_WORDS = (
    "Not sent: this kind of channel was not set up on this server. "
    "For the administrator: set {setting}."
)
_ANSWERED = re.compile(r"Answered (\d{3})\.")
_NOT_SET = re.compile(r"Not sent: ([A-Z][A-Z0-9_]*) is not set\.")
# unsendable_header's words, quoted as integrators read them (straight).
_UNSENDABLE_HEADER = re.compile(r"Header '.+?' cannot be sent\. ", re.DOTALL)
_ANSWERED_REDIRECT = re.compile(
    r"Answered (3\d\d)(?: to (.+))?; redirects are not followed\.", re.DOTALL
)


def answer_in_plain_words(error: str) -> str:
    """A delivery's error for the dashboard: "Answered 501." -> "The receiving
    server answered with error 501.", a missing setting named for the
    administrator, a header that cannot be sent quoted as the dashboard
    quotes; any other text as it is."""
    text = error.strip()
    if match := _NOT_SET.fullmatch(text):
        return NOT_SET_WORDS.format(setting=match[1])
    if _UNSENDABLE_HEADER.match(text):
        return rules.curly_quotes(text)
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


def outcome_in_words(delivery: Delivery) -> str:
    """What became of a message that was not delivered, in a sentence: "It
    failed: <reason>. We will try again in about 2 minutes." while retries
    remain, "We gave up: <reason>." when they are spent; a message that was
    never sent ("Not sent: …") says so as it is."""
    reason = answer_in_plain_words(str(delivery.last_error or "")).rstrip(".")
    if not reason:
        return ""
    if delivery.status == "failed" and not reason.startswith("Not sent"):
        return f"We gave up: {reason}."
    if delivery.status != "pending":
        return f"{reason}."
    when = relative(delivery.next_attempt_at)
    if when.startswith("in ") and when[3].isdigit():
        retry = f"We will try again in about {when[3:]}."
    elif when.startswith("in "):
        retry = f"We will try again {when}."
    else:
        retry = "We will try again shortly."
    return f"It failed: {reason}. {retry}"


def words_for_test_message(channel_name: str, delivery: Delivery) -> str:
    """What "Send a test message" tells whoever pressed it, on the Channels
    page and in the admin alike."""
    if delivery.status == Delivery.Status.DELIVERED:
        return f"Test message sent to “{channel_name}”."
    return (
        f"The test message to “{channel_name}” was not delivered. "
        f"{outcome_in_words(delivery)}"
    )


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


def response_excerpt(body: bytes) -> str:
    """What a receiver answered, as much as an attempt's row keeps."""
    return body[: DeliveryAttempt.RESPONSE_MAX_CHARS * 4].decode(
        "utf-8", errors="replace"
    )[: DeliveryAttempt.RESPONSE_MAX_CHARS]


def unsendable_header(name: str, value: str) -> str | None:
    """Why a header can never go out, by the monitor rules and what HTTP
    (and httpx) can carry: a token name, a value of ASCII without breaks."""
    problem = rules.header_name_error(name) or rules.header_value_error(name, value)
    if problem:
        return f"Header '{name}' cannot be sent. {problem}"
    return None
