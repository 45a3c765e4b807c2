"""The links that carry their own credential (unsubscribing, invitations),
opened in a real browser: nothing the page asks for afterwards names the
token in its Referer, and the page's button still works under the policy
that keeps it out (its POST carries an Origin that Django's CSRF check
accepts)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from checks.notify import emails
from monitors.models import Membership
from teams.models import Invitation
from tests import notifying
from tests.browser.people import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def watch_requests(page: Any) -> list[dict[str, str]]:
    """Every request the page makes (documents, stylesheets, scripts, icons,
    form posts), with the headers the browser sent."""
    seen: list[dict[str, str]] = []
    page.on("request", lambda request: seen.append(
        {"url": request.url, **request.all_headers()}
    ))  # fmt: skip
    return seen


def path_of(link: str) -> str:
    return "/" + link.split("://", 1)[1].split("/", 1)[1]


def test_unsubscribing_in_a_browser_leaks_no_token_and_still_works(
    browser_page, team, live_server
):
    email = {"enabled": True, "recipients": ["ext@partner.test"]}
    monitor = notifying.make_monitor(team, email=email)
    recipient = monitor.email_recipients.get()
    link = path_of(emails.unsubscribe_url(recipient))
    page = browser_page
    seen = watch_requests(page)

    page.goto(link)
    # Until the POST is answered: wait_for_load_state alone may answer for
    # the page already loaded, before the browser has told of the POST.
    with page.expect_response(lambda response: response.request.method == "POST"):
        page.get_by_role("button", name="Unsubscribe").click()
    page.wait_for_load_state()

    recipient.refresh_from_db()
    assert recipient.status == "unsubscribed"
    # The page (made of nothing else) and the button's POST to itself.
    [opened, post] = seen
    assert "referer" not in opened
    assert post["referer"] == live_server.url + "/"  # the origin, not the link
    assert post["origin"] == live_server.url
    assert not page.problems.csp_violations(page)


def test_joining_through_an_invitation_in_a_browser_leaks_no_token(
    browser_page, team, django_user_model
):
    owner = django_user_model.objects.create_user("olive", "olive@acme.test", "pw")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    _, token = Invitation.issue(
        team, "sam@example.com", Membership.Role.EDITOR, owner, timezone.now()
    )
    page = browser_page
    seen = watch_requests(page)

    page.goto(f"/invitations/{token}/")
    page.get_by_label("User name").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create my account and join").click()
    page.get_by_text("Welcome to Acme").wait_for()

    sam = get_user_model().objects.get(username="sam")
    assert Membership.objects.filter(team=team, user=sam).exists()
    asked_by_the_page = [r for r in seen if "referer" in r]
    assert any("/static/" in r["url"] for r in asked_by_the_page)
    for request in asked_by_the_page:
        assert token not in request["referer"], request["url"]
    assert not page.problems.csp_violations(page)
