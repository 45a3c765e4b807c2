"""E-mail to chosen members of the team: every message a team channel hears
(changes, failing and recovered, digests, tests), one e-mail per person,
through Django's mail framework as the monitor's own e-mail goes (MAILERS).

The people are picked among the team's members, so no double opt-in: they
signed in to the team. They are kept by account (the settings hold user ids),
so someone who changes their address gets the mail at the new one; the API
and the form name them by address, the one thing an integrator knows of a
member (`clean_for` turns addresses into accounts, `shown_for` back). At
every send only those still in the team (with an e-mail address) get mail; a
message nobody is left to receive is cancelled, not retried.

The e-mails go one after the other over one connection. The outbox row keeps
whom it is done with (Delivery.done_with), written as each e-mail is sent,
before the next one starts, so a retry, after the mail server stopped, the
attempt ran out of time or the worker was killed in the middle (the sweeper
gives its row back after the claim's lease), sends only to the others.

The one e-mail in flight when an attempt ends badly (the worker killed, the
mail server not answering in time) follows one rule: at least once. Nobody
can tell whether the mail server took it, and these e-mails are alerts: a
second copy of one costs a reader a glance, a lost one can cost them the
change they were watching for. It is also how mail itself behaves (a sender
whose server never confirmed the end of a message sends it again), and how
the monitor's own e-mail and a dropped connection already went. So that
e-mail goes again with the retry; nobody else's does."""

from __future__ import annotations

import copy
import smtplib
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.mail import EmailMultiAlternatives, mailers
from django.urls import reverse

from checks.notify import consent, mail_headers, messages
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.email import mail_errors, send_one
from checks.notify.kinds.outbound import Attempt, Outbound
from checks.notify.texts import linked
from checks.notify.texts import message as email_message
from monitors.links import public_url
from monitors.models import Membership

if TYPE_CHECKING:
    from checks.notify.models import Delivery
    from monitors.models import Channel, Team

RECIPIENTS_MAX = 100
# An e-mail's text, its HTML twice that, stays well within the 102 KB past
# which Gmail clips a message; a digest names this many monitors at most.
TEXT_CHARS = 20_000
DIGEST_MONITORS = 50
# One attempt's whole time (below the deliver task's time limit).
SEND_TIMEOUT_SECONDS = 60.0
# No e-mail is started later than this into an attempt: one started in time
# ends, or fails on the mail connection's own 30 s time-out, before the
# attempt's time is up. The rest wait for the next attempt.
STARTS_WITHIN_SECONDS = 25.0
NOBODY_LEFT = (
    "Not sent: none of the people chosen for this channel is still a member "
    "of the team with an e-mail address."
)
NOBODY_ELSE_LEFT = (
    "Not sent to the rest: none of them is still a member of the team with an "
    "e-mail address."
)


@dataclass(frozen=True)
class Member:
    """A member of the team who can get mail."""

    id: int
    name: str
    address: str


# Where with_members keeps the members it looked up, on its copy of a team.
_MEMBERS = "_mail_members"


def with_members(team: Team) -> Team:
    """A copy of `team` whose members() are looked up once, now: for showing
    many of its channels in one request (GET /v2/channels), not for a
    change (which must see the members as they are)."""
    seen = copy.copy(team)
    setattr(seen, _MEMBERS, members(team))
    return seen


def members(team: Team) -> list[Member]:
    """The team's members who can get mail (active, with an address), by
    address."""
    known = getattr(team, _MEMBERS, None)
    if known is not None:
        return known
    rows = (
        Membership.objects.filter(team=team, user__is_active=True)
        .exclude(user__email="")
        .select_related("user")
    )
    found = [
        Member(
            row.user_id,
            row.user.get_full_name() or row.user.get_username(),
            row.user.email.lower(),
        )
        for row in rows
    ]
    return sorted(found, key=lambda member: (member.address, member.id))


def chosen(team: Team, settings: Mapping[str, Any]) -> list[Member]:
    """The members a channel's settings chose who can get mail now."""
    ids = set(settings.get("recipients") or [])
    return [member for member in members(team) if member.id in ids]


def thread_of(channel: Channel, message: dict[str, Any]) -> dict[str, str]:
    """The thread an e-mail of this message belongs to: a monitor's changes,
    its failing and working-again alerts (the alert and its all-clear read
    together), or the channel's digests; a test message stands alone."""
    kind = message.get("type")
    monitor = (message.get("monitor") or {}).get("id")
    if kind == messages.CHANGE and monitor:
        root = mail_headers.thread_root("changes", monitor)
    elif kind in (messages.FAILING, messages.RECOVERED) and monitor:
        root = mail_headers.thread_root("alerts", monitor)
    elif kind == messages.DIGEST:
        key = mail_headers.of_this_install(f"channel-{channel.pk}")
        root = mail_headers.thread_root("digests", key)
    else:
        return {}
    return mail_headers.in_thread(root)


