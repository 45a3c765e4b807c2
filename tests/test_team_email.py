"""The "E-mail to team members" channel: chosen members of the team get each
message by e-mail (Django's mail framework, the locmem outbox here), through
the same outbox as every channel; someone who left the team gets nothing."""

from __future__ import annotations

import email
import email.policy
import html
import re
import smtplib
import threading
import uuid
from datetime import UTC, datetime, time, timedelta

import pytest
import time_machine
from django.core.mail.backends.base import BaseEmailBackend
from django.db import OperationalError, connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from django.utils import timezone

from checks.models import Delivery
from checks.notify import channels as channel_events
from checks.notify import digests, drain, kinds, mail_headers, messages, sweep
from checks.notify.kinds import team_email
from monitors.models import Channel, Membership, Monitor, MonitorChannel
from teams.models import Activity
from tests.notifying import judged, make_monitor
from tests.smtp import MailServer

pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

MIA = "mia@acme.test"
NOAH = "noah@acme.test"
INES = "ines@acme.test"
OUTSIDER = "olga@globex.test"
ZOE = "zoe@acme.test"


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user(
        "mia", MIA, password="pw", first_name="Mia", last_name="Lund"
    )
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def noah(team, django_user_model):
    user = django_user_model.objects.create_user(
        "noah", NOAH, first_name="Noah", last_name="Berg"
    )
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    return user


@pytest.fixture
def outsider(other_team, django_user_model):
    user = django_user_model.objects.create_user("olga", OUTSIDER)
    Membership.objects.create(team=other_team, user=user)
    return user


@pytest.fixture
def web(client, owner):
    client.force_login(owner)
    return client


def team_mail(team, monitor=None, recipients=(MIA, NOAH), **fields) -> Channel:
    """A channel to the members with these addresses, its settings made as
    the API and the form make them."""
    fields.setdefault("events", list(Channel.DEFAULT_EVENTS))
    chosen = {"recipients": list(recipients)}
    channel = Channel.objects.create(
        team=team,
        name="Pricing people",
        kind="team_email",
        settings=kinds.kind_for("team_email").clean_for(team, chosen),
        **fields,
    )
    if monitor is not None:
        MonitorChannel.objects.create(monitor=monitor, channel=channel)
    return channel


def meaningful_check(scenario, monitor):
    return scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/about", "same"),
        ],
    )


def html_of(mail) -> str:
    [(content, mimetype)] = mail.alternatives
    assert mimetype == "text/html"
    return content


# --- The kind and its settings ------------------------------------------------------


def test_e_mail_to_team_members_is_a_kind_teams_are_offered(web):
    kind = kinds.offered("team_email")

    assert kind is not None and kind in kinds.all_kinds()
    assert kind.label == "E-mail to team members"
    assert "E-mail to team members" in web.get("/channels/new/").content.decode()


def test_the_form_offers_the_teams_members_as_checkboxes_and_no_outsider(
    web, noah, outsider
):
    page = html.unescape(web.get("/channels/new/?kind=team_email").content.decode())

    boxes = re.findall(r'<input type="checkbox" name="setting_recipients"[^>]*>', page)
    assert [re.search(r'value="([^"]*)"', box)[1] for box in boxes] == [MIA, NOAH]
    assert "Mia Lund (mia@acme.test)" in page and "Noah Berg (noah@acme.test)" in page
    assert OUTSIDER not in page


def test_the_form_saves_the_chosen_members(web, team, owner, noah):
    response = web.post(
        "/channels/new/",
        {
            "kind": "team_email",
            "name": "Pricing people",
            "setting_recipients": [NOAH, MIA],
            "events": ["meaningful", "failing"],
            "failing_after": "3",
            "digest": "daily",
            "digest_at": "08:30",
        },
    )

    assert response.status_code == 302
    channel = Channel.objects.get(team=team)
    assert channel.kind == "team_email"
    # Kept by account, so an address change follows the person.
    assert channel.settings == {"recipients": sorted([owner.pk, noah.pk])}
    assert channel.digest == "daily" and channel.next_digest_at is not None
    page = html.unescape(web.get("/channels/").content.decode())
    assert "E-mail to team members" in page


def test_the_form_refuses_someone_who_is_not_in_the_team(web, team, outsider):
    response = web.post(
        "/channels/new/",
        {
            "kind": "team_email",
            "name": "Pricing people",
            "setting_recipients": [MIA, OUTSIDER],
            "events": ["meaningful"],
            "failing_after": "3",
            "digest": "",
        },
    )

    assert response.status_code == 400
    assert not Channel.objects.filter(team=team).exists()
    assert f"{OUTSIDER} is not a member of this team." in html.unescape(
        response.content.decode()
    )


def test_the_form_asks_for_at_least_one_member_in_plain_words(web, team):
    response = web.post(
        "/channels/new/",
        {"kind": "team_email", "name": "Nobody", "events": ["meaningful"],
         "failing_after": "3", "digest": ""},
    )  # fmt: skip

    assert response.status_code == 400
    assert not Channel.objects.filter(team=team).exists()
    assert "Choose at least one member." in response.content.decode()


def test_the_api_takes_members_addresses_and_refuses_another_address(
    api, team, owner, outsider
):
    refused = api.post(
        "/v2/channels",
        {"name": "Mail", "kind": "team_email",
         "settings": {"recipients": [MIA, OUTSIDER]}},
        format="json",
    )  # fmt: skip
    assert refused.status_code == 400
    assert OUTSIDER in refused.content.decode()
    assert not Channel.objects.filter(team=team).exists()

    made = api.post(
        "/v2/channels",
        {"name": "Mail", "kind": "team_email",
         "settings": {"recipients": ["Mia@Acme.test"]}},
        format="json",
    )  # fmt: skip
    assert made.status_code == 200, made.content
    assert made.json()["data"]["settings"] == {"recipients": [MIA]}
    channel = Channel.objects.get(team=team)

    edited = api.patch(
        f"/v2/channels/{channel.pk}",
        {"settings": {"recipients": [OUTSIDER]}},
        format="json",
    )
    assert edited.status_code == 400
    channel.refresh_from_db()
    assert channel.settings == {"recipients": [owner.pk]}


