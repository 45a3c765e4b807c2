"""Until e-mail settings are set, the default backend only writes e-mails to
the log and counts them as sent: the dashboard and the API say plainly that no
e-mail leaves this server, and which setting turns it on."""

from __future__ import annotations

import pytest
from django.urls import reverse

from monitors.models import Membership
from tests.notifying import make_monitor
from tests.resets import worker_sends

pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

MEMBER = "mia@acme.test"
SAID = "E-mail is not sent: this server writes every e-mail to its log instead."


@pytest.fixture
def member(team, django_user_model):
    user = django_user_model.objects.create_user("mia", MEMBER)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def mail_to_log(settings):
    settings.MAILERS = {
        "default": {"BACKEND": "config.mail.EmailBackend", "OPTIONS": {}}
    }


@pytest.fixture
def smtp(settings):
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {},
        }
    }


def email_on() -> dict:
    return {"enabled": True, "recipients": [], "includeDiffs": False}


def pages_of(client, monitor) -> list[str]:
    return [
        client.get(url).content.decode()
        for url in (
            monitor.get_absolute_url(),
            reverse("monitor-edit", args=[monitor.pk]),
            reverse("monitor-deliveries", args=[monitor.pk]),
            reverse("channels"),
        )
    ]


def test_the_dashboard_says_e_mail_is_not_sent_and_names_the_setting(
    team, member, client, mail_to_log
):
    client.force_login(member)
    monitor = make_monitor(team, email=email_on())
    for page in pages_of(client, monitor):
        assert SAID in page
        assert "For the administrator: set EMAIL_BACKEND" in page


def test_the_dashboard_says_nothing_of_it_when_e_mail_is_sent(
    team, member, client, smtp
):
    client.force_login(member)
    monitor = make_monitor(team, email=email_on())
    for page in pages_of(client, monitor):
        assert "E-mail is not sent" not in page


def test_the_api_says_a_checks_e_mails_were_not_sent_and_names_the_setting(
    team, member, api, scenario, queued, mail_to_log
):
    monitor = make_monitor(team, email=email_on())
    check = scenario.run(monitor, [("https://example.com/a", "new")])
    queued.run()
    shown = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}").json()
    email = shown["data"]["notificationStatus"]["email"]
    assert email["recipients"] == [MEMBER]
    assert email["notSent"].startswith(SAID)
    assert "EMAIL_BACKEND" in email["notSent"]


def test_the_api_has_no_such_word_when_e_mail_is_sent(
    team, member, api, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_on())
    check = scenario.run(monitor, [("https://example.com/a", "new")])
    queued.run()
    [mail] = mailoutbox
    shown = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}").json()
    assert "notSent" not in shown["data"]["notificationStatus"]["email"]


def test_an_invitation_on_a_server_that_sends_no_e_mail_gives_the_owner_the_link(
    team, member, client, mail_to_log
):
    """The log backend "sends" every e-mail, so the owner read "Invitation
    sent to sam@…" while nothing reached Sam: the link is theirs to pass on."""
    client.force_login(member)

    response = client.post(
        reverse("team-invite"), {"email": "sam@example.com", "role": "editor"},
        follow=True,
    )  # fmt: skip

    page = response.content.decode()
    assert "Invitation sent to" not in page
    assert "The invitation for sam@example.com is ready, but" in page
    assert "this server does not send e-mail" in page
    assert "Give them this link yourself: http://" in page
    assert "/invitations/" in page
    assert team.invitations.count() == 1


def test_an_invitation_on_a_server_that_sends_e_mail_says_it_was_sent(
    team, member, client, mailoutbox
):
    client.force_login(member)

    response = client.post(
        reverse("team-invite"), {"email": "sam@example.com", "role": "editor"},
        follow=True,
    )  # fmt: skip

    page = response.content.decode()
    assert "Invitation sent to sam@example.com." in page
    assert "Give them this link yourself" not in page
    assert [m.to for m in mailoutbox] == [["sam@example.com"]]


NO_RESET_LINK = (
    "This Pagewatch does not send e-mail yet, so no link can reach you: "
    "ask an administrator to set a new password for you."
)


def test_forgot_password_says_no_link_can_come_when_no_e_mail_is_sent(
    member, client, mail_to_log
):
    """The promise "Check your e-mail … a link is on its way" sent someone
    to wait for an e-mail that this server only writes to its log."""
    form = client.get(reverse("password_reset")).content.decode()
    done = client.post(reverse("password_reset"), {"email": MEMBER}, follow=True)

    assert NO_RESET_LINK in form
    assert NO_RESET_LINK in done.content.decode()
    assert "is on its way" not in done.content.decode()


def test_forgot_password_promises_the_link_when_e_mail_is_sent(
    member, client, mailoutbox, queued_resets
):
    member.set_password("a-long-enough-passphrase-7")  # a reset needs one
    member.save()
    form = client.get(reverse("password_reset")).content.decode()
    done = client.post(reverse("password_reset"), {"email": MEMBER}, follow=True)

    assert "does not send e-mail" not in form
    assert "a link to choose a new password is on its way" in done.content.decode()
    assert [m.to for m in worker_sends(queued_resets)] == [[MEMBER]]