def build(
    channel: Channel,
    message: dict[str, Any],
    to: str,
    accounts: tuple[int, ...],
    delivery_key: uuid.UUID,
) -> EmailMultiAlternatives:
    title = messages.title(message)
    if message.get("type") == messages.DIGEST:
        link = public_url(reverse("monitor-list"))
        message = messages.keeping_monitors(message, DIGEST_MONITORS, link)
    # Within what mail apps show whole (Gmail clips a message past 102 KB,
    # the part with the unsubscribe link first): a busy day's digest lists
    # what fits and counts the rest ("…and 180 more") with their links.
    text = messages.text(message, fits=lambda body: len(body) <= TEXT_CHARS)
    # The subject is the title; the body starts with what it has to say.
    body = messages.without_title(text, title)
    unsubscribe_url, one_click_url = (
        consent.channel_unsubscribe_urls(channel.pk, accounts) if accounts else ("", "")
    )
    context = {
        "title": title,
        "body": body,
        "body_html": linked(body, messages.links(message)),
        "team_name": channel.team.name,
        "channel_name": channel.name,
        "channels_url": public_url(reverse("channels")),
        "email": to,
        "unsubscribe_url": unsubscribe_url,
    }
    return email_message(
        subject=title,
        to=to,
        text_template="emails/team_channel.txt",
        html_template="emails/team_channel.html",
        context=context,
        headers={
            **mail_headers.message_id(delivery_key, to),
            **thread_of(channel, message),
            **mail_headers.list_id(
                f"{channel.name} - {channel.team.name}",
                "channel",
                mail_headers.of_this_install(channel.pk),
            ),
            **(consent.one_click_headers(one_click_url) if accounts else {}),
        },
    )


@dataclass(frozen=True)
class Mail:
    """One e-mail of a message, and the accounts it goes to (members who
    share an address get one e-mail)."""

    email: EmailMultiAlternatives
    accounts: tuple[int, ...]

    @property
    def address(self) -> str:
        return self.email.to[0]


def _listed(mails: list[Mail]) -> str:
    return ", ".join(mail.address for mail in mails)