# --- What it sends ------------------------------------------------------------------


def test_a_meaningful_change_sends_one_e_mail_to_each_chosen_member(
    team, owner, noah, scenario, queued, mailoutbox, settings
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor)

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.DELIVERED
    assert delivery.event == "channel.change"
    assert sorted(mail.to for mail in mailoutbox) == [[MIA], [NOAH]]
    mail = mailoutbox[0]
    assert mail.subject.startswith("Pricing page: ")
    assert "https://example.com/pricing" in mail.body
    assert "Why: The price went up." in mail.body
    # Why they get it, and where to change that.
    channels_page = settings.PUBLIC_BASE_URL + "/channels/"
    assert (
        f"You get this e-mail at {mail.to[0]} because you are a member of the team Acme"
        in mail.body
    )
    assert "“Pricing people”" in mail.body
    assert channels_page in mail.body
    page = html_of(mail)
    assert "https://example.com/pricing" in page
    assert f'href="{channels_page}"' in page


def test_a_failing_monitor_sends_one_failing_e_mail_and_one_recovered(
    team, owner, scenario, queued, mailoutbox
):
    monitor = make_monitor(team)
    team_mail(team, monitor, recipients=[MIA], events=["failing"], failing_after=2)

    for _ in range(3):
        scenario.run(monitor, [("https://example.com/pricing", "error")])
    queued.run()
    assert [mail.subject for mail in mailoutbox] == ["Pricing page is failing"]
    assert "its last 2 checks failed" in mailoutbox[0].body

    scenario.run(monitor, [("https://example.com/pricing", "same")])
    scenario.run(monitor, [("https://example.com/pricing", "same")])
    queued.run()

    assert [mail.subject for mail in mailoutbox] == [
        "Pricing page is failing",
        "Pricing page works again",
    ]


def headers_of(mail) -> email.message.EmailMessage:
    wire = mail.message(policy=email.policy.SMTP).as_bytes()
    return email.message_from_bytes(wire, policy=email.policy.default)


def test_a_failing_alert_and_its_all_clear_share_a_thread_apart_from_the_changes(
    team, owner, scenario, queued, mailoutbox, settings
):
    settings.DEFAULT_FROM_EMAIL = "alerts@watch.acme.test"
    monitor = make_monitor(team, goal="Prices")
    other = make_monitor(team, name="Jobs", goal="Jobs")
    channel = team_mail(
        team,
        monitor,
        recipients=[MIA],
        events=["meaningful", "failing"],
        failing_after=1,
    )
    MonitorChannel.objects.create(monitor=other, channel=channel)

    scenario.run(monitor, [("https://example.com/pricing", "error")])
    scenario.run(monitor, [("https://example.com/pricing", "same")])
    meaningful_check(scenario, monitor)
    meaningful_check(scenario, other)
    queued.run()

    failing, works, change, other_change = (headers_of(mail) for mail in mailoutbox)
    assert failing["Subject"] == "Pricing page is failing"
    assert works["Subject"] == "Pricing page works again"
    alerts = f"<alerts.{monitor.pk}@watch.acme.test>"
    assert failing["References"] == works["References"] == alerts
    assert failing["In-Reply-To"] == works["In-Reply-To"] == alerts
    assert change["References"] == f"<changes.{monitor.pk}@watch.acme.test>"
    assert other_change["References"] == f"<changes.{other.pk}@watch.acme.test>"
    # One list: the channel's, whichever monitor the e-mail is about.
    lists = {sent["List-Id"] for sent in (failing, works, change, other_change)}
    ident = mail_headers.of_this_install(channel.pk)
    assert lists == {f"Pricing people - Acme <{ident}.channel.watch.acme.test>"}
    ids = [sent["Message-ID"] for sent in (failing, works, change, other_change)]
    assert len(set(ids)) == 4
    assert all(i.endswith("@watch.acme.test>") for i in ids)


def test_a_channels_thread_and_list_are_not_those_of_another_install(
    team, owner, settings
):
    """Staging and production sending from one domain, or a reinstall, number
    their channels alike: mail clients would put their digests in one thread
    and one mail rule would catch both."""
    settings.DEFAULT_FROM_EMAIL = "alerts@watch.acme.test"
    channel = team_mail(team, recipients=[MIA])
    test = messages.test(channel.name)

    def headers() -> tuple[str, str]:
        digests = team_email.thread_of(channel, {"type": messages.DIGEST})
        sent = headers_of(team_email.build(channel, test, MIA, (), uuid.uuid4()))
        return digests["References"], sent["List-Id"]

    settings.SECRET_KEY = "production-" * 6
    production = headers()
    assert production == headers()  # the same for the channel over time
    settings.SECRET_KEY = "staging-" * 8
    staging = headers()

    assert production[0] != staging[0]
    assert production[1] != staging[1]
    assert staging[0].endswith("@watch.acme.test>")
    assert staging[1].startswith("Pricing people - Acme <")


def test_a_long_monitor_name_leaves_room_in_the_subject_for_what_happened(
    team, owner, scenario, queued, mailoutbox
):
    # As long as a name can be (256), with the header injection inside it.
    name = "Préis 🚀 " + "N" * 220
    monitor = make_monitor(team, name=name + "\r\nBcc: x@evil.test", goal="Prices")
    team_mail(
        team,
        monitor,
        recipients=[MIA],
        events=["meaningful", "failing"],
        failing_after=1,
    )

    scenario.run(monitor, [("https://example.com/pricing", "error")])
    scenario.run(monitor, [("https://example.com/pricing", "same")])
    meaningful_check(scenario, monitor)
    queued.run()

    subjects = [headers_of(mail)["Subject"] for mail in mailoutbox]
    cut = name[:119] + "…"  # 120 characters
    assert subjects == [
        f"{cut} is failing",
        f"{cut} works again",
        f"{cut}: 1 page changed (1 meaningful)",
    ]
    assert all(headers_of(mail)["Bcc"] is None for mail in mailoutbox)
    # The body names the monitor in full.
    assert name in mailoutbox[2].body


