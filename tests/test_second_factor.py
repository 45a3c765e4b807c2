"""The second factor: an authenticator app (TOTP) with recovery codes,
optional per person, required per team by an owner, asked for by the
dashboard and the admin after a password sign-in."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from types import SimpleNamespace

import pytest
import time_machine
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from monitors.models import Membership
from teams import second_factor
from tests.test_dashboard_views import PASSWORD

pytestmark = pytest.mark.django_db


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def code_for(device: TOTPDevice) -> str:
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    return f"{totp.token():0{device.digits}d}"


@pytest.fixture
def ana(team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def sign_in(client, username="ana", path="/accounts/login/"):
    return client.post(path, {"username": username, "password": PASSWORD})


def turn_on(client) -> tuple[TOTPDevice, list[str]]:
    page = text_of(client.get(reverse("two-factor-setup")))
    assert "Scan this code" in page and 'src="data:image/svg+xml' in page
    device = TOTPDevice.objects.get(confirmed=False)
    response = client.post(reverse("two-factor-setup"), {"code": code_for(device)})
    assert response["Cache-Control"] == "no-store"
    codes = re.findall(r"<li><code>([a-z0-9]+)</code></li>", response.content.decode())
    device.refresh_from_db()
    assert device.confirmed and len(codes) == 10
    return device, codes


def test_turning_it_on_shows_recovery_codes_once_and_it_is_asked_at_sign_in(
    client, ana, settings
):
    sign_in(client)
    device, codes = turn_on(client)
    client.post(reverse("logout"))

    sign_in(client)
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/two-factor/verify/?next=/"
    page = text_of(client.get(response["Location"]))
    assert "Open your authenticator app and enter the six digits" in page
    wrong = client.post(reverse("two-factor-verify"), {"code": "12345", "next": "/"})
    assert wrong.status_code == 400
    device.refresh_from_db()
    device.throttling_failure_count = 0  # the wrong code's wait, over
    device.throttling_failure_timestamp = None
    device.save()
    # A code works once: the next one comes with the app's next 30 seconds.
    with time_machine.travel(timezone.now() + timedelta(seconds=60)):
        right = client.post(
            reverse("two-factor-verify"), {"code": code_for(device), "next": "/"}
        )
    assert right["Location"] == "/"
    assert client.get("/").status_code == 200


def test_a_wrong_code_leaves_it_off_and_says_so(client, ana):
    sign_in(client)
    client.get(reverse("two-factor-setup"))
    device = TOTPDevice.objects.get(confirmed=False)
    wrong = "000000" if code_for(device) != "000000" else "111111"
    response = client.post(reverse("two-factor-setup"), {"code": wrong})
    assert response.status_code == 400
    assert "That code did not work." in text_of(response)
    device.refresh_from_db()
    assert not device.confirmed
    assert client.get("/").status_code == 200  # nothing asked of her yet


def test_a_recovery_code_works_once(client, ana):
    sign_in(client)
    _, codes = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)
    client.post(reverse("two-factor-verify"), {"code": codes[0]})
    assert client.get("/").status_code == 200
    assert not StaticToken.objects.filter(token=codes[0]).exists()
    client.post(reverse("logout"))
    sign_in(client)
    again = client.post(reverse("two-factor-verify"), {"code": codes[0]})
    assert again.status_code == 400
    assert client.get("/").status_code == 302


def test_the_admin_sign_in_asks_for_it_too(client, django_user_model):
    root = django_user_model.objects.create_superuser("root", "r@acme.test", PASSWORD)
    device = second_factor.start_setup(root)
    second_factor.confirm(device, code_for(device))
    response = sign_in(client, "root", path="/admin/login/?next=/admin/")
    assert response.status_code == 302
    admin = client.get("/admin/")
    assert admin.status_code == 302
    assert admin["Location"].startswith("/accounts/two-factor/verify/")


def test_an_owner_can_require_it_for_the_whole_team(
    client, ana, team, django_user_model
):
    bob = django_user_model.objects.create_user("bob", "bob@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=bob, role=Membership.Role.VIEWER)
    sign_in(client)
    client.post(reverse("team-second-factor"), {"required": "on"})
    team.refresh_from_db()
    assert team.require_second_factor

    # Ana, who has none yet, is sent to set one up before anything else.
    assert client.get("/")["Location"] == "/accounts/two-factor/setup/?next=/"
    turn_on(client)
    off = client.post(reverse("two-factor-off"), follow=True)
    assert "Acme requires a second factor: it stays on." in text_of(off)
    assert TOTPDevice.objects.filter(user=ana, confirmed=True).exists()

    other = client.__class__()
    sign_in(other, "bob")
    assert other.get("/")["Location"] == "/accounts/two-factor/setup/?next=/"
    # A viewer cannot lift the rule.
    assert other.post(reverse("team-second-factor")).status_code == 302  # to setup


def test_people_may_turn_it_off_when_no_team_requires_it(client, ana):
    sign_in(client)
    turn_on(client)
    client.post(reverse("two-factor-off"))
    assert not TOTPDevice.objects.filter(user=ana).exists()
    assert client.get("/").status_code == 200


def test_single_sign_on_sessions_are_left_to_the_identity_provider(ana):
    device = second_factor.start_setup(ana)
    second_factor.confirm(device, code_for(device))
    user = SimpleNamespace(is_authenticated=True, is_verified=lambda: False, pk=ana.pk)

    def request(backend: str) -> SimpleNamespace:
        return SimpleNamespace(
            user=user, path="/", path_info="/", session={BACKEND_SESSION_KEY: backend}
        )

    wanted = second_factor.SecondFactorMiddleware.wanted
    assert wanted(request("teams.sso.Backend")) is None
    assert wanted(request("axes.backends.AxesStandaloneBackend")) == (
        "/accounts/two-factor/verify/"
    )


def test_a_password_alone_cannot_turn_the_second_factor_off(client, ana):
    sign_in(client)
    device, _ = turn_on(client)
    client.post(reverse("logout"))

    sign_in(client)  # the password, without the code
    response = client.post(reverse("two-factor-off"))

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/two-factor/verify/")
    assert TOTPDevice.objects.filter(pk=device.pk, confirmed=True).exists()
    assert client.get("/")["Location"] == "/accounts/two-factor/verify/?next=/"


def test_a_password_alone_cannot_replace_the_authenticator_with_a_new_one(
    client, ana, team
):
    team.require_second_factor = True
    team.save(update_fields=["require_second_factor"])
    sign_in(client)
    device, _ = turn_on(client)
    client.post(reverse("logout"))

    sign_in(client)  # the password, without the code
    page = client.get(reverse("two-factor-setup"))
    forged = client.post(reverse("two-factor-setup"), {"code": "123456"})

    assert page["Location"].startswith("/accounts/two-factor/verify/")
    assert forged["Location"].startswith("/accounts/two-factor/verify/")
    # No new authenticator was started, so none can be confirmed in its place.
    assert list(TOTPDevice.objects.filter(user=ana)) == [device]
    assert client.get("/")["Location"] == "/accounts/two-factor/verify/?next=/"


def test_a_team_that_requires_a_second_factor_still_lets_people_set_one_up(
    client, ana, team
):
    team.require_second_factor = True
    team.save(update_fields=["require_second_factor"])
    sign_in(client)

    assert client.get("/")["Location"] == "/accounts/two-factor/setup/?next=/"
    assert client.get(reverse("two-factor-off"))["Location"].startswith(
        "/accounts/two-factor/setup/"
    )
    turn_on(client)
    assert client.get("/").status_code == 200


def test_after_the_code_a_page_with_a_query_is_opened_with_its_whole_query(client, ana):
    sign_in(client)
    device, _ = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)

    response = client.get("/?q=price&status=paused")

    assert response["Location"] == (
        "/accounts/two-factor/verify/?next=/%3Fq%3Dprice%26status%3Dpaused"
    )
    page = client.get(response["Location"]).content.decode()
    assert 'value="/?q=price&amp;status=paused"' in page


def test_a_right_code_too_soon_after_a_wrong_one_is_told_to_wait_not_that_it_is_wrong(
    client, ana
):
    sign_in(client)
    _, codes = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)
    client.post(reverse("two-factor-verify"), {"code": "00000000"})

    too_soon = client.post(reverse("two-factor-verify"), {"code": codes[0]})

    page = text_of(too_soon)
    assert too_soon.status_code == 400
    assert "That code did not work." not in page
    assert re.search(r"Too many wrong codes: wait \d+ seconds?, then try again\.", page)
    assert StaticToken.objects.filter(token=codes[0]).exists()  # still usable


def test_a_recovery_code_right_after_a_mistyped_app_code_signs_in(client, ana):
    # Someone whose phone is gone may try an old app code first: that is a
    # wrong app code, and must not hold their recovery codes back.
    sign_in(client)
    _, codes = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)
    wrong = client.post(reverse("two-factor-verify"), {"code": "000000"})
    assert wrong.status_code == 400

    client.post(reverse("two-factor-verify"), {"code": codes[0]})

    assert client.get("/").status_code == 200
    assert not StaticToken.objects.filter(token=codes[0]).exists()


def header_of(response) -> str:
    page = response.content.decode()
    return page.split('<header class="site-header">', 1)[1].split("</header>", 1)[0]


def test_the_code_page_shows_only_the_product_name_and_cancel_sign_in(client, ana):
    sign_in(client)
    turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)  # the password, without the code yet

    header = header_of(client.get(reverse("two-factor-verify") + "?next=/"))

    assert "Pagewatch" in header and "Cancel sign-in" in header
    # Every menu link would only bounce back to this page before the code.
    assert "<a " not in header and "Monitors" not in header
    assert f'action="{reverse("logout")}"' in header
    cancelled = client.post(reverse("logout"))
    assert cancelled.status_code in (200, 302)
    assert client.get("/")["Location"].startswith("/accounts/login/")


def test_after_the_code_the_full_menu_is_back(client, ana):
    sign_in(client)
    _, codes = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)

    client.post(reverse("two-factor-verify"), {"code": codes[0], "next": "/"})
    header = header_of(client.get("/"))

    assert "Monitors" in header and "Cancel sign-in" not in header


def test_setting_it_up_because_the_team_requires_it_shows_the_minimal_header_too(
    client, ana, team
):
    sign_in(client)
    voluntary = header_of(client.get(reverse("two-factor-setup")))
    team.require_second_factor = True
    team.save(update_fields=["require_second_factor"])

    required = header_of(client.get(reverse("two-factor-setup")))

    assert "Monitors" in voluntary  # its menu works: nothing is asked of her yet
    assert "Cancel sign-in" in required and "<a " not in required


def test_turning_it_on_and_off_is_in_the_activity_log_of_each_team(
    client, ana, team, other_team
):
    from teams.models import Activity

    Membership.objects.create(team=other_team, user=ana, role=Membership.Role.VIEWER)
    sign_in(client)
    turn_on(client)
    client.post(reverse("two-factor-off"))

    for each in (team, other_team):
        entries = Activity.objects.filter(team=each, user=ana).exclude(
            kind=Activity.Kind.SIGNED_IN
        )
        assert [e.what_words for e in entries.order_by("id")] == [
            "Set up a second factor",
            "Turned off their second factor",
        ]


def test_signing_in_with_a_recovery_code_is_in_each_teams_log_with_how_many_are_left(
    client, ana, team, other_team
):
    from teams.models import Activity

    Membership.objects.create(team=other_team, user=ana, role=Membership.Role.VIEWER)
    sign_in(client)
    _, codes = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)
    client.post(
        reverse("two-factor-verify"),
        {"code": codes[3]},
        REMOTE_ADDR="203.0.113.9",
    )

    for each in (team, other_team):
        entries = Activity.objects.filter(team=each, kind="signin.recovery_code")
        assert [(e.user, e.what_words, e.address) for e in entries] == [
            (ana, "Signed in with a recovery code (9 left)", "203.0.113.9")
        ]


# ------------------------------------------------------------------ the session


def test_the_code_gives_the_session_a_new_key_and_the_old_one_signs_nobody_in(
    client, ana
):
    """A session key read while only the password was given (over a shoulder,
    from a shared machine's cookie jar) must not become a whole sign-in once
    the code is typed: the key changes, as it does at the password."""
    device = second_factor.start_setup(ana)
    second_factor.confirm(device, code_for(device))
    sign_in(client)
    half_key = client.cookies["sessionid"].value
    client.get(reverse("two-factor-verify"))
    half_csrf = client.cookies["csrftoken"].value

    with time_machine.travel(timezone.now() + timedelta(seconds=60)):
        right = client.post(reverse("two-factor-verify"), {"code": code_for(device)})

    assert right["Location"] == "/"
    assert client.cookies["sessionid"].value != half_key
    assert not SessionStore().exists(half_key)
    assert client.get("/").status_code == 200
    assert client.cookies["csrftoken"].value != half_csrf
    stale = Client()
    stale.cookies["sessionid"] = half_key
    assert stale.get("/")["Location"].startswith("/accounts/login/")


def test_setting_it_up_while_signing_in_gives_the_session_a_new_key(client, ana, team):
    team.require_second_factor = True
    team.save()
    sign_in(client)
    half_key = client.cookies["sessionid"].value

    turn_on(client)

    assert client.cookies["sessionid"].value != half_key
    assert client.get("/").status_code == 200
