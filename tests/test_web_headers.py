"""What the web pages tell browsers and caches, walked as an attacker would:
which pages a shared cache or the back button may keep, which addresses a
page's own requests pass on in their Referer, and what the error pages say."""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checks.notify import emails
from monitors.models import Membership
from teams.models import Invitation
from tests import notifying
from tests.test_dashboard_views import make_monitor

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@acme.test", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def mail_to_log(settings):
    settings.MAILERS = {
        "default": {"BACKEND": "config.mail.EmailBackend", "OPTIONS": {}}
    }


def path_of(link: str) -> str:
    return "/" + link.split("://", 1)[1].split("/", 1)[1]


def never_stored(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


# ------------------------------------------------------------------ caching


def test_a_monitors_page_showing_its_feed_link_is_never_stored(signed_in, team):
    monitor = make_monitor(team)

    response = signed_in.get(monitor.get_absolute_url())

    assert monitor.feed_token in response.content.decode()  # the feed's credential
    assert never_stored(response)


def test_the_team_page_showing_an_invitation_link_is_never_stored(
    signed_in, team, mail_to_log
):
    response = signed_in.post(
        reverse("team-invite"), {"email": "sam@example.com", "role": "editor"},
        follow=True,
    )  # fmt: skip

    assert "Give them this link yourself" in response.content.decode()
    assert never_stored(response)


@pytest.mark.parametrize(
    "name",
    ["monitor-list", "team-members", "team-history", "team-activity", "channels",
     "api-keys", "two-factor", "password_change", "export"],
)  # fmt: skip
def test_no_signed_in_page_may_be_kept_by_a_cache_or_the_back_button(signed_in, name):
    response = signed_in.get(reverse(name))

    assert response.status_code == 200
    assert never_stored(response), name


def test_an_invitation_link_page_is_never_stored(client, team, owner):
    _, token = Invitation.issue(
        team, "sam@example.com", Membership.Role.EDITOR, owner, timezone.now()
    )

    response = client.get(reverse("invitation-accept", args=[token]))

    assert response.status_code == 200
    assert never_stored(response)


def test_error_pages_are_never_stored(signed_in):
    assert never_stored(signed_in.get("/no-such-page/"))


def test_static_files_keep_their_own_caching(client):
    response = client.get("/static/css/app.css")

    assert response.status_code == 200
    assert not never_stored(response)


# ------------------------------------------------------------------ referrer


def external_recipient(team):
    email = {"enabled": True, "recipients": ["ext@partner.test"]}
    monitor = notifying.make_monitor(team, email=email)
    return monitor.email_recipients.get()


def test_pages_at_a_link_holding_its_credential_pass_on_only_the_sites_origin(
    client, team, owner
):
    """Their own stylesheet, script and icon requests (and the next page's)
    would carry the token in their Referer into a proxy's or a CDN's logs."""
    _, invitation = Invitation.issue(
        team, "sam@example.com", Membership.Role.EDITOR, owner, timezone.now()
    )
    recipient = external_recipient(team)
    links = [
        reverse("invitation-accept", args=[invitation]),
        path_of(emails.confirm_url(recipient)),
        path_of(emails.unsubscribe_url(recipient)),
        reverse("team-feed", args=[team.feed_token]),
        # The invitation's "sign in first" link brings its token along.
        reverse("login") + "?next=" + reverse("invitation-accept", args=[invitation]),
    ]

    for link in links:
        response = client.get(link)
        assert response.status_code == 200, link
        assert response["Referrer-Policy"] == "strict-origin", link


def test_ordinary_pages_keep_their_referrer_to_the_site_alone(signed_in):
    for response in (signed_in.get("/"), signed_in.get(reverse("login"))):
        assert response["Referrer-Policy"] == "same-origin"


# ------------------------------------------------------------------ error pages


def words_of(response) -> str:
    return html.unescape(response.content.decode())


def test_a_form_sent_without_its_token_is_refused_in_plain_words(owner, team):
    """A form left open from before signing out (or in) comes back refused;
    the page says what to do in words, not "CSRF verification failed"."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    response = browser.post(reverse("team-time-zone"), {"time_zone": "Asia/Tokyo"})

    assert response.status_code == 403
    page = words_of(response)
    assert "This form could not be sent" in page
    assert "reload the page" in page and "Nothing was changed" in page
    assert "CSRF" not in page and "Referer" not in page
    assert response["Content-Security-Policy"]
    assert never_stored(response)
    team.refresh_from_db()
    assert team.time_zone != "Asia/Tokyo"


def test_an_htmx_form_sent_with_a_stale_token_is_marked_as_out_of_date(owner, team):
    """Signing in again in another tab renews the token; a form still open on
    the old page is refused, and the answer says so in a header, so the page's
    script can tell "reload the page" apart from "you may not do this"."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    browser.get("/")
    stale = browser.cookies["csrftoken"].value
    browser.cookies["csrftoken"] = "r" * 32  # the other tab's sign-in renewed it

    response = browser.post(
        reverse("team-time-zone"),
        {"time_zone": "Asia/Tokyo"},
        headers={"HX-Request": "true", "X-CSRFToken": stale},
    )

    assert response.status_code == 403
    assert response["Pagewatch-Refused"] == "stale-form"
    assert "This form could not be sent" in words_of(response)
    team.refresh_from_db()
    assert team.time_zone != "Asia/Tokyo"


def test_a_refusal_for_the_callers_role_is_not_marked_as_out_of_date(
    client, team, django_user_model
):
    viewer = django_user_model.objects.create_user("vic", "vic@acme.test", "pw")
    Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
    client.force_login(viewer)

    response = client.post(
        reverse("team-time-zone"),
        {"time_zone": "Asia/Tokyo"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 403
    assert "Pagewatch-Refused" not in response


def test_the_sign_in_form_without_its_cookie_says_to_allow_cookies(owner):
    response = Client(enforce_csrf_checks=True).post(
        reverse("login"), {"username": "olive", "password": "pw"}
    )

    assert response.status_code == 403
    page = words_of(response)
    assert "This form could not be sent" in page and "cookies" in page
    assert "CSRF" not in page and "_auth_user_id" not in Client().session


def test_a_malformed_request_gets_the_sites_page_in_plain_words(client):
    response = client.get("/?q=%00")

    assert response.status_code == 400
    page = words_of(response)
    assert "Pagewatch could not understand that request" in page
    assert "Nothing was changed" in page


def test_a_request_for_another_host_gets_the_same_plain_page(client):
    response = client.get("/", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert "Pagewatch could not understand that request" in words_of(response)
    assert "evil.example" not in words_of(response)


def test_a_refused_admin_page_says_so_in_plain_words(client, django_user_model):
    staff = django_user_model.objects.create_user("sid", "sid@acme.test", "pw")
    staff.is_staff = True
    staff.save()
    client.force_login(staff)

    response = client.get("/admin/monitors/monitor/")

    assert response.status_code == 403
    page = words_of(response)
    assert "You cannot open this page" in page
    assert "Nothing was changed" in page