def test_a_daily_digest_is_one_e_mail(
    team, owner, scenario, queued, mailoutbox, settings
):
    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        channel = team_mail(
            team, monitor, recipients=[MIA], digest="daily", digest_at=time(9, 0)
        )
        digests.schedule(channel, datetime.now(UTC))
        channel.save()
        meaningful_check(scenario, monitor)
        scenario.run(monitor, [("https://example.com/plans", "new")])
    assert mailoutbox == []  # a digest channel is not told at once

    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))
    drain.deliver(made.pk)

    made.refresh_from_db()
    assert made.status == Delivery.Status.DELIVERED
    [mail] = mailoutbox
    assert mail.to == [MIA]
    assert mail.subject == "Pagewatch digest: 2 meaningful changes"
    assert "https://example.com/pricing" in mail.body
    assert "https://example.com/plans (new page)" in mail.body
    # The HTML part links every page and the monitor, as the change e-mail does.
    links = re.findall(r'href="([^"]*)"', html_of(mail))
    assert "https://example.com/pricing" in links
    assert "https://example.com/plans" in links
    assert settings.PUBLIC_BASE_URL + monitor.get_absolute_url() in links


def digest_of(team, scenario, monitors_and_changes, verdict="meaningful"):
    """A daily digest e-mail to Mia of these monitors' changes, each monitor's
    made a minute after the one before (so the last is the newest)."""
    start = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        channel = team_mail(
            team, recipients=[MIA], digest="daily", digest_at=time(9, 0)
        )
        digests.schedule(channel, datetime.now(UTC))
        channel.save()
    for minute, (name, changes) in enumerate(monitors_and_changes, start=1):
        with time_machine.travel(start + timedelta(minutes=minute), tick=False):
            monitor = make_monitor(team, name=name, goal="Prices")
            MonitorChannel.objects.create(monitor=monitor, channel=channel)
            fields = {"judgment": judged(verdict != "noise"), "verdict": verdict}
            pages = [
                (f"https://example.com/{name}/{n}", "changed", fields)
                for n in range(changes)
            ]
            scenario.run(monitor, pages)
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        made = digests.queue_due(datetime.now(UTC))
    for delivery in made:
        drain.deliver(delivery.pk)
    return made


def test_a_busy_digest_e_mail_is_bounded_newest_monitor_first_linking_to_the_rest(
    team, owner, scenario, mailoutbox, settings
):
    digest_of(team, scenario, [("Busy", 200), ("Quiet", 1)])

    [mail] = mailoutbox
    assert mail.subject == "Pagewatch digest: 201 meaningful changes"
    assert len(mail.body) < 25_000
    # Grouped by monitor, the one with the newest change first.
    assert mail.body.index("Quiet (") < mail.body.index("Busy (")
    busy = Monitor.objects.get(name="Busy")
    link = settings.PUBLIC_BASE_URL + busy.get_absolute_url()
    assert mail.body.count("https://example.com/Busy/") == 20
    assert f"- …and 180 more.\n  All of them in Pagewatch: {link}\n" in mail.body
    assert f'All of them in Pagewatch: <a href="{link}">' in html_of(mail)


def test_a_digest_e_mail_of_many_monitors_names_fifty_and_links_to_the_rest(
    team, owner, scenario, mailoutbox, settings
):
    digest_of(team, scenario, [(f"Shop {n:02}", 1) for n in range(60)])

    [mail] = mailoutbox
    assert mail.subject == "Pagewatch digest: 60 meaningful changes"
    assert "Shop 59 (" in mail.body and "Shop 10 (" in mail.body
    assert "Shop 09 (" not in mail.body
    every = settings.PUBLIC_BASE_URL + "/"
    assert f"…and 10 more monitors with changes.\nAll your monitors: {every}\n" in (
        mail.body
    )
    assert f'All your monitors: <a href="{every}">' in html_of(mail)


def test_a_digest_cut_twice_to_fit_counts_every_monitor_it_left_out(
    team, owner, scenario, mailoutbox, settings
):
    # Fifty long-named monitors with long links are more than an e-mail's
    # text holds: the digest is cut again, and the count says both cuts.
    settings.PUBLIC_BASE_URL = "https://pagewatch." + "long-" * 30 + "acme.test"
    names = [f"Shop {n:02} " + "x" * 248 for n in range(60)]
    digest_of(team, scenario, [(name, 1) for name in names])

    [mail] = mailoutbox
    named = sum(f"{name} (" in mail.body for name in names)
    assert 0 < named < team_email.DIGEST_MONITORS
    assert f"…and {60 - named} more monitors with changes.\n" in mail.body


def test_a_digest_of_changes_all_judged_noise_sends_nothing(
    team, owner, scenario, mailoutbox
):
    assert digest_of(team, scenario, [("Noisy", 3)], verdict="noise") == []
    assert mailoutbox == []


def test_a_member_who_left_the_team_gets_nothing(
    team, owner, noah, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, goal="Prices")
    team_mail(team, monitor)
    Membership.objects.get(team=team, user=noah).remove()

    meaningful_check(scenario, monitor)
    queued.run()

    assert [mail.to for mail in mailoutbox] == [[MIA]]


def test_a_switched_off_account_gets_nothing(
    team, owner, noah, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, goal="Prices")
    team_mail(team, monitor)
    noah.is_active = False
    noah.save()

    meaningful_check(scenario, monitor)
    queued.run()

    assert [mail.to for mail in mailoutbox] == [[MIA]]


def test_with_no_chosen_member_left_the_message_is_cancelled_saying_why(
    team, owner, noah, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor, recipients=[NOAH])
    Membership.objects.get(team=team, user=noah).remove()

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.CANCELLED
    assert delivery.attempts == 1 and delivery.next_attempt_at is None
    assert delivery.last_error == (
        "Not sent: none of the people chosen for this channel is still a member "
        "of the team with an e-mail address."
    )
    assert mailoutbox == []


