"""E-mail to chosen members of the team: every message a team channel hears
(changes, failing and recovered, digests, tests), one e-mail per person,
through Django's mail framework as the monitor's own e-mail goes (MAILERS).

The people are picked among the team's members, so no double opt-in: they
signed in to the team. They are read again at every send, and only those
still in the team (with an e-mail address) get mail; a message nobody is left
to receive is cancelled, not retried."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from django.core.mail import EmailMultiAlternatives, mailers
from django.urls import reverse

from checks.notify import messages
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.email import SEND_TIMEOUT_SECONDS, mail_errors, send_one
from checks.notify.kinds.outbound import Attempt, Blocking
from checks.notify.texts import absolute, linked
from checks.notify.texts import message as email_message
from monitors.models import Membership

if TYPE_CHECKING:
    from checks.notify.models import Delivery
    from monitors.models import Channel, Team

RECIPIENTS_MAX = 100
NOBODY_LEFT = (
    "Not sent: none of the people chosen for this channel is still a member "
    "of the team with an e-mail address."
)


def members(team: Team) -> dict[str, str]:
    """{address: "Name (address)"} of the team's members who can get mail,
    by address."""
    rows = (
        Membership.objects.filter(team=team, user__is_active=True)
        .exclude(user__email="")
        .select_related("user")
    )
    found = {}
    for row in rows:
        address = row.user.email.lower()
        name = row.user.get_full_name() or row.user.get_username()
        found[address] = f"{name} ({address})"
    return dict(sorted(found.items()))


def _links(message: Any) -> Iterator[str]:
    """Every address a message names as a link or a page's (not its quotes)."""
    if isinstance(message, Mapping):
        for key, value in message.items():
            if key in ("link", "url") and isinstance(value, str):
                yield value
            else:
                yield from _links(value)
    elif isinstance(message, list):
        for value in message:
            yield from _links(value)


def build(channel: Channel, message: dict[str, Any], to: str) -> EmailMultiAlternatives:
    body = messages.text(message)
    context = {
        "title": messages.title(message),
        "body": body,
        "body_html": linked(body, _links(message)),
        "team_name": channel.team.name,
        "channel_name": channel.name,
        "channels_url": absolute(reverse("channels")),
        "email": to,
    }
    return email_message(
        subject=context["title"],
        to=to,
        text_template="emails/team_channel.txt",
        html_template="emails/team_channel.html",
        context=context,
    )


def send_each(mails: list[EmailMultiAlternatives]) -> Sent:
    """One e-mail after the other over one connection to the mail server. An
    address the server refuses does not stop the others. Trouble once someone
    got theirs is not retried: a retry sends the whole message again, and
    they would get it twice."""
    sent: list[str] = []
    refused: list[str] = []
    with mail_errors():
        connection = mailers.default
        connection.open()
    try:
        for mail in mails:
            try:
                send_one(mail, connection)
            except DeliveryError as error:
                if error.permanent:
                    refused.append(mail.to[0])
                    continue
                if not sent:
                    raise
                raise DeliveryError(
                    f"Sent to {', '.join(sent)}, then stopped: {error.message}"[:500],
                    permanent=True,
                ) from error
            sent.append(mail.to[0])
    finally:
        with suppress(smtplib.SMTPException, OSError):
            connection.close()
    if not sent:
        raise DeliveryError(
            f"The mail server refused every address: {', '.join(refused)}"[:500],
            permanent=True,
        )
    said = f"Sent to {', '.join(sent)}."
    if refused:
        said += f" The mail server refused {', '.join(refused)}."
    return Sent(None, said)


class TeamEmailKind(ChannelKind):
    name = "team_email"
    label = "E-mail to team members"
    help = (
        "E-mails the members of your team you choose. Someone who leaves the "
        "team gets no more of these e-mails."
    )
    fields = {
        "recipients": (
            "Who gets the e-mails",
            "Members of the team with an e-mail address. To add someone else, "
            "invite them to the team first.",
        )
    }

    def choices(self, team: Team) -> dict[str, list[tuple[str, str]]]:
        return {"recipients": list(members(team).items())}

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(settings) - set(self.fields))
        if unknown:
            raise SettingsError({unknown[0]: "Not a setting of this kind."})
        given = settings.get("recipients")
        if not isinstance(given, list) or not all(isinstance(a, str) for a in given):
            raise SettingsError({"recipients": "A list of e-mail addresses."})
        recipients = list(dict.fromkeys(a.strip().lower() for a in given if a.strip()))
        if not recipients:
            raise SettingsError({"recipients": "Choose at least one member."})
        if len(recipients) > RECIPIENTS_MAX:
            raise SettingsError(
                {"recipients": f"Choose at most {RECIPIENTS_MAX} members."}
            )
        return {"recipients": sorted(recipients)}

    def clean_for(self, team: Team, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = self.clean(settings)
        known = members(team)
        for address in cleaned["recipients"]:
            if address not in known:
                raise SettingsError(
                    {"recipients": f"{address} is not a member of this team."}
                )
        return cleaned

    def prepare(self, delivery: Delivery) -> Attempt:
        # Who is still in the team is read here; the SMTP conversations,
        # which block, run in the drain's thread pool.
        channel = delivery.channel
        assert channel is not None
        known = members(channel.team)
        to = [a for a in channel.settings.get("recipients") or [] if a in known]
        if not to:
            raise DeliveryError(NOBODY_LEFT, cancel=True)
        message = self.message(delivery)
        mails = [build(channel, message, address) for address in to]
        return Blocking(lambda: send_each(mails), SEND_TIMEOUT_SECONDS)