@dataclass
class TeamSend(Attempt):
    """The e-mails of one message, one after the other over one connection,
    in the drain's thread pool (SMTP blocks); each one that ends is written on
    the row (done_with) before the next starts. The thread that sends and the
    event loop that waits for it share where the attempt has got to; once the
    attempt is over (its time is up, or the mail server failed), no e-mail
    starts, so what the row records as done stays true."""

    delivery_id: int
    mails: list[Mail]
    # Earlier attempts were done with some of the people.
    retried: bool = False
    sent: list[Mail] = field(default_factory=list)
    refused: list[Mail] = field(default_factory=list)
    sending: Mail | None = None
    over: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def run(self, outbound: Outbound) -> Sent:
        if not outbound.records:
            # Sent this way, whom the row is done with would be written
            # nowhere and every retry would mail everyone again.
            raise RuntimeError(
                "A team e-mail is sent only by a drain, which records who got it."
            )
        starts_until = time.monotonic() + STARTS_WITHIN_SECONDS
        try:
            return await outbound.blocking(
                lambda: self.send_each(outbound, starts_until), SEND_TIMEOUT_SECONDS
            )
        except TimeoutError:
            # The e-mail being sent may or may not have arrived: it is not
            # recorded as done, so the retry sends it again (at least once).
            in_doubt = self.stop()
            return self.outcome(
                "the mail server did not answer within "
                f"{SEND_TIMEOUT_SECONDS:.0f} seconds",
                in_doubt,
            )

    def send_each(self, outbound: Outbound, starts_until: float) -> Sent:
        """One e-mail after the other over one connection to the mail server,
        while the attempt has time. An address the server refuses does not
        stop the others; other trouble stops the attempt, and the next one
        sends to whoever is left."""
        with mail_errors():
            connection = mailers.default
            connection.open()
        try:
            for mail in self.mails:
                if not self.start(mail, starts_until):
                    return self.outcome(
                        f"one attempt starts e-mails for {STARTS_WITHIN_SECONDS:.0f} "
                        "seconds at most"
                    )
                try:
                    send_one(mail.email, connection)
                except DeliveryError as error:
                    if not error.permanent:
                        self.stop()
                        return self.outcome(error.message)
                    refused = True
                else:
                    refused = False
                if not self.ended(mail, outbound, refused=refused):
                    return self.outcome("this attempt no longer holds the delivery")
        finally:
            with suppress(smtplib.SMTPException, OSError):
                connection.close()
        return self.outcome(None)

    def start(self, mail: Mail, starts_until: float) -> bool:
        """Whether `mail` may go now; the first always may, so every attempt
        gets somewhere."""
        with self._lock:
            started = self.sent or self.refused
            if started and time.monotonic() > starts_until:
                self.over = True
            if self.over:
                return False
            self.sending = mail
            return True

    def ended(self, mail: Mail, outbound: Outbound, *, refused: bool) -> bool:
        """Have the drain write on the row that `mail` is done with, and wait
        for it: a retry leaves it out however this worker ends. (Killed
        between the mail server taking an e-mail and this, the retry sends
        that one again: at least once, for the one e-mail in flight.) False,
        so no other e-mail starts, when the attempt is over or the row is no
        longer its own."""
        with self._lock:
            if self.over:  # out of time meanwhile: the event loop kept it
                return False
            (self.refused if refused else self.sent).append(mail)
            self.sending = None
            # Asked under the lock, so it comes before the attempt's outcome.
            kept = outbound.done_with(self.delivery_id, mail.accounts)
        try:
            return kept.result(SEND_TIMEOUT_SECONDS)
        except TimeoutError:  # the drain is gone
            return False

    def stop(self) -> Mail | None:
        """End the attempt now; the e-mail being sent, if any."""
        with self._lock:
            self.over = True
            in_flight, self.sending = self.sending, None
            return in_flight

    def outcome(self, trouble: str | None, in_doubt: Mail | None = None) -> Sent:
        """What the attempt came to: Sent once everyone is done with, else a
        DeliveryError saying who got it and who is left for the next attempt
        (the row already records the rest as done with). `in_doubt`: the
        e-mail being sent when time ran out; it may have arrived, and goes
        again with the next attempt all the same."""
        done = [*self.sent, *self.refused]
        left = [mail for mail in self.mails if mail not in done]
        refused = (
            f" The mail server refused {_listed(self.refused)}." if self.refused else ""
        )
        if not left:
            if not self.sent and not self.retried:
                raise DeliveryError(
                    f"The mail server refused every address: {_listed(self.refused)}"[
                        :500
                    ],
                    permanent=True,
                )
            # As on a first attempt: the message went to everyone it could.
            sent = f"Sent to {_listed(self.sent)}." if self.sent else ""
            return Sent(None, (sent + refused).strip())
        trouble = (trouble or "stopped").rstrip(".")
        if not done:
            raise DeliveryError(f"{trouble[:1].upper()}{trouble[1:]}.")
        said = f"Sent to {_listed(self.sent)}, then stopped" if self.sent else "Stopped"
        said += f": {trouble}"
        if in_doubt:
            said += (
                f" while sending to {in_doubt.address}; that e-mail may have "
                "arrived, and goes again so that it is not lost"
            )
        said += "." + refused
        if left:
            said += f" Left for the next attempt: {_listed(left)}."
        raise DeliveryError(said[:500], permanent=not left)


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
        names: dict[str, list[str]] = {}
        for member in members(team):
            names.setdefault(member.address, []).append(member.name)
        return {
            "recipients": [
                (address, f"{' and '.join(them)} ({address})")
                for address, them in names.items()
            ]
        }

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The addresses given, checked for shape only: `clean_for` turns them
        into the members' accounts, which is what a channel keeps."""
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
        addresses = self.clean(settings)["recipients"]
        accounts: dict[str, list[int]] = {}
        for member in members(team):
            accounts.setdefault(member.address, []).append(member.id)
        for address in addresses:
            if address not in accounts:
                raise SettingsError(
                    {"recipients": f"{address} is not a member of this team."}
                )
        return {"recipients": sorted(i for a in addresses for i in accounts[a])}

    def shown_for(self, team: Team, settings: dict[str, Any]) -> dict[str, Any]:
        addresses = {member.address for member in chosen(team, settings)}
        return {"recipients": sorted(addresses)}

    def sends_to(self, team: Team, settings: dict[str, Any]) -> list[str]:
        return [member.name for member in chosen(team, settings)] or [
            "no one still in the team"
        ]

    def reaches_nobody(self, team: Team, settings: dict[str, Any]) -> bool:
        return not chosen(team, settings)

    def prepare(self, delivery: Delivery) -> Attempt:
        # Who is still in the team is read here; the SMTP conversations,
        # which block, run in the drain's thread pool.
        channel = delivery.channel
        assert channel is not None
        done = set(delivery.done_with)
        accounts: dict[str, list[int]] = {}
        for member in chosen(channel.team, channel.settings):
            if member.id not in done:
                accounts.setdefault(member.address, []).append(member.id)
        if not accounts:
            raise DeliveryError(NOBODY_ELSE_LEFT if done else NOBODY_LEFT, cancel=True)
        message = self.message(delivery)
        return TeamSend(
            delivery.pk,
            [
                Mail(
                    build(channel, message, address, tuple(ids), delivery.webhook_id),
                    tuple(ids),
                )
                for address, ids in accounts.items()
            ],
            retried=bool(done),
        )