def test_page_text_in_the_html_part_is_escaped(
    team, owner, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, goal="Prices")
    team_mail(team, monitor, recipients=[MIA])
    hostile = judged(True) | {"reason": "<script>alert(1)</script>"}

    scenario.run(
        monitor, [("https://example.com/pricing", "changed", {"judgment": hostile})]
    )
    queued.run()

    [mail] = mailoutbox
    assert "<script>" not in html_of(mail)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_of(mail)
    assert "Why: <script>alert(1)</script>" in mail.body


def test_only_the_messages_own_addresses_are_links_in_the_html_part(
    team, owner, scenario, queued, mailoutbox, settings
):
    monitor = make_monitor(team, goal="Prices")
    team_mail(team, monitor, recipients=[MIA])
    quoting = judged(True) | {"reason": "Sign in at https://elsewhere.example/login"}

    check = scenario.run(
        monitor, [("https://example.com/pricing", "changed", {"judgment": quoting})]
    )
    queued.run()

    [mail] = mailoutbox
    links = re.findall(r'href="([^"]*)"', html_of(mail))
    base = settings.PUBLIC_BASE_URL
    assert "https://example.com/pricing" in links
    assert f"{base}{check.get_absolute_url()}" in links
    assert "https://elsewhere.example/login" not in links
    assert "Sign in at https://elsewhere.example/login" in html_of(mail)


def test_the_test_button_e_mails_the_chosen_members(web, team, noah, mailoutbox):
    channel = team_mail(team)

    response = web.post(f"/channels/{channel.pk}/test/")

    assert response.status_code == 302
    assert sorted(mail.to for mail in mailoutbox) == [[MIA], [NOAH]]
    assert mailoutbox[0].subject == "A test message from Pagewatch"
    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.DELIVERED
    page = html.unescape(web.get("/channels/").content.decode())
    assert "Test message sent to “Pricing people”." in page


def test_the_admin_names_the_kind_and_shows_who_gets_the_e_mails(
    admin_client, team, owner, noah
):
    channel = team_mail(team)

    listed = admin_client.get(reverse("admin:monitors_channel_changelist"))
    shown = admin_client.get(
        reverse("admin:monitors_channel_change", args=[channel.pk])
    )

    assert "E-mail to team members" in listed.content.decode()
    page = html.unescape(shown.content.decode())
    assert "E-mail to team members" in page
    assert MIA in page and NOAH in page


def test_an_edit_shows_the_chosen_members_ticked(web, team, noah):
    channel = team_mail(team, recipients=[NOAH])

    page = web.get(f"/channels/{channel.pk}/").content.decode()

    ticked = re.findall(r'name="setting_recipients" value="([^"]*)" checked', page)
    assert ticked == [NOAH]


class TroubledMailServer(BaseEmailBackend):
    """A mail server that refuses some addresses and drops the connection at
    others, keeping what it accepted."""

    refuses: set[str] = set()
    drops_at: set[str] = set()
    accepted: list[str] = []
    # Each e-mail it was given, accepted or not: (address, Message-ID).
    given: list[tuple[str, str]] = []

    def send_messages(self, email_messages) -> int:
        for message in email_messages:
            [to] = message.to
            self.given.append((to, message.message()["Message-ID"]))
            if to in self.refuses:
                raise smtplib.SMTPRecipientsRefused({to: (550, b"No such user")})
            if to in self.drops_at:
                raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
            self.accepted.append(to)
        return len(email_messages)


@pytest.fixture
def troubled(settings):
    settings.MAILERS = {
        "default": {"BACKEND": "tests.test_team_email.TroubledMailServer"}
    }
    TroubledMailServer.refuses, TroubledMailServer.drops_at = set(), set()
    TroubledMailServer.accepted, TroubledMailServer.given = [], []
    return TroubledMailServer


@pytest.fixture
def ines(team, django_user_model):
    user = django_user_model.objects.create_user("ines", INES)
    Membership.objects.create(team=team, user=user)
    return user


def test_an_address_the_mail_server_refuses_does_not_stop_the_others(
    team, owner, noah, ines, troubled
):
    channel = team_mail(team, recipients=[MIA, NOAH, "ines@acme.test"])
    troubled.refuses = {NOAH}

    delivery = channel_events.send_test(channel)

    assert troubled.accepted == ["ines@acme.test", MIA]
    assert delivery.status == Delivery.Status.DELIVERED
    attempt = delivery.attempt_log.get()
    assert attempt.response_body == (
        f"Sent to ines@acme.test, {MIA}. The mail server refused {NOAH}."
    )


def test_a_server_that_fails_before_anyone_got_theirs_is_tried_again(
    team, owner, noah, troubled
):
    channel = team_mail(team)
    troubled.drops_at = {MIA}

    delivery = channel_events.send_test(channel)

    assert troubled.accepted == []
    assert delivery.status == Delivery.Status.PENDING
    assert delivery.next_attempt_at is not None
    assert delivery.last_error.startswith("Could not send:")


def retry_now(delivery: Delivery) -> Delivery:
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    return drain.deliver(delivery.pk)


def test_a_server_that_fails_after_someone_got_theirs_is_tried_again_for_the_others(
    team, owner, noah, ines, troubled
):
    channel = team_mail(team, recipients=[MIA, NOAH, INES])
    troubled.drops_at = {MIA}

    delivery = channel_events.send_test(channel)

    assert troubled.accepted == [INES]
    assert delivery.status == Delivery.Status.PENDING
    assert delivery.next_attempt_at is not None
    assert delivery.last_error == (
        f"Sent to {INES}, then stopped: Could not send: Connection unexpectedly "
        f"closed. Left for the next attempt: {MIA}, {NOAH}."
    )

    troubled.drops_at = set()
    retried = retry_now(delivery)

    assert troubled.accepted == [INES, MIA, NOAH]
    assert retried.status == Delivery.Status.DELIVERED
    assert retried.attempt_log.last().response_body == f"Sent to {MIA}, {NOAH}."


