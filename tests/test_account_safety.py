"""Password resets are throttled and say nothing about who has an account;
dashboard sessions end when idle and after an absolute limit; changing a
password signs out every other session of that person."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.test import Client
from django.urls import reverse

from config.celery import app as celery_app
from teams import emails as team_emails
from teams.tasks import send_password_reset_task
from tests.resets import worker_sends

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple"
NOW = datetime(2026, 5, 16, 12, 0, tzinfo=UTC)


@pytest.fixture
def olive(django_user_model):
    return django_user_model.objects.create_user("olive", "olive@example.com", PASSWORD)


# A client's own address: a private one is taken for a proxy's, and nobody is
# limited by it (config.signin.PROXY_NETWORKS).
PUBLIC = "203.0.113.7"


def ask_reset(client, email: str = "olive@example.com", **headers: str):
    return client.post(reverse("password_reset"), {"email": email}, **headers)


# --- Password reset ----------------------------------------------------------------


def test_a_reset_for_an_unknown_address_answers_like_a_known_one(
    client, olive, queued_resets
):
    known = ask_reset(client, "olive@example.com")
    unknown = ask_reset(client, "nobody@example.com")

    assert (known.status_code, known["Location"]) == (
        unknown.status_code,
        unknown["Location"],
    )
    # Both handed to a worker alike: the request does the same either way.
    assert queued_resets == ["olive@example.com", "nobody@example.com"]
    assert [m.to for m in worker_sends(queued_resets)] == [["olive@example.com"]]


def test_the_reset_mail_leaves_from_a_worker_not_from_the_request(
    client, olive, queued_resets, settings
):
    """Sent by the request, the mail server's time (often seconds) was the
    difference between an address with an account and one without."""
    settings.PUBLIC_BASE_URL = "https://pagewatch.example.org"
    ask_reset(client, "olive@example.com")
    assert mail.outbox == []

    [message] = worker_sends(queued_resets)
    assert message.to == ["olive@example.com"]
    assert message.subject == "Choose a new Pagewatch password"
    assert "\nhttps://pagewatch.example.org/accounts/reset/" in message.body
    assert "testserver" not in message.body


def test_workers_know_the_reset_task_by_the_name_the_web_queues_it_under(settings):
    task = celery_app.tasks[team_emails.PASSWORD_RESET_TASK]

    assert task.name == send_password_reset_task.name
    assert settings.CELERY_TASK_ROUTES[task.name] == {
        "queue": settings.NOTIFICATIONS_QUEUE
    }


def test_an_account_gets_a_few_reset_emails_an_hour_however_often_it_is_asked(
    client, olive, settings, queued_resets
):
    answers = set()
    with time_machine.travel(NOW, tick=False):
        for number in range(settings.AXES_FAILURE_LIMIT - 1):
            response = ask_reset(client, REMOTE_ADDR=f"10.0.0.{number}")
            answers.add((response.status_code, response["Location"]))

    assert len(worker_sends(queued_resets)) == settings.PASSWORD_RESET_EMAILS_PER_HOUR
    assert len(answers) == 1  # the capped requests look exactly like the others


def test_the_account_cap_lifts_after_an_hour(client, olive, settings, queued_resets):
    cap = settings.PASSWORD_RESET_EMAILS_PER_HOUR
    with time_machine.travel(NOW, tick=False):
        for _ in range(cap + 1):
            ask_reset(client)
    with time_machine.travel(NOW + timedelta(minutes=61), tick=False):
        ask_reset(client)

    assert len(worker_sends(queued_resets)) == cap + 1


def test_the_cap_counts_an_address_in_any_case(client, olive, settings, queued_resets):
    with time_machine.travel(NOW, tick=False):
        for email in ("olive@example.com", "OLIVE@example.com", " Olive@Example.com"):
            for _ in range(settings.PASSWORD_RESET_EMAILS_PER_HOUR):
                ask_reset(client, email)

    assert len(worker_sends(queued_resets)) == settings.PASSWORD_RESET_EMAILS_PER_HOUR


def test_one_address_asking_too_often_is_refused_for_the_cool_off(
    client, olive, settings, queued_resets
):
    limit = settings.AXES_FAILURE_LIMIT
    with time_machine.travel(NOW, tick=False):
        codes = [
            ask_reset(client, f"u{n}@example.com", REMOTE_ADDR=PUBLIC).status_code
            for n in range(limit)
        ]
        refused = ask_reset(client, REMOTE_ADDR=PUBLIC)
    with time_machine.travel(NOW + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)):
        later = ask_reset(client, REMOTE_ADDR=PUBLIC)

    assert set(codes) == {302}
    assert refused.status_code == 429
    assert "Too many requests for a new password" in refused.content.decode()
    assert later.status_code == 302
    assert [m.to for m in worker_sends(queued_resets)] == [["olive@example.com"]]


def test_another_address_is_not_held_back_by_the_first(
    client, olive, settings, queued_resets
):
    with time_machine.travel(NOW, tick=False):
        for n in range(settings.AXES_FAILURE_LIMIT + 1):
            ask_reset(client, f"u{n}@example.com", REMOTE_ADDR="198.51.100.1")
        response = ask_reset(client, REMOTE_ADDR="198.51.100.2")

    assert response.status_code == 302
    assert len(worker_sends(queued_resets)) == 1


def test_behind_an_untrusted_proxy_nobody_can_hold_back_everyones_resets(
    client, olive, settings, queued_resets
):
    with time_machine.travel(NOW, tick=False):
        for n in range(settings.AXES_FAILURE_LIMIT + 1):
            ask_reset(client, f"u{n}@example.com", REMOTE_ADDR="10.0.0.2")
        response = ask_reset(client, REMOTE_ADDR="10.0.0.2")

    assert response.status_code == 302
    assert [m.to for m in worker_sends(queued_resets)] == [["olive@example.com"]]


# --- Sessions ----------------------------------------------------------------------


def signed_in(olive) -> Client:
    client = Client()
    client.post(reverse("login"), {"username": "olive", "password": PASSWORD})
    assert client.session.get("_auth_user_id") == str(olive.pk)
    return client


def is_signed_in(client: Client) -> bool:
    response = client.get(reverse("password_change"))
    return response.status_code == 200


def test_a_session_ends_after_the_idle_limit(olive, settings):
    idle = timedelta(seconds=settings.SESSION_IDLE_SECONDS)
    with time_machine.travel(NOW, tick=False):
        client = signed_in(olive)
    with time_machine.travel(NOW + idle - timedelta(minutes=5), tick=False):
        assert is_signed_in(client)
    # Measured from the last request, not from signing in.
    with time_machine.travel(NOW + 2 * idle - timedelta(minutes=10), tick=False):
        assert is_signed_in(client)
    with time_machine.travel(NOW + 3 * idle, tick=False):
        assert not is_signed_in(client)


def test_a_session_in_use_ends_at_the_absolute_limit(olive, settings):
    absolute = timedelta(seconds=settings.SESSION_ABSOLUTE_SECONDS)
    step = timedelta(seconds=settings.SESSION_IDLE_SECONDS) / 2
    with time_machine.travel(NOW, tick=False):
        client = signed_in(olive)
    moment = NOW
    while moment + step < NOW + absolute:
        moment += step
        with time_machine.travel(moment, tick=False):
            assert is_signed_in(client)
    with time_machine.travel(NOW + absolute + timedelta(minutes=1), tick=False):
        assert not is_signed_in(client)


def test_the_default_limits_are_twelve_hours_idle_and_seven_days(settings):
    assert settings.SESSION_IDLE_SECONDS == 12 * 3600
    assert settings.SESSION_ABSOLUTE_SECONDS == 7 * 86400
    assert settings.SESSION_COOKIE_AGE == settings.SESSION_IDLE_SECONDS


def test_changing_the_password_signs_out_every_other_session(olive):
    laptop, phone = signed_in(olive), signed_in(olive)

    response = laptop.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a-new-longer-passphrase-42",
            "new_password2": "a-new-longer-passphrase-42",
        },
    )

    assert response.status_code == 302
    assert is_signed_in(laptop)
    assert not is_signed_in(phone)


def test_a_reset_password_signs_out_every_session(client, olive, queued_resets):
    phone = signed_in(olive)
    ask_reset(client)
    [message] = worker_sends(queued_resets)
    link = next(
        line for line in message.body.splitlines() if "/accounts/reset/" in line
    )
    path = link[link.index("/accounts/reset/") :].strip()
    form = client.get(path, follow=True)
    client.post(
        form.redirect_chain[-1][0],
        {
            "new_password1": "another-passphrase-77",
            "new_password2": "another-passphrase-77",
        },
    )

    assert not is_signed_in(phone)


# --- The activity log hears of new passwords ------------------------------------


@pytest.fixture
def teams_of_olive(olive):
    from monitors.models import Membership, Team

    teams = [
        Team.objects.create(name="Acme", slug="acme"),
        Team.objects.create(name="Globex", slug="globex"),
    ]
    for team in teams:
        Membership.objects.create(team=team, user=olive, role=Membership.Role.EDITOR)
    return teams


def password_entries(team):
    from teams.models import Activity

    return list(Activity.objects.filter(team=team, kind="account.password_changed"))


def test_changing_ones_password_is_in_each_of_their_teams_activity_log(
    olive, teams_of_olive
):
    laptop = signed_in(olive)

    laptop.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a-new-longer-passphrase-42",
            "new_password2": "a-new-longer-passphrase-42",
        },
    )

    for team in teams_of_olive:
        [entry] = password_entries(team)
        assert entry.user == olive and entry.via == "dashboard"
        assert entry.sentence == "Changed their password by olive"
        assert entry.address == "127.0.0.1"


def test_a_refused_password_change_is_not_logged(olive, teams_of_olive):
    signed_in(olive).post(
        reverse("password_change"),
        {"old_password": "wrong", "new_password1": "x", "new_password2": "y"},
    )

    assert password_entries(teams_of_olive[0]) == []


def test_a_password_chosen_with_a_reset_link_is_in_the_activity_log(
    client, olive, teams_of_olive, queued_resets
):
    ask_reset(client)
    [message] = worker_sends(queued_resets)
    link = next(
        line for line in message.body.splitlines() if "/accounts/reset/" in line
    )
    form = client.get(link[link.index("/accounts/reset/") :].strip(), follow=True)
    client.post(
        form.redirect_chain[-1][0],
        {
            "new_password1": "another-passphrase-77",
            "new_password2": "another-passphrase-77",
        },
    )

    for team in teams_of_olive:
        [entry] = password_entries(team)
        assert entry.user == olive
        assert entry.what_words == (
            "Chose a new password with the reset link e-mailed to them"
        )


def test_an_administrator_setting_someones_password_is_in_their_teams_log(
    olive, teams_of_olive, admin_client
):
    response = admin_client.post(
        reverse("admin:auth_user_password_change", args=[olive.pk]),
        {
            "password1": "set-by-the-admin-4242",
            "password2": "set-by-the-admin-4242",
        },
    )

    assert response.status_code == 302
    olive.refresh_from_db()
    assert olive.check_password("set-by-the-admin-4242")
    for team in teams_of_olive:
        [entry] = password_entries(team)
        assert entry.via == "admin" and entry.user.username == "admin"
        assert entry.what_words == "Set a new password for olive"


# --- The reset link ------------------------------------------------------------


def reset_link(client, queued_resets) -> str:
    ask_reset(client)
    [message] = worker_sends(queued_resets)
    line = next(
        line for line in message.body.splitlines() if "/accounts/reset/" in line
    )
    return line[line.index("/accounts/reset/") :].strip()


def choose(client, link: str, password: str = "another-passphrase-77"):
    form = client.get(link, follow=True)
    return client.post(
        form.redirect_chain[-1][0] if form.redirect_chain else link,
        {"new_password1": password, "new_password2": password},
    )


def test_a_reset_link_works_for_an_hour_as_its_e_mail_says(
    client, olive, queued_resets
):
    with time_machine.travel(NOW, tick=False):
        link = reset_link(client, queued_resets)
    assert "works for one hour" in mail.outbox[0].body

    with time_machine.travel(NOW + timedelta(minutes=61), tick=False):
        late = client.get(link, follow=True)
    assert "This link does not work any more" in late.content.decode()
    olive.refresh_from_db()
    assert olive.check_password(PASSWORD)


def test_a_reset_link_within_the_hour_works_once(client, olive, queued_resets):
    with time_machine.travel(NOW, tick=False):
        link = reset_link(client, queued_resets)
    with time_machine.travel(NOW + timedelta(minutes=59), tick=False):
        done = choose(client, link)
        again = choose(Client(), link, "a-third-passphrase-99")

    assert done.status_code == 302
    olive.refresh_from_db()
    assert olive.check_password("another-passphrase-77")
    assert again.status_code == 200
    assert "This link does not work any more" in again.content.decode()


def test_a_reset_asked_for_while_the_broker_is_away_is_one_log_line(
    monkeypatch, caplog
):
    from kombu.exceptions import OperationalError as BrokerError

    from teams import emails

    def away(*args, **kwargs):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(emails.current_app, "send_task", away)

    with caplog.at_level("WARNING", logger="teams.emails"):
        emails.queue_password_reset("someone@example.com")

    [line] = [r for r in caplog.records if "password-reset" in r.message]
    assert line.exc_info is None
