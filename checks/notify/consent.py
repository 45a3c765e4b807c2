"""Consent to e-mail: the signed tokens in confirmation and unsubscribe
links, the links and List-Unsubscribe headers made from them, and what
following one does to the recipient (the /email/ pages)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from checks.notify.texts import LINE_BREAKS
from monitors.links import public_url
from monitors.models import Channel, EmailRecipient

# Signed into every consent link already sent: keep them as they are (they
# name this module's former path, checks/emails.py).
CONFIRM_SALT = "checks.emails.confirm"
UNSUBSCRIBE_SALT = "checks.emails.unsubscribe"
CHANNEL_SALT = "checks.notify.channel_unsubscribe"
CONFIRM_MAX_AGE = timedelta(days=30)


def _stamp(moment: datetime | None) -> int:
    return int(moment.timestamp()) if moment else 0


def confirm_token(recipient: EmailRecipient) -> str:
    # "s" ties the token to the confirmation e-mail that carried it, so only
    # the link of the latest one confirms the address.
    payload = {
        "r": recipient.pk,
        "e": recipient.email,
        "s": _stamp(recipient.confirmation_sent_at),
    }
    return signing.dumps(payload, salt=CONFIRM_SALT, compress=True)


def unsubscribe_token(recipient: EmailRecipient) -> str:
    # Untimed and deterministic: an unsubscribe link must work for as long as
    # the e-mail that carries it, and is the same in every e-mail.
    payload = {"r": recipient.pk, "e": recipient.email}
    return signing.Signer(salt=UNSUBSCRIBE_SALT).sign_object(payload, compress=True)


def _recipient(payload: Any) -> EmailRecipient | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("r"), int):
        return None
    recipient = (
        EmailRecipient.objects.select_related("monitor", "monitor__team")
        .filter(pk=payload["r"], email=payload.get("e"))
        .first()
    )
    if recipient is None or recipient.monitor.deleted_at is not None:
        return None
    return recipient


def read_confirm_token(token: str) -> EmailRecipient | None:
    try:
        payload = signing.loads(token, salt=CONFIRM_SALT, max_age=CONFIRM_MAX_AGE)
    except signing.BadSignature:
        return None
    recipient = _recipient(payload)
    if recipient is None or payload.get("s") != _stamp(recipient.confirmation_sent_at):
        return None
    return recipient


def read_unsubscribe_token(token: str) -> EmailRecipient | None:
    try:
        payload = signing.Signer(salt=UNSUBSCRIBE_SALT).unsign_object(token)
    except signing.BadSignature:
        return None
    return _recipient(payload)


def confirm_url(recipient: EmailRecipient) -> str:
    return public_url(reverse("email_confirm", args=[confirm_token(recipient)]))


def unsubscribe_url(recipient: EmailRecipient) -> str:
    return public_url(reverse("email_unsubscribe", args=[unsubscribe_token(recipient)]))


def one_click_url(recipient: EmailRecipient) -> str:
    return public_url(
        reverse("email_unsubscribe_one_click", args=[unsubscribe_token(recipient)])
    )


class OneLineHeader(str):
    """A header value that goes out as it is, on one line.

    Python's email package folds headers at 78 characters; a URL longer than
    that has no space to fold at, so it would be sent as an RFC 2047 encoded
    word ("=?utf-8?q?=3Chttps=3A//…"), which mail clients do not read as
    List-Unsubscribe's <URL>: they would offer no unsubscribe button. A value
    with a `name` and a `fold()` is a header object to email.policy, written
    by its own fold(). Only for ASCII without line breaks, within RFC 5322's
    998 characters a line (unsubscribe_headers checks)."""

    name: str

    def __new__(cls, name: str, value: str) -> OneLineHeader:
        header = super().__new__(cls, value)
        header.name = name
        return header

    def fold(self, *, policy: Any) -> str:
        return f"{self.name}: {self}{policy.linesep}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies of the message (the locmem backend's) keep the header as it is.
        return (OneLineHeader, (self.name, str(self)))


def unsubscribe_headers(recipient: EmailRecipient) -> dict[str, str]:
    """RFC 2369 + RFC 8058 one-click: mail clients POST to the URL."""
    return one_click_headers(one_click_url(recipient))


def one_click_headers(url: str) -> dict[str, str]:
    value = f"<{url}>"
    if value.isascii() and len(value) < 900 and not LINE_BREAKS.search(value):
        value = OneLineHeader("List-Unsubscribe", value)
    return {
        "List-Unsubscribe": value,
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }


def confirm_recipient(recipient: EmailRecipient) -> bool:
    """The address owner confirmed (a POST with a valid, latest confirm token).

    Also re-confirms an address that unsubscribed: only its owner holds the
    token."""
    now = timezone.now()
    done = (
        EmailRecipient.objects.filter(pk=recipient.pk)
        .exclude(status=EmailRecipient.Status.CONFIRMED)
        .update(status=EmailRecipient.Status.CONFIRMED, confirmed_at=now)
    )
    recipient.refresh_from_db()
    return bool(done)


def unsubscribe_recipient(recipient: EmailRecipient) -> bool:
    """Stop all e-mail to this address from this monitor until it confirms again.
    Notifications already queued for it are cancelled when their turn comes."""
    now = timezone.now()
    done = (
        EmailRecipient.objects.filter(pk=recipient.pk)
        .exclude(status=EmailRecipient.Status.UNSUBSCRIBED)
        .update(status=EmailRecipient.Status.UNSUBSCRIBED, unsubscribed_at=now)
    )
    recipient.refresh_from_db()
    return bool(done)


# --- A team channel's e-mail (team_email) -------------------------------------
# Its people are members chosen by the team, not opt-ins; leaving is still one
# click, for a viewer too (who cannot change channels): the link takes the
# accounts it was sent to off the channel.


def channel_token(channel_id: int, accounts: Iterable[int]) -> str:
    payload = {"c": channel_id, "u": sorted(accounts)}
    return signing.Signer(salt=CHANNEL_SALT).sign_object(payload, compress=True)


def read_channel_token(token: str) -> tuple[Channel, list[int]] | None:
    try:
        payload = signing.Signer(salt=CHANNEL_SALT).unsign_object(token)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("c"), int):
        return None
    accounts = payload.get("u")
    if not isinstance(accounts, list) or not all(isinstance(a, int) for a in accounts):
        return None
    channel = Channel.objects.select_related("team").filter(pk=payload["c"]).first()
    return (channel, accounts) if channel is not None else None


def channel_unsubscribe_urls(
    channel_id: int, accounts: Iterable[int]
) -> tuple[str, str]:
    """The unsubscribe page's link and the one-click (List-Unsubscribe-Post)
    link, from one signed token: an e-mail carries both."""
    token = channel_token(channel_id, accounts)
    return (
        public_url(reverse("email_channel_unsubscribe", args=[token])),
        public_url(reverse("email_channel_unsubscribe_one_click", args=[token])),
    )


def channel_unsubscribe_url(channel_id: int, accounts: Iterable[int]) -> str:
    return channel_unsubscribe_urls(channel_id, accounts)[0]


def on_channel(channel: Channel, accounts: Iterable[int]) -> bool:
    ids = set(channel.settings.get("recipients") or [])
    return bool(ids & set(accounts))


def leave_channel(channel: Channel, accounts: Iterable[int]) -> bool:
    """Take these accounts off the channel's people; whether any was on it."""
    leaving = set(accounts)
    with transaction.atomic():
        row = Channel.objects.select_for_update().get(pk=channel.pk)
        ids = list(row.settings.get("recipients") or [])
        kept = [i for i in ids if i not in leaving]
        if kept != ids:
            row.settings = {**row.settings, "recipients": kept}
            row.save(update_fields=["settings"])
    channel.refresh_from_db()
    return kept != ids