def test_an_e_mail_sent_again_by_a_retry_keeps_its_message_id(
    team, owner, noah, troubled
):
    channel = team_mail(team)
    troubled.drops_at = {NOAH}
    delivery = channel_events.send_test(channel)
    troubled.drops_at = set()

    retry_now(delivery)

    # Noah's e-mail was tried twice, Mia's once: one message to mail clients
    # that drop duplicates, each address its own.
    [(_, mias), (_, first), (_, again)] = troubled.given
    assert [to for to, _ in troubled.given] == [MIA, NOAH, NOAH]
    assert first == again
    assert mias != first
    assert first.startswith(f"<{delivery.webhook_id}.")


def test_a_retry_that_ends_with_a_refused_address_is_delivered_as_a_first_try_is(
    team, owner, noah, troubled
):
    channel = team_mail(team)
    troubled.drops_at = {NOAH}
    delivery = channel_events.send_test(channel)
    troubled.drops_at, troubled.refuses = set(), {NOAH}

    retried = retry_now(delivery)

    assert troubled.accepted == [MIA]
    assert retried.status == Delivery.Status.DELIVERED
    assert retried.attempt_log.last().response_body == (
        f"The mail server refused {NOAH}."
    )


def test_a_retry_with_everyone_else_gone_from_the_team_is_cancelled_saying_so(
    team, owner, noah, troubled
):
    channel = team_mail(team)
    troubled.drops_at = {NOAH}
    delivery = channel_events.send_test(channel)
    Membership.objects.get(team=team, user=noah).remove()

    retried = retry_now(delivery)

    assert troubled.accepted == [MIA]
    assert retried.status == Delivery.Status.CANCELLED
    assert retried.last_error == (
        "Not sent to the rest: none of them is still a member of the team with "
        "an e-mail address."
    )


def test_members_who_share_an_address_get_one_e_mail(
    team, owner, django_user_model, mailoutbox
):
    shared = django_user_model.objects.create_user("mia2", MIA.upper())
    Membership.objects.create(team=team, user=shared)
    channel = team_mail(team, recipients=[MIA])

    channel_events.send_test(channel)

    assert channel.settings == {"recipients": sorted([owner.pk, shared.pk])}
    assert [mail.to for mail in mailoutbox] == [[MIA]]


class HangingMailServer(TroubledMailServer):
    """A mail server that stops answering at some addresses until released,
    then takes the mail after all."""

    hangs_at: set[str] = set()
    released = threading.Event()
    closed = threading.Event()

    def send_messages(self, email_messages) -> int:
        for message in email_messages:
            if message.to[0] in self.hangs_at:
                self.released.wait(5)
        return super().send_messages(email_messages)

    def close(self) -> None:
        type(self).closed.set()


@pytest.fixture
def hanging(troubled, settings):
    settings.MAILERS = {
        "default": {"BACKEND": "tests.test_team_email.HangingMailServer"}
    }
    HangingMailServer.hangs_at = set()
    HangingMailServer.released = threading.Event()
    HangingMailServer.closed = threading.Event()
    yield HangingMailServer
    HangingMailServer.released.set()


def test_the_e_mail_in_flight_when_the_mail_server_timed_out_goes_again_and_no_other(
    team, owner, noah, ines, hanging, monkeypatch
):
    # The same rule as for a worker killed mid-send: at least once for the
    # one e-mail nobody knows the fate of; a duplicate beats a lost alert.
    monkeypatch.setattr(team_email, "SEND_TIMEOUT_SECONDS", 2)
    channel = team_mail(team, recipients=[MIA, NOAH, INES])
    hanging.hangs_at = {MIA}

    delivery = channel_events.send_test(channel)

    assert delivery.status == Delivery.Status.PENDING
    assert delivery.done_with == [ines.pk]
    assert delivery.last_error == (
        f"Sent to {INES}, then stopped: the mail server did not answer within 2 "
        f"seconds while sending to {MIA}; that e-mail may have arrived, and goes "
        f"again so that it is not lost. Left for the next attempt: {MIA}, {NOAH}."
    )
    # The send that ran late ends, and starts nobody else's.
    hanging.released.set()
    assert hanging.closed.wait(5)
    assert hanging.accepted == [INES, MIA]

    hanging.hangs_at = set()
    retried = retry_now(delivery)

    assert hanging.accepted == [INES, MIA, MIA, NOAH]
    assert retried.status == Delivery.Status.DELIVERED
    assert retried.attempt_log.last().response_body == f"Sent to {MIA}, {NOAH}."


def test_a_real_mail_server_that_took_an_e_mail_and_never_answered_gets_it_again(
    team, owner, noah, ines, settings, monkeypatch
):
    server = MailServer()
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": server.port, "timeout": 5},
        }
    }
    monkeypatch.setattr(team_email, "SEND_TIMEOUT_SECONDS", 1)
    channel = team_mail(team, recipients=[MIA, NOAH, INES])
    # Ines's is answered; Mia's is taken and never answered.
    server.answers = 1
    try:
        delivery = channel_events.send_test(channel)

        assert server.silent.is_set()
        assert delivery.status == Delivery.Status.PENDING
        assert delivery.done_with == [ines.pk]

        server.answers = None
        retried = retry_now(delivery)

        assert retried.status == Delivery.Status.DELIVERED
    finally:
        server.close()
    # Mia's twice (the server did take it), Noah's once, Ines's once.
    assert server.taken == [INES, MIA, MIA, NOAH]


def test_an_e_mail_the_mail_server_never_answered_is_not_lost_when_it_never_arrived(
    team, owner, noah, hanging, monkeypatch
):
    monkeypatch.setattr(team_email, "SEND_TIMEOUT_SECONDS", 1)
    channel = team_mail(team)
    hanging.hangs_at = {MIA}
    # The connection drops after the hang: the e-mail never arrived.
    hanging.drops_at = {MIA}

    delivery = channel_events.send_test(channel)
    hanging.released.set()
    assert hanging.closed.wait(5)
    assert hanging.accepted == []
    assert delivery.done_with == []

    hanging.hangs_at, hanging.drops_at = set(), set()
    retried = retry_now(delivery)

    assert hanging.accepted == [MIA, NOAH]
    assert retried.status == Delivery.Status.DELIVERED


