"""The invitation journey in real Chromium: an owner invites someone from the
team page, the invitee opens the e-mailed link in their own browser, sets a
password and lands in the team with the role they were given."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from monitors.models import ApiKey, Membership
from teams.models import Invitation
from tests.browser.people import sign_in
from tests.browser.test_layout_browser import (
    assert_labels_beside_values,
    assert_no_sideways_scroll,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_invitee_joins_through_the_emailed_link(
    chromium, browser_page, live_server, member, team, screenshot, mailoutbox,
    settings,
):  # fmt: skip
    settings.PUBLIC_BASE_URL = live_server.url
    page = browser_page
    sign_in(page)
    page.get_by_role("link", name="Team").click()
    page.get_by_label("E-mail address").fill("sam@example.com")
    page.get_by_label("Role", exact=True).select_option("viewer")
    page.get_by_role("button", name="Send invitation").click()
    page.get_by_text("Invitation sent to sam@example.com.").wait_for()
    screenshot(page, "team-invitation-pending")
    assert page.get_by_role("cell", name="sam@example.com", exact=True).is_visible()

    [message] = mailoutbox
    link = re.search(r"http://\S+/invitations/\S+/", message.body).group(0)
    invitee = chromium.new_context(
        base_url=live_server.url, viewport={"width": 390, "height": 844}
    ).new_page()
    invitee.goto(link)
    invitee.get_by_text(
        "invited sam@example.com to the team Acme as a viewer"
    ).wait_for()
    invitee.get_by_label("User name").fill("sam")
    invitee.get_by_label("Password").fill("a-long-enough-passphrase-7")
    screenshot(invitee, "team-invitation-accept")
    invitee.get_by_role("button", name="Create my account and join").click()
    invitee.get_by_text("Welcome to Acme: you are a viewer here.").wait_for()
    screenshot(invitee, "team-invitation-joined")
    # A viewer: no button to make a monitor.
    assert invitee.get_by_role("link", name="New monitor").count() == 0

    sam = get_user_model().objects.get(username="sam")
    assert Membership.objects.get(user=sam, team=team).role == "viewer"
    invitee.goto(link)
    assert invitee.get_by_text("This invitation has already been used.").is_visible()
    invitee.context.close()

    # The owner's Activity page tells the story.
    page.get_by_role("link", name="Activity", exact=True).click()
    page.get_by_text("Invited sam@example.com as a viewer").wait_for()
    assert page.get_by_text("Joined as a viewer").is_visible()
    screenshot(page, "team-activity")
    assert page.problems.csp_violations(page) == []


def test_an_expired_invitation_is_sent_again_from_a_phone(
    browser_page, live_server, member, team, screenshot, mailoutbox, settings
):
    settings.PUBLIC_BASE_URL = live_server.url
    eight_days_ago = timezone.now() - timedelta(days=8)
    invitation, _ = Invitation.issue(team, "sam@example.com", "viewer", member,
                                     eight_days_ago)  # fmt: skip
    Invitation.objects.filter(pk=invitation.pk).update(created_at=eight_days_ago)
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page)
    page.goto("/settings/team/")

    expired = page.locator("#expired-invitations")
    expired.get_by_text("Expired on").wait_for()
    assert_no_sideways_scroll(page, "the team page")
    assert_labels_beside_values(page, "#expired-invitations table")
    assert expired.get_by_role("button", name="Remove from the list").is_visible()
    screenshot(page, "team-invitation-expired-phone")
    expired.get_by_role("button", name="Invite again").click()

    page.get_by_text("Invitation sent again to sam@example.com.").wait_for()
    assert page.locator("#expired-invitations").count() == 0
    waiting = page.locator('#invitations td[data-label="E-mail"]')
    assert waiting.all_inner_texts() == ["sam@example.com"]
    screenshot(page, "team-invitation-sent-again-phone")
    [message] = mailoutbox
    assert message.to == ["sam@example.com"]
    assert page.problems.csp_violations(page) == []


@pytest.fixture
def eddie(team, django_user_model):
    """An editor with a key that can change monitors and one that only reads."""
    user = django_user_model.objects.create_user(
        "eddie", "eddie@example.com", first_name="Eddie", last_name="Berg"
    )
    membership = Membership.objects.create(
        team=team, user=user, role=Membership.Role.EDITOR
    )
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=user)
    ApiKey.issue(team, name="eddie's reports", created_by=user,
                 scope=ApiKey.Scope.READ)  # fmt: skip
    return membership


def working_write_keys(membership: Membership) -> int:
    return (
        ApiKey.objects.active()
        .filter(created_by=membership.user, scope=ApiKey.Scope.WRITE)
        .count()
    )


def test_making_someone_a_viewer_asks_first_in_their_row(
    browser_page, live_server, member, team, eddie, screenshot
):
    page = browser_page
    sign_in(page)
    page.goto("/settings/team/")

    page.get_by_label("Role of eddie").select_option("viewer")
    page.get_by_role("button", name="Change the role of eddie").click()

    question = page.get_by_role("group", name="Make Eddie Berg a viewer?")
    question.wait_for()
    # Asked in the member's row, on the same page, nothing done yet.
    assert page.url.endswith("/settings/team/")
    assert question.get_by_text(
        "The API key Eddie Berg made that can change monitors stops working at once"
    ).is_visible()
    confirm = question.get_by_role("button", name="Make Eddie Berg a viewer")
    assert confirm.evaluate("button => button === document.activeElement")
    assert question.get_by_role("link", name="Keep them as an editor").is_visible()
    screenshot(page, "team-role-question")
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.EDITOR
    assert working_write_keys(eddie) == 1

    confirm.click()

    page.get_by_text(
        "eddie is now a viewer. The API key they made that can change monitors "
        "no longer works."
    ).wait_for()
    assert page.get_by_label("Role of eddie").input_value() == "viewer"
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.VIEWER
    assert working_write_keys(eddie) == 0

    # The team's only owner stepping down is refused, not asked.
    page.get_by_label("Role of olive").select_option("viewer")
    page.get_by_role("button", name="Change the role of olive").click()
    page.get_by_text("A team always keeps at least one owner").wait_for()
    assert page.get_by_label("Role of olive").input_value() == "owner"
    assert page.problems.csp_violations(page) == []


def test_without_javascript_the_question_is_a_page_of_its_own(
    chromium, live_server, member, team, eddie, screenshot, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    page = context.new_page()
    sign_in(page)
    page.goto("/settings/team/")

    page.get_by_label("Role of eddie").select_option("viewer")
    page.get_by_role("button", name="Change the role of eddie").click()

    page.get_by_role("heading", name="Make Eddie Berg a viewer?").wait_for()
    screenshot(page, "team-role-question-no-javascript")
    page.get_by_role("link", name="Keep them as an editor").click()
    page.wait_for_url(re.compile(r"/settings/team/$"))
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.EDITOR
    assert working_write_keys(eddie) == 1

    page.get_by_label("Role of eddie").select_option("viewer")
    page.get_by_role("button", name="Change the role of eddie").click()
    page.get_by_role("button", name="Make Eddie Berg a viewer").click()

    page.get_by_text("eddie is now a viewer.").wait_for()
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.VIEWER
    assert working_write_keys(eddie) == 0
    context.close()


def test_an_owner_sets_the_teams_time_zone_for_its_digests(
    browser_page, live_server, member, team, screenshot
):
    page = browser_page
    sign_in(page)
    page.get_by_role("link", name="Team").click()
    zone = page.get_by_role("combobox", name="Time zone")
    zone.fill("Berlin")
    page.locator("#time-zone").get_by_role("button", name="Save").click()
    page.get_by_text("did you mean Europe/Berlin?").wait_for()
    zone = page.get_by_role("combobox", name="Time zone")
    assert zone.get_attribute("aria-invalid") == "true"

    zone.fill("Europe/Berlin")
    page.locator("#time-zone").get_by_role("button", name="Save").click()
    page.get_by_text("Digests now keep their time of day in Europe/Berlin.").wait_for()
    screenshot(page, "team-time-zone")
    team.refresh_from_db()
    assert team.time_zone == "Europe/Berlin"

    # The channel form names the zone its digest time is in.
    page.goto("/channels/new/?kind=webhook")
    page.get_by_label("Send").select_option("daily")
    assert page.get_by_label("Digest time (Europe/Berlin)").is_visible()
    assert page.problems.csp_violations(page) == []


def test_a_new_monitor_starts_in_the_teams_zone_not_the_browsers(
    chromium, live_server, member, team, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    team.time_zone = "America/New_York"
    team.save(update_fields=["time_zone"])
    context = chromium.new_context(base_url=live_server.url, timezone_id="Asia/Tokyo")
    context.set_default_timeout(10_000)
    page = context.new_page()
    sign_in(page)
    page.goto("/monitors/new/")
    zone = page.locator("#id_timezone")
    # app.js would have swapped in the browser's zone by the page's load.
    page.wait_for_load_state("networkidle")
    assert zone.input_value() == "America/New_York"
    page.locator("#id_schedule").fill("daily at 9am")
    page.get_by_text("America/New_York time").wait_for()

    # History reads on the team's clock too, and says so in its picker.
    page.goto("/history/")
    assert page.get_by_label("Times shown in").input_value() == "America/New_York"
    context.close()


def test_someone_with_an_account_signs_in_from_the_link_and_joins(
    chromium, browser_page, live_server, member, team, other_team, screenshot,
    mailoutbox, settings, django_user_model,
):  # fmt: skip
    from tests.browser.people import PASSWORD

    settings.PUBLIC_BASE_URL = live_server.url
    sam = django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)
    Membership.objects.create(team=other_team, user=sam, role="owner")
    page = browser_page
    sign_in(page)
    page.get_by_role("link", name="Team").click()
    page.get_by_label("E-mail address").fill("Sam@Example.com")
    page.get_by_role("button", name="Send invitation").click()
    page.get_by_text("Invitation sent to sam@example.com.").wait_for()
    link = re.search(r"http://\S+/invitations/\S+/", mailoutbox[-1].body).group(0)

    invitee = chromium.new_context(base_url=live_server.url).new_page()
    invitee.goto(link)
    invitee.get_by_text("An account with this e-mail address exists.").wait_for()
    # Only the way in they have: no form for a second account.
    assert invitee.get_by_label("User name").count() == 0
    screenshot(invitee, "team-invitation-existing-account")
    invitee.get_by_role("link", name="Sign in").click()
    invitee.get_by_label("User name").fill("sam")
    invitee.get_by_label("Password").fill(PASSWORD)
    invitee.get_by_role("button", name="Sign in").click()
    invitee.get_by_role("button", name="Join Acme as sam").click()
    invitee.get_by_text("Welcome to Acme: you are an editor here.").wait_for()
    invitee.context.close()

    assert Membership.objects.get(user=sam, team=team).role == "editor"
    assert Membership.objects.get(user=sam, team=other_team).role == "owner"
    page.get_by_role("link", name="Activity", exact=True).click()
    page.get_by_text("Joined as an editor").wait_for()
    assert page.problems.csp_violations(page) == []


def test_an_invitation_no_e_mail_carries_is_shown_as_a_warning_with_its_link(
    browser_page, member, settings, screenshot
):
    """On a server that writes e-mail to its log, the owner must pass the
    link on: the message said so in the green of "done"."""
    settings.MAILERS = {
        "default": {"BACKEND": "config.mail.EmailBackend", "OPTIONS": {}}
    }
    page = browser_page
    sign_in(page)
    page.get_by_role("link", name="Team").click()
    page.get_by_label("E-mail address").fill("sam@example.com")
    page.get_by_role("button", name="Send invitation").click()

    said = page.locator(".messages .message", has_text="Give them this link yourself")
    said.wait_for()
    screenshot(page, "team-invitation-not-mailed")
    assert "/invitations/" in said.inner_text()
    colour = said.evaluate("(el) => getComputedStyle(el).backgroundColor")
    warn = page.evaluate(
        """() => {
          const probe = document.createElement('div');
          probe.className = 'callout warn';
          document.body.append(probe);
          const colour = getComputedStyle(probe).backgroundColor;
          probe.remove();
          return colour;
        }"""
    )
    assert colour == warn