def test_a_long_list_goes_out_over_several_attempts_each_person_once(
    team, owner, noah, ines, troubled, monkeypatch
):
    # No time to start a second e-mail within one attempt.
    monkeypatch.setattr(team_email, "STARTS_WITHIN_SECONDS", 0)
    channel = team_mail(team, recipients=[MIA, NOAH, INES])

    delivery = channel_events.send_test(channel)
    assert troubled.accepted == [INES]
    assert delivery.status == Delivery.Status.PENDING
    assert delivery.last_error == (
        f"Sent to {INES}, then stopped: one attempt starts e-mails for 0 seconds "
        f"at most. Left for the next attempt: {MIA}, {NOAH}."
    )
    delivery = retry_now(delivery)
    assert troubled.accepted == [INES, MIA]
    delivery = retry_now(delivery)

    assert troubled.accepted == [INES, MIA, NOAH]
    assert delivery.status == Delivery.Status.DELIVERED
    assert delivery.attempts == 3


class WorkerKilled(BaseException):
    """A worker killed in the middle of a send (SIGKILL, out of memory, a
    deploy): nothing after it runs, so nothing records the attempt."""


class DyingMailServer(TroubledMailServer):
    """Takes `lives` e-mails, then the worker dies while sending the next one:
    before the mail server took it, or (`takes_the_last`) just after."""

    lives = 0
    takes_the_last = False

    def send_messages(self, email_messages) -> int:
        if len(self.accepted) < self.lives:
            return super().send_messages(email_messages)
        if self.takes_the_last:
            super().send_messages(email_messages)
        raise WorkerKilled


@pytest.fixture
def dying(troubled, settings):
    settings.MAILERS = {"default": {"BACKEND": "tests.test_team_email.DyingMailServer"}}
    DyingMailServer.lives, DyingMailServer.takes_the_last = 0, False
    return DyingMailServer


@pytest.fixture
def zoe(team, django_user_model):
    user = django_user_model.objects.create_user("zoe", ZOE)
    Membership.objects.create(team=team, user=user)
    return user


def killed_in_the_middle(channel: Channel, monkeypatch) -> Delivery:
    """Send the test message on a worker that dies during the send: the
    attempt is never recorded and the row stays claimed, as a killed worker
    leaves it."""

    def dead(*args, **kwargs):
        raise WorkerKilled

    with monkeypatch.context() as patched:
        patched.setattr(drain, "record_many", dead)
        with pytest.raises(WorkerKilled):
            channel_events.send_test(channel)
    return Delivery.objects.get(channel=channel)


def swept_and_retried(delivery: Delivery, queued, time_machine) -> Delivery:
    """The sweeper frees the dead worker's claim after its lease, and the
    retry runs."""
    time_machine.shift(drain.CLAIM_LEASE + timedelta(seconds=1))
    assert sweep.sweep() == 1
    assert queued == [delivery.pk]
    queued.run()
    delivery.refresh_from_db()
    return delivery


def test_a_worker_killed_mid_send_leaves_a_retry_that_mails_only_the_others(
    team, owner, noah, ines, zoe, dying, queued, monkeypatch, time_machine
):
    time_machine.move_to(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=False)
    channel = team_mail(team, recipients=[MIA, NOAH, INES, ZOE])
    dying.lives = 2

    delivery = killed_in_the_middle(channel, monkeypatch)

    assert dying.accepted == [INES, MIA]
    assert delivery.status == Delivery.Status.SENDING
    # Whom it is done with was written as each e-mail went.
    assert delivery.done_with == sorted([ines.pk, owner.pk])

    dying.lives = 100
    retried = swept_and_retried(delivery, queued, time_machine)

    assert dying.accepted == [INES, MIA, NOAH, ZOE]
    assert retried.status == Delivery.Status.DELIVERED
    assert retried.attempts == 2
    assert retried.attempt_log.last().response_body == f"Sent to {NOAH}, {ZOE}."


def test_the_e_mail_in_flight_when_the_worker_died_may_go_twice_and_no_other(
    team, owner, noah, ines, zoe, dying, queued, monkeypatch, time_machine
):
    time_machine.move_to(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=False)
    channel = team_mail(team, recipients=[MIA, NOAH, INES, ZOE])
    # The mail server took Noah's e-mail, and the worker died before it
    # could write that down: at least once, for that one e-mail.
    dying.lives, dying.takes_the_last = 2, True

    delivery = killed_in_the_middle(channel, monkeypatch)
    assert dying.accepted == [INES, MIA, NOAH]

    dying.lives = 100
    retried = swept_and_retried(delivery, queued, time_machine)

    assert dying.accepted == [INES, MIA, NOAH, NOAH, ZOE]
    assert retried.status == Delivery.Status.DELIVERED


def test_a_team_e_mail_cannot_be_sent_outside_a_drain_that_records_who_got_it(
    team, owner, noah, mailoutbox
):
    # Only the drain's thread writes whom a row is done with; a send without
    # it would mail everyone and write nobody down, so every retry (the row
    # still pending) would mail them all again.
    channel = team_mail(team)
    delivery = channel_events.create(channel, None, None, messages.test(channel.name))

    with pytest.raises(RuntimeError, match="drain"):
        kinds.kind_for("team_email").send(delivery)

    assert mailoutbox == []
    delivery.refresh_from_db()
    assert delivery.done_with == []
    assert delivery.status == Delivery.Status.PENDING


# --- Whom it names, and how it reads ----------------------------------------------


def test_a_member_who_changes_their_address_gets_the_mail_at_the_new_one(
    web, team, noah, mailoutbox
):
    web.post(
        "/channels/new/",
        {"kind": "team_email", "name": "Pricing people",
         "setting_recipients": [NOAH], "events": ["meaningful"],
         "failing_after": "3", "digest": ""},
    )  # fmt: skip
    channel = Channel.objects.get(team=team)
    noah.email = "noah.berg@acme.test"
    noah.save()

    web.post(f"/channels/{channel.pk}/test/")

    assert [mail.to for mail in mailoutbox] == [["noah.berg@acme.test"]]
    page = html.unescape(web.get(f"/channels/{channel.pk}/").content.decode())
    assert "Noah Berg (noah.berg@acme.test)" in page
    ticked = re.findall(r'name="setting_recipients" value="([^"]*)" checked', page)
    assert ticked == ["noah.berg@acme.test"]


def test_the_api_names_the_chosen_members_by_their_current_address(
    api, team, owner, noah
):
    made = api.post(
        "/v2/channels",
        {"name": "Mail", "kind": "team_email",
         "settings": {"recipients": [MIA, NOAH]}},
        format="json",
    )  # fmt: skip
    assert made.status_code == 200, made.content
    noah.email = "Noah.Berg@acme.test"
    noah.save()

    shown = api.get(f"/v2/channels/{made.json()['data']['id']}").json()["data"]
    assert shown["settings"] == {"recipients": [MIA, "noah.berg@acme.test"]}
    # What it shows can be sent back as it is.
    again = api.patch(
        f"/v2/channels/{shown['id']}", {"settings": shown["settings"]}, format="json"
    )
    assert again.status_code == 200, again.content
    assert again.json()["data"]["settings"] == shown["settings"]


def test_the_channels_page_and_the_admin_name_who_gets_the_e_mails(
    web, admin_client, team, noah
):
    channel = team_mail(team)
    noah.email = "noah.berg@acme.test"
    noah.save()

    listed = html.unescape(web.get("/channels/").content.decode())
    shown = html.unescape(
        admin_client.get(
            reverse("admin:monitors_channel_change", args=[channel.pk])
        ).content.decode()
    )

    assert "E-mail to team members: Mia Lund and Noah Berg ·" in listed
    assert "noah.berg@acme.test" in shown


def test_the_monitor_page_says_the_channel_e_mails_whom(web, team, noah):
    monitor = make_monitor(team)
    team_mail(team, monitor)

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())

    assert (
        'Pricing people</a> <span class="muted">· E-mail to team members: '
        "Mia Lund and Noah Berg · tells meaningful changes" in page
    )


def test_the_e_mail_reads_as_an_e_mail_its_subject_not_repeated_in_the_body(
    team, owner, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, goal="Prices")
    team_mail(team, monitor, recipients=[MIA])

    meaningful_check(scenario, monitor)
    queued.run()

    [mail] = mailoutbox
    assert mail.subject.startswith("Pricing page: ")
    assert mail.body.startswith("- https://example.com/pricing")
    assert mail.subject not in mail.body
    shown = html.unescape(re.sub(r"<[^>]+>", "", html_of(mail).split("</head>")[1]))
    assert shown.lstrip().startswith("- https://example.com/pricing")
    assert mail.subject not in shown


# --- Channels saved before people were kept by account -------------------------------


BEFORE = [("monitors", "0014_target_type_from_registry")]
AFTER = [("monitors", "0015_team_email_recipients_by_account")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_chosen_people_by_account_and_back():
    old = migrate(BEFORE)
    User = old.get_model("auth", "User")
    Team = old.get_model("monitors", "Team")
    Membership = old.get_model("monitors", "Membership")
    Channel = old.get_model("monitors", "Channel")
    acme = Team.objects.create(name="Acme", slug="acme")
    mia = User.objects.create(username="mia", email="Mia@Acme.test")
    User.objects.create(username="gus", email="gus@acme.test")
    Membership.objects.create(team=acme, user=mia)
    channel = Channel.objects.create(
        team=acme, name="Mail", kind="team_email",
        settings={"recipients": ["gus@acme.test", MIA]},
    )  # fmt: skip
    hook = Channel.objects.create(
        team=acme, name="Hook", kind="webhook", settings={"url": "https://h.ex/in"}
    )

    new = migrate(AFTER)
    Channel = new.get_model("monitors", "Channel")
    # Gus had left the team: a send would have skipped him.
    assert Channel.objects.get(pk=channel.pk).settings == {"recipients": [mia.pk]}
    assert Channel.objects.get(pk=hook.pk).settings == {"url": "https://h.ex/in"}

    back = migrate(BEFORE).get_model("monitors", "Channel")
    assert back.objects.get(pk=channel.pk).settings == {"recipients": [MIA]}
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


# --- Leaving a channel from its e-mail ---------------------------------------------


def one_click_of(mail) -> str:
    header = mail.message()["List-Unsubscribe"]
    assert mail.message()["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert header.startswith("<http") and header.endswith(">")
    return header[1:-1]


def test_a_chosen_viewer_leaves_a_channel_in_one_click_and_gets_no_more_mail(
    team, owner, noah, scenario, queued, mailoutbox, client
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor)
    meaningful_check(scenario, monitor)
    queued.run()
    [to_noah] = [mail for mail in mailoutbox if mail.to == [NOAH]]
    url = one_click_of(to_noah)
    assert "Stop these e-mails to you: http" in to_noah.body

    # A mail scanner opening the link changes nothing.
    assert client.get(url).status_code == 302
    channel.refresh_from_db()
    assert noah.pk in channel.settings["recipients"]

    # The mail client's one-click POST, no cookie, no CSRF token.
    bare = type(client)(enforce_csrf_checks=True)
    answer = bare.post(url, {"List-Unsubscribe": "One-Click"})
    assert answer.status_code == 200
    channel.refresh_from_db()
    assert channel.settings["recipients"] == [owner.pk]

    mailoutbox.clear()
    meaningful_check(scenario, monitor)
    queued.run()
    assert [mail.to for mail in mailoutbox] == [[MIA]]


def test_the_unsubscribe_page_of_a_channel_e_mail_acts_only_on_its_button(
    team, owner, noah, scenario, queued, mailoutbox, client
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor)
    meaningful_check(scenario, monitor)
    queued.run()
    [to_noah] = [mail for mail in mailoutbox if mail.to == [NOAH]]
    page_url = re.search(r"Stop these e-mails to you: (\S+)", to_noah.body)[1]

    shown = client.get(page_url).content.decode()
    assert "Pricing people" in shown and "<button" in shown
    channel.refresh_from_db()
    assert noah.pk in channel.settings["recipients"]

    client.post(page_url)
    channel.refresh_from_db()
    assert channel.settings["recipients"] == [owner.pk]
    assert "no more e-mails" in client.get(page_url).content.decode()

    tampered = page_url.rstrip("/")[:-3] + "xyz/"
    assert client.get(tampered).status_code == 404


def test_leaving_a_channel_from_its_e_mail_is_in_the_teams_activity_log(
    team, owner, noah, scenario, queued, mailoutbox, client
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor)
    meaningful_check(scenario, monitor)
    queued.run()
    [to_noah] = [mail for mail in mailoutbox if mail.to == [NOAH]]
    url = one_click_of(to_noah)

    bare = type(client)(enforce_csrf_checks=True)
    bare.post(url, {"List-Unsubscribe": "One-Click"})
    bare.post(url, {"List-Unsubscribe": "One-Click"})  # again: nothing more

    [entry] = Activity.objects.filter(team=team, kind=Activity.Kind.CHANNEL_LEFT)
    assert entry.via == Activity.Via.EMAIL and entry.user == noah
    assert entry.actor_words == NOAH
    assert entry.details == {
        "channel": channel.pk,
        "name": "Pricing people",
        "email": NOAH,
        "nobody_left": False,
    }
    assert entry.sentence == (
        f"{NOAH} stopped the e-mails of channel “Pricing people”, "
        "with the link in an e-mail"
    )


def test_the_channels_page_says_nobody_gets_the_e_mails_after_the_last_one_left(
    web, team, owner, noah, scenario, queued, mailoutbox, client
):
    monitor = make_monitor(team, goal="Prices")
    channel = team_mail(team, monitor, recipients=(NOAH,))
    meaningful_check(scenario, monitor)
    queued.run()
    [to_noah] = mailoutbox
    page_url = re.search(r"Stop these e-mails to you: (\S+)", to_noah.body)[1]
    shown = html.unescape(web.get(reverse("channels")).content.decode())
    assert "Nobody gets this channel's e-mails now" not in shown

    client.post(page_url)

    entry = Activity.objects.get(kind=Activity.Kind.CHANNEL_LEFT)
    assert entry.details["nobody_left"] is True
    assert entry.what_words == (
        "Stopped the e-mails of channel “Pricing people”: nobody gets them now"
    )
    shown = html.unescape(web.get(reverse("channels")).content.decode())
    notice = re.search(rf'id="channel-{channel.pk}-nobody".*?</div>', shown, re.S)[0]
    assert "Nobody gets this channel's e-mails now" in notice
    assert f"The last to go was {NOAH}" in notice
    # When, said in full to screen readers too (on the team's clock, UTC).
    assert re.search(
        r'just now<span class="visually-hidden"> \(\w{3} \d\d \w{3} \d{4}, '
        r"\d\d:\d\d UTC\)</span></time>",
        notice,
    )
    assert reverse("channel-edit", args=[channel.pk]) in notice


def test_the_channels_page_says_nobody_gets_the_e_mails_when_everyone_left_the_team(
    web, team, owner, noah
):
    channel = team_mail(team, recipients=(NOAH,))
    Membership.objects.filter(user=noah).delete()

    shown = html.unescape(web.get(reverse("channels")).content.decode())
    notice = re.search(rf'id="channel-{channel.pk}-nobody".*?</div>', shown, re.S)[0]
    assert "Nobody gets this channel's e-mails now" in notice
    assert "None of the people chosen for it is still in the team" in notice


class DatabaseGone:
    """What the drain sees when PostgreSQL ends its session (a restart, a
    failover, pg_terminate_backend) as it writes whom a team e-mail is done
    with: tests/test_database_loss.py does it to a real worker."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args, **kwargs) -> bool:
        self.calls += 1
        raise OperationalError("server closed the connection unexpectedly")


def sends_of_a_drain() -> set[threading.Thread]:
    return {
        thread
        for thread in threading.enumerate()
        if thread.name == "drain" or thread.name.startswith("send")
    }


def test_a_database_drop_while_recording_who_got_a_team_e_mail_ends_the_send(
    team, owner, noah, ines, troubled, queued, monkeypatch, time_machine, caplog
):
    time_machine.move_to(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=True)
    channel = team_mail(team, recipients=[MIA, NOAH, INES])
    gone = DatabaseGone()
    before = sends_of_a_drain()

    with monkeypatch.context() as patched:
        patched.setattr(drain, "keep_done_with", gone)
        channel_events.send_test(channel)

    # The drain returned, and its send threads end now, not after the mail
    # server's time-out: nobody is waiting on an answer that never comes.
    for thread in sends_of_a_drain() - before:
        thread.join(5)
        assert not thread.is_alive(), thread.name
    # With nothing written down, no other e-mail starts.
    assert gone.calls == 1
    assert troubled.accepted == [INES]
    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.SENDING
    assert delivery.done_with == []
    assert not delivery.attempt_log.exists()
    [line] = [r for r in caplog.records if r.name == drain.__name__]
    assert line.levelname == "WARNING"
    assert line.exc_info is None
    assert "lost its database connection" in line.getMessage()

    # The claim expires and the retry mails everyone: Ines's may go twice
    # (at least once), nobody is left out.
    retried = swept_and_retried(delivery, queued, time_machine)

    assert sorted(troubled.accepted) == sorted([INES, INES, MIA, NOAH])
    assert retried.status == Delivery.Status.DELIVERED
    assert retried.attempts == 2
